package bench

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestDiscoveryEngineFindsEverySwap: the engine through the benchmark, a
// day of 1,000 agents at 40,000 calls a day on the keyless plan: every
// swap by the tail itself, p99 within 30 s.
func TestDiscoveryEngineFindsEverySwap(t *testing.T) {
	t.Parallel()
	w := NewWorld("w", 1_000, 5, start, start.Add(24*time.Hour))
	r := SimulateTail(NewChain(w, 40_000, 5), Budgets[0], DiscoveryEngine, start.Add(time.Hour), w.End.Add(-time.Hour))
	if r.NeverFound+r.Missed > 0 || r.All.P99 > 30*time.Second {
		t.Fatalf("%+v", r)
	}
}

// TestDiscoveryEngineReadsTheListsWhenTheMonthBinds: a day of 1,000
// agents on a chain of 200,000 calls a day, on the month-capped plan. The
// feed alone costs more than the month's pace: read there, the walks give
// up and swaps are found late or never; the engine reads the allowlisted
// contracts' lists instead and finds every swap within minutes.
func TestDiscoveryEngineReadsTheListsWhenTheMonthBinds(t *testing.T) {
	t.Parallel()
	w := NewWorld("w", 1_000, 5, start, start.Add(24*time.Hour))
	c := NewChain(w, 200_000, 5)
	from, to := start.Add(3*time.Hour), w.End.Add(-time.Hour)
	r := SimulateTail(c, Budgets[2], DiscoveryEngine, from, to)
	require.Greater(t, r.OnLists, 0.9, "%+v", r)
	require.Positive(t, r.All.N)
	require.Zero(t, r.NeverFound, "%+v", r)
	require.LessOrEqual(t, r.All.P99, 5*time.Minute, "%+v", r)
	require.Nil(t, r.DryAt)

	feed := DiscoveryEngine
	feed.FeedOnly = true
	f := SimulateTail(c, Budgets[2], feed, from, to)
	require.Zero(t, f.OnLists)
	require.True(t, f.NeverFound > 0 || f.All.P99 > 5*time.Minute, "the feed fits after all: %+v", f)
}
