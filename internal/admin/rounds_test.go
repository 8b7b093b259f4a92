package admin_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/operate"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/internal/testenv"
)

// PUT /api/admin/rounds/{id} adds (201) and changes (200) a round,
// audited with its actor; bad input is a 400 naming the field, and a
// finalized round is a 409, left as it is (SPEC §13).
func TestRoundsThroughTheAdminAPI(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	a := newAPI(t, &operate.Service{Store: st})
	body := map[string]any{"startsAt": "2026-05-13T00:00:00Z", "endsAt": "2026-05-20T00:00:00Z"}
	var e struct{ Error string }
	for _, tc := range []struct {
		path      string
		body      map[string]any
		wantError string
	}{
		{"rounds/Week-1", body, "id:"},
		{"rounds/week-1", map[string]any{"startsAt": "2026-05-13T00:00:00Z", "endsAt": "2026-05-12T00:00:00Z"}, "endsAt:"},
		{"rounds/week-1", map[string]any{"startsAt": "2026-05-13T00:00:00Z"}, "endsAt: required"},
		{"rounds/week-1", map[string]any{"startsAt": "2026-05-13T00:00:00Z", "endsAt": "2026-05-20T00:00:00Z", "minVolumeUsd": -1}, "minVolumeUsd:"},
		{"rounds/week-1", map[string]any{"startsAt": "2026-05-13T00:00:00Z", "endsAt": "2026-05-20T00:00:00Z", "minPricedTradeCount": -1}, "minPricedTradeCount:"},
		{"rounds/week-1", map[string]any{"startsAt": "2026-05-13T00:00:00Z", "endsAt": "2026-05-20T00:00:00Z", "grace": "soon"}, "grace:"},
		{"rounds/week-1", map[string]any{"startsAt": "2026-05-13T00:00:00Z", "endsAt": "2026-05-20T00:00:00Z", "extra": 1}, "unknown field"},
	} {
		a.do("PUT", tc.path, tc.body, 400, &e)
		require.Contains(t, e.Error, tc.wantError)
	}
	var out struct {
		Round   store.Round `json:"round"`
		Created bool        `json:"created"`
	}
	// Subscribers may ask for the round.finalized event (SPEC §10.2).
	a.do("POST", "subscribers", map[string]any{"url": "https://x.example/", "events": []string{"round.finalized"}}, 201, nil)
	a.do("POST", "subscribers", map[string]any{"url": "https://x.example/", "events": []string{"round.final"}}, 400, &e)
	require.Contains(t, e.Error, "events")

	a.do("PUT", "rounds/week-1", body, 201, &out)
	require.True(t, out.Created)
	require.Equal(t, 50.0, out.Round.MinVolumeUSD)
	require.Equal(t, 3, out.Round.MinPricedTradeCount)
	a.do("PUT", "rounds/week-1", map[string]any{"startsAt": "2026-05-13T00:00:00Z", "endsAt": "2026-05-20T00:00:00Z",
		"grace": "2h", "minVolumeUsd": 0, "minPricedTradeCount": 0}, 200, &out)
	require.False(t, out.Created)
	require.Zero(t, out.Round.MinVolumeUSD)
	require.Equal(t, "2026-05-20T02:00:00Z", out.Round.GraceEndsAt.Format("2006-01-02T15:04:05Z07:00"))
	var audits int
	require.NoError(t, st.Pool().QueryRow(t.Context(), `select count(*) from audit_log where actor = 'alice' and action = 'round.put'`).Scan(&audits))
	require.Equal(t, 2, audits)

	_, err := st.FinalizeRound(t.Context(), "week-1", func(store.FinalizeInputs) (store.FinalizeOutcome, error) {
		return store.FinalizeOutcome{}, nil
	})
	require.NoError(t, err)
	a.do("PUT", "rounds/week-1", body, 409, &e)
	require.Contains(t, e.Error, "finalized")
	d, _, err := st.RoundByID(t.Context(), "week-1")
	require.NoError(t, err)
	require.Zero(t, d.Round.MinVolumeUSD, "left as it was")
}
