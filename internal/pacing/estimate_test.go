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
	b := NewBudget(BudgetConfig{})
	b.Record(firstRun())
	c.Observe(t0.Add(3*time.Second), 10, 0)
	now := t0.Add(time.Minute)
	st := StatusOf(now, c, b, 3*time.Second, DefaultCost())
	require.Equal(t, 53, st.Batch)
	require.Equal(t, "5m0s", st.Interval)
	require.Equal(t, "0s", st.CooldownRemaining)
	require.Equal(t, ZoneWarmup, st.Zone, "nothing decided yet")
	require.Equal(t, 10, st.Samples)
	require.InDelta(t, 0.72, st.SuccessLow, 0.01)
	require.InDelta(t, 2.0, st.CompletionsPerMinute, 1e-9)
	// The month paces the task, not its 5-minute interval: about 333
	// requests a day, ten a run.
	require.InDelta(t, 33.3, st.RunsPerDay, 0.1)
	require.InDelta(t, 333, st.ProjectedPerDay, 1)
	require.InDelta(t, 33.3*2, st.ActionsPerDay, 0.5)
	require.Equal(t, 10, st.Budget.RequestsPerDay)
	raw, err := json.Marshal(st)
	require.NoError(t, err)
	require.Contains(t, string(raw), `"interval":"5m0s"`)

	// Without a budget the interval alone sets the pace.
	st = StatusOf(now, c, nil, 3*time.Second, DefaultCost())
	require.InDelta(t, 288, st.RunsPerDay, 1e-9)
	require.Nil(t, st.Budget)
}
