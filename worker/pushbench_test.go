//go:build benchstack

package worker_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestPushBench is issue 13's done-when at length (`make bench-push`): two
// minutes of arrivals over 40 agents, polling alone against push with 20%
// of pushes dropped, some duplicated, reordered and replayed, and a
// rollback + re-apply, in one run; it prints the figures docs/benchmarks.md
// quotes and holds them to the bounds.
func TestPushBench(t *testing.T) {
	f := measurePush(t, pushRun{Seed: 13, Agents: 40, Arrivals: 2 * time.Minute, HotEvery: 2 * time.Second,
		Floor: 30 * time.Second, Drop: 0.2, Settle: 2 * time.Minute})
	t.Logf("figures: %s", f)
	require.Equal(t, f.Expected, f.PushRows, "100% of the world's swaps in the push ledger")
	require.Equal(t, f.Expected, f.PollingRows, "100% of the world's swaps in the polling ledger")
	require.LessOrEqual(t, f.LatencyP99, 10*time.Second, "push-delivered swaps in Postgres within 10 s p99")
	require.GreaterOrEqual(t, f.Reduction(), 0.5, "polling's Hiro requests drop by half or more")
}
