package sim

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
)

// RegistryPath serves the world's agents as the competition's registry
// does (SPEC §12): pages of registryPageSize, "next" an absolute URL, an
// ETag and 304 on If-None-Match, so that `pacer dev` registers its agents
// through PACER_REGISTRY_URL as a deployment does.
const RegistryPath = "/registry/agents"

const registryPageSize = 100

type registryAgent struct {
	STXAddress     string  `json:"stxAddress"`
	BTCAddress     *string `json:"btcAddress"`
	DisplayName    *string `json:"displayName"`
	ERC8004AgentID *int64  `json:"erc8004AgentId"`
	ClaimStatus    *string `json:"claimStatus"`
}

type registryPage struct {
	Agents []registryAgent `json:"agents"`
	Next   *string         `json:"next"`
}

func (s *Server) registry(w http.ResponseWriter, r *http.Request) {
	page, err := queryInt(r.URL.Query(), "page", 0)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	agents := s.hiro.world.Agents()
	out := registryPage{Agents: []registryAgent{}}
	for i := page * registryPageSize; i < len(agents) && i < (page+1)*registryPageSize; i++ {
		a := agents[i]
		ra := registryAgent{STXAddress: a.STXAddress, ERC8004AgentID: a.ERC8004AgentID}
		if a.BTCAddress != "" {
			ra.BTCAddress = &a.BTCAddress
		}
		if a.DisplayName != "" {
			ra.DisplayName = &a.DisplayName
		}
		if a.ClaimStatus != "" && a.BTCAddress != "" {
			ra.ClaimStatus = &a.ClaimStatus
		}
		out.Agents = append(out.Agents, ra)
	}
	if (page+1)*registryPageSize < len(agents) {
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		next := scheme + "://" + r.Host + RegistryPath + "?page=" + strconv.Itoa(page+1)
		out.Next = &next
	}
	body, err := json.Marshal(out)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "encode")
		return
	}
	sum := sha256.Sum256(body)
	etag := `"` + hex.EncodeToString(sum[:8]) + `"`
	w.Header().Set("ETag", etag)
	if strings.Contains(r.Header.Get("If-None-Match"), etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(append(body, '\n'))
}
