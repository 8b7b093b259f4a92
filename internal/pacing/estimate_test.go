package pacing

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer"
)

func TestCostHeartbeats(t *testing.T) {
	t.Parallel()
	tests := []struct {
		give time.Duration
		want int
	}{
		{give: 0, want: 0},
		{give: 95 * time.Second, want: 0},
		{give: 96 * time.Second, want: 1},
		{give: 191 * time.Second, want: 1},
		{give: 192 * time.Second, want: 2},
		{give: 10 * time.Minute, want: 6},
	}
	for _, tt := range tests {
		t.Run(tt.give.String(), func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, DefaultCost().Heartbeats(tt.give))
			require.Equal(t, tt.want+2, DefaultCost().RunActions(tt.give))
		})
	}
}

func TestCostActionsPerDay(t *testing.T) {
	t.Parallel()
	c := DefaultCost()
	// Every 5 minutes, 3-second runs: 288 × (activity + timer), and 288 × 11
	// events continue as new 1.58 times a day.
	require.InDelta(t, 288*2+288*11/2000.0, c.ActionsPerDay(288, 3*time.Second, 0), 1e-9)
	require.InDelta(t, 100+96*3+96*11/2000.0, c.ActionsPerDay(96, 2*time.Minute, 100), 1e-9)
}

func TestStatusOf(t *testing.T) {
	t.Parallel()
	c := newTestController(t, ControllerConfig{
		MinBatch: 5, MaxBatch: 53, MinInterval: pacer.Duration(5 * time.Minute), MaxInterval: pacer.Duration(6 * time.Hour),
		InitialBatch: 53, InitialInterval: pacer.Duration(5 * time.Minute),
	})
	c.Observe(t0.Add(3*time.Second), 10, 0)
	now := t0.Add(time.Minute)
	st := StatusOf(now, c, 3*time.Second, DefaultCost())
	require.Equal(t, 53, st.Batch)
	require.Equal(t, "5m0s", st.Interval)
	require.Equal(t, "0s", st.CooldownRemaining)
	require.Equal(t, ZoneWarmup, st.Zone, "nothing decided yet")
	require.Equal(t, 10, st.Samples)
	require.InDelta(t, 0.72, st.SuccessLow, 0.01)
	require.InDelta(t, 2.0, st.CompletionsPerMinute, 1e-9)
	// The interval sets the pace: 288 runs a day of 53 items, at 2
	// actions a run of 3 s.
	require.InDelta(t, 288, st.RunsPerDay, 1e-9)
	require.InDelta(t, 288*53, st.ProjectedPerDay, 1)
	require.InDelta(t, 288*2+288*11/2000.0, st.ActionsPerDay, 1e-9)
	raw, err := json.Marshal(st)
	require.NoError(t, err)
	require.Contains(t, string(raw), `"interval":"5m0s"`)
}
