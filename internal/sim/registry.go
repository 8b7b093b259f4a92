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

func (s *Server) registry(w http.ResponseWriter, r *http.Request) {
	page, err := queryInt(r.URL.Query(), "page", 0)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	agents := s.hiro.world.Agents()
	// An agent's empty fields are null, as the registry sends them.
	null := func(s string) any {
		if s == "" {
			return nil
		}
		return s
	}
	list := []doc{}
	for _, a := range agents[min(page*registryPageSize, len(agents)):min((page+1)*registryPageSize, len(agents))] {
		list = append(list, doc{"stxAddress": a.STXAddress, "btcAddress": null(a.BTCAddress), "displayName": null(a.DisplayName),
			"erc8004AgentId": a.ERC8004AgentID, "claimStatus": null(a.ClaimStatus)})
	}
	var next any
	if (page+1)*registryPageSize < len(agents) {
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		next = scheme + "://" + r.Host + RegistryPath + "?page=" + strconv.Itoa(page+1)
	}
	body, err := json.Marshal(doc{"agents": list, "next": next})
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
