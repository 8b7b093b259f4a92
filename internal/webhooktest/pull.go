package webhooktest

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/store"
)

// Pull fetches delivery id from the API at base as its subscriber would
// (GET /api/deliveries/{id} with the subscriber's pull token) and reports
// whether it came back as that delivery, carrying its period's payload.
func Pull(t testing.TB, base, id, pullToken string) bool {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, base+"/api/deliveries/"+id, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+pullToken)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false
	}
	var got store.Delivery
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&got))
	var payload struct {
		Type string `json:"type"`
		Data struct {
			PeriodStart time.Time `json:"periodStart"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal(got.Payload, &payload))
	return got.ID == id && payload.Type == "rollup."+got.Event && payload.Data.PeriodStart.Equal(got.PeriodStart)
}
