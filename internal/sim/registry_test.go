package sim

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/registry"
)

// TestRegistryPages reads the simulator's registry as `pacer dev` does:
// every agent once, pages of 100 linked by an absolute next, null fields
// where an agent has none, and a 304 to the first page's ETag.
func TestRegistryPages(t *testing.T) {
	t.Parallel()
	s, _ := newSim(t, Config{Seed: 5, Hiro: HiroConfig{Agents: 150}})
	var got []registry.Agent
	var etag string
	next := RegistryPath
	for pages := 0; next != ""; pages++ {
		require.Less(t, pages, 2)
		rec := get(t, s, next)
		require.Equal(t, http.StatusOK, rec.Code)
		if etag == "" {
			etag = rec.Header().Get("ETag")
		}
		var page struct {
			Agents []json.RawMessage `json:"agents"`
			Next   *string           `json:"next"`
		}
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &page))
		agents, err := registry.DecodeAgents(page.Agents, true)
		require.NoError(t, err)
		got = append(got, agents...)
		next = ""
		if page.Next != nil {
			require.Equal(t, "http://example.com"+RegistryPath+"?page=1", *page.Next)
			next = RegistryPath + "?page=1"
		}
	}
	want := s.World().Agents()
	require.Len(t, got, len(want))
	for i, a := range want {
		require.Equal(t, a.STXAddress, got[i].STXAddress)
		require.Equal(t, a.BTCAddress, got[i].BTCAddress)
		require.Equal(t, a.DisplayName, got[i].DisplayName)
		require.Equal(t, a.ERC8004AgentID, got[i].ERC8004AgentID)
		if a.ClaimStatus == "" {
			require.Nil(t, got[i].ClaimStatus)
		} else {
			require.Equal(t, a.ClaimStatus, *got[i].ClaimStatus)
		}
	}
	require.Equal(t, http.StatusNotModified, get(t, s, RegistryPath, "If-None-Match", etag).Code)
	require.Equal(t, http.StatusOK, get(t, s, RegistryPath, "If-None-Match", `"other"`).Code)
}
