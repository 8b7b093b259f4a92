package bench

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/ingest"
)

// TestKeysAreTheDueOrder holds the simulation's precomputed order keys to
// the policy's own order (ingest.Config.Less), among agents not critical
// and among critical ones, under both policies.
func TestKeysAreTheDueOrder(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	tiers := []ingest.Tier{ingest.Hot, ingest.Warm, ingest.Cold}
	var agents []ingest.Agent
	for i := range 300 {
		a := ingest.Agent{Address: string(rune('a'+i%26)) + time.Duration(i).String(), Tier: tiers[rng.IntN(3)],
			NextRunAt: start.Add(time.Duration(rng.IntN(30)) * time.Minute)}
		if rng.IntN(5) > 0 {
			v := start.Add(-time.Duration(rng.IntN(600)) * time.Minute)
			a.LastVisitAt = &v
		}
		agents = append(agents, a)
	}
	farPast, farFuture := time.Time{}, time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, policy := range []ingest.Policy{ingest.PolicyOptimal, ingest.PolicyTiers} {
		x := &sim{cfg: ingest.DefaultConfig()}
		x.cfg.Policy = policy
		for _, tc := range []struct {
			now      time.Time
			critical bool
		}{{farPast, false}, {farFuture, true}} {
			pool := agents
			if !tc.critical {
				// Never-visited agents are critical at any time.
				pool = slices.DeleteFunc(slices.Clone(agents), func(a ingest.Agent) bool { return a.LastVisitAt == nil })
			}
			byLess := slices.Clone(pool)
			slices.SortStableFunc(byLess, func(a, b ingest.Agent) int { return cmpBy(x.cfg.Less(a, b, tc.now), x.cfg.Less(b, a, tc.now)) })
			byKey := slices.Clone(pool)
			slices.SortStableFunc(byKey, func(a, b ingest.Agent) int {
				ka, ca := x.keys(a)
				kb, cb := x.keys(b)
				if tc.critical {
					ka, kb = ca, cb
				}
				return cmpBy(ka.less(kb), kb.less(ka))
			})
			require.Equal(t, byLess, byKey, "policy %s, critical %v", policy, tc.critical)
		}
	}
}

func cmpBy(less, greater bool) int {
	switch {
	case less:
		return -1
	case greater:
		return 1
	}
	return 0
}

// TestSmallWorldGoals runs a small world for two days on the keyless
// budget: tiers and optimal find every swap, none later than
// PACER_MAX_STALENESS, the budget keeps under Hiro's limit, and optimal is
// faster than tiers.
func TestSmallWorldGoals(t *testing.T) {
	t.Parallel()
	w := NewWorld("small", 200, 7, start, start.Add(48*time.Hour))
	from, to := w.Start.Add(12*time.Hour), w.End.Add(-tail)
	b := Budgets[0]
	results := map[ingest.Policy]Result{}
	for _, p := range []ingest.Policy{ingest.PolicyTiers, ingest.PolicyOptimal} {
		r := Simulate(w, nil, b, Strategy{Name: string(p), Policy: p}, from, to)
		results[p] = r
		require.Positive(t, r.All.N, p)
		require.Zero(t, r.NeverFound, p)
		require.LessOrEqual(t, r.All.Max, ingest.DefaultMaxStaleness, p)
		require.LessOrEqual(t, r.PerDay(""), float64(b.PerMinute)*24*60, p)
		require.Zero(t, r.Refused, "%s: the budget kept under Hiro's limit", p)
	}
	require.Less(t, results[ingest.PolicyOptimal].All.Mean, results[ingest.PolicyTiers].All.Mean)
}

// TestBusyAgentLosesNothing: an agent with 400 swaps a day, far more than
// a page between visits, loses none of them in the agents mode (the old
// round robin's 25 newest did), each found within the staleness cap.
func TestBusyAgentLosesNothing(t *testing.T) {
	t.Parallel()
	w := NewWorld("busy", 1_000, 9, start, start.Add(24*time.Hour))
	busy := &w.Agents[0]
	busy.Txs = nil
	for i := range 400 {
		busy.Txs = append(busy.Txs, Tx{At: start.Add(time.Duration(i) * 3 * time.Minute), Swap: true})
	}
	opt := Simulate(w, nil, Budgets[1], Strategy{Name: "optimal", Policy: ingest.PolicyOptimal}, w.Start.Add(time.Hour), w.End.Add(-tail))
	require.Zero(t, opt.NeverFound)
	require.LessOrEqual(t, opt.All.Max, ingest.DefaultMaxStaleness)
}
