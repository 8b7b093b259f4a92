package sim

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/hiro/openapi"
)

// The simulator answers as Hiro publishes it answers: every feed page,
// tx/multiple answer, transaction detail and v3 principal page of a busy
// world (forks, many-event swaps, agents trading through the allowlist)
// keeps the schema in the Stacks Blockchain API's openapi.yaml
// (internal/hiro/openapi). So the tests that hold pacer to the simulator
// hold it to Hiro's published answers, not to pacer's idea of them.
func TestSimulatorAnswersKeepHirosSchemas(t *testing.T) {
	t.Parallel()
	cfg := Config{Seed: 61, Hiro: HiroConfig{Origin: epoch, Anonymous: roomy, Activity: true,
		Features: Features{Forks: 2, ManyEvents: []int{30}, BusySwaps: 5}, Chain: ChainConfig{ForkShare: 0.05}}}
	s, clock := newSim(t, cfg)
	clock.Add(time.Hour)
	valid := func(def, path string) []byte {
		t.Helper()
		rec := get(t, s, path)
		require.Equal(t, http.StatusOK, rec.Code, "%s: %s", path, rec.Body.String())
		require.NoError(t, openapi.Validate(def, rec.Body.Bytes()), path)
		return rec.Body.Bytes()
	}

	var txids []string
	for offset := 0; offset < 500; offset += 50 {
		var page struct {
			Results []struct {
				TxID string `json:"tx_id"`
			} `json:"results"`
		}
		require.NoError(t, json.Unmarshal(valid(openapi.V1TxList, pagePath(offset)), &page))
		for _, r := range page.Results {
			txids = append(txids, r.TxID)
		}
	}
	require.NotEmpty(t, txids)
	for i := 0; i < len(txids); i += 40 {
		q := url.Values{"tx_id": txids[i:min(i+40, len(txids))], "event_limit": {"100"}}
		valid(openapi.TxMultiple, "/extended/v1/tx/multiple?"+q.Encode())
	}
	valid(openapi.TxMultiple, "/extended/v1/tx/multiple?tx_id=0x"+
		"00000000000000000000000000000000000000000000000000000000000000ab")

	w := s.World()
	swaps := w.ExpectedSwaps(clock.Now())
	require.NotEmpty(t, swaps)
	for _, sw := range swaps[:min(20, len(swaps))] {
		valid(openapi.Transaction, txPath(sw.TxID))
	}
	principals := map[string]bool{}
	for _, a := range w.Agents()[:min(10, len(w.Agents()))] {
		principals[a.STXAddress] = true
	}
	for _, p := range allowPairs()[:10] {
		principals[p.contract] = true
	}
	for p := range principals {
		var page struct {
			Cursor struct {
				Next *string `json:"next"`
			} `json:"cursor"`
		}
		require.NoError(t, json.Unmarshal(valid(openapi.V3PrincipalTransactions, v3Path(p, "?limit=50")), &page))
		if page.Cursor.Next != nil {
			valid(openapi.V3PrincipalTransactions, v3Path(p, "?limit=50&cursor="+url.QueryEscape(*page.Cursor.Next)))
		}
	}
}
