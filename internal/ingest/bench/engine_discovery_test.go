package bench

import (
	"testing"
	"time"
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
