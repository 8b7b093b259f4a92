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
// budget: tiers and optimal find every swap, nobody waits past
// PACER_MAX_STALENESS, optimal is faster than tiers, and the round robin
// loses nothing in a world this small (the full comparison is make bench).
func TestSmallWorldGoals(t *testing.T) {
	t.Parallel()
	w := NewWorld("small", 200, 7, start, start.Add(48*time.Hour))
	from, to := w.Start.Add(12*time.Hour), w.End.Add(-tail)
	b := Budgets[0]
	results := map[string]Result{}
	for _, s := range []Strategy{{Name: "rr", Kind: KindRoundRobin}, {Name: "tiers", Kind: KindTiers}, {Name: "optimal", Kind: KindOptimal}} {
		r := Simulate(w, b, s, from, to)
		results[s.Name] = r
		require.Positive(t, r.All.N, s.Name)
		require.Zero(t, r.Missed, s.Name)
		if s.Kind != KindRoundRobin {
			require.Zero(t, r.NotFound, s.Name)
			require.LessOrEqual(t, r.MaxGap, ingest.DefaultMaxStaleness, s.Name)
			require.LessOrEqual(t, r.RequestsPerDay(), float64(b.PerMinute)*24*60, s.Name)
			require.Zero(t, r.Refused, "%s: the budget kept under Hiro's limit", s.Name)
		}
	}
	require.Less(t, results["optimal"].All.Mean, results["tiers"].All.Mean)
	require.Less(t, results["tiers"].All.Mean, results["rr"].All.Mean)
}

// TestRoundRobinLosesSwapsOfBusyAgents shows today's sweep failing where
// the issue says: an agent with more than 25 transactions between visits
// loses swaps for good; the per-agent sweep loses none.
func TestRoundRobinLosesSwapsOfBusyAgents(t *testing.T) {
	t.Parallel()
	w := NewWorld("busy", 1_000, 9, start, start.Add(24*time.Hour))
	// Make one agent very busy: 400 swaps in the day.
	busy := &w.Agents[0]
	busy.Txs = nil
	for i := range 400 {
		busy.Txs = append(busy.Txs, Tx{At: start.Add(time.Duration(i) * 3 * time.Minute), Swap: true})
	}
	from, to := w.Start.Add(time.Hour), w.End.Add(-tail)
	rr := Simulate(w, Budgets[1], Strategy{Name: "rr", Kind: KindRoundRobin}, from, to)
	opt := Simulate(w, Budgets[1], Strategy{Name: "optimal", Kind: KindOptimal}, from, to)
	require.Positive(t, rr.Missed)
	require.Zero(t, opt.Missed+opt.NotFound)
}
