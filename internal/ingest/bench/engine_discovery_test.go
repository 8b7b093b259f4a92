//go:build discoveryengine

package bench

import (
	"os"
	"testing"
	"time"
)

// TestChainBenchmark prints the chain benchmark with the service's
// discovery engine: per-agent optimal against the tail at 1,000, 10,000
// and 100,000 agents (BENCH_CHAIN_SIZES=small: the first two), chain
// volumes of 10,000, 40,000 and 200,000 calls a day, on the three plans.
//
//	go test -tags discoveryengine -count=1 -timeout 60m -run TestChainBenchmark -v ./internal/ingest/bench/
func TestChainBenchmark(t *testing.T) {
	if os.Getenv("BENCH_CHAIN") == "" {
		t.Skip("set BENCH_CHAIN=1: the whole matrix takes minutes")
	}
	sizes := ChainSizes
	if os.Getenv("BENCH_CHAIN_SIZES") == "small" {
		sizes = sizes[:2]
	}
	rep := RunChain(DiscoveryEngine, ChainOptions{Sizes: sizes, Volumes: ChainVolumes, Budgets: Budgets,
		Horizon: 48 * time.Hour, PerAgent: true})
	rep.Write(os.Stdout, Budgets)
}

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
