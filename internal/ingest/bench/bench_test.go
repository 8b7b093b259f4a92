package bench

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/budget"
	"github.com/pacer-dev/pacer/internal/ingest"
	pbench "github.com/pacer-dev/pacer/internal/pacing/bench"
	simulator "github.com/pacer-dev/pacer/internal/sim"
	"github.com/pacer-dev/pacer/internal/store"
)

// TestDueSetIsTheDueOrder: the simulation's due set hands out the agents
// due at a moment in the policy's own order (ingest.Config.Less, which the
// store's query follows), critical ones first, under both policies.
func TestDueSetIsTheDueOrder(t *testing.T) {
	t.Parallel()
	now := start.Add(48 * time.Hour)
	tiers := []ingest.Tier{ingest.Hot, ingest.Warm, ingest.Cold}
	for _, policy := range []ingest.Policy{ingest.PolicyOptimal, ingest.PolicyTiers} {
		rng := rand.New(rand.NewPCG(1, 2))
		x := &sim{cfg: ingest.DefaultConfig(), w: &World{}}
		x.cfg.Policy = policy
		x.initAgents()
		var want []ingest.Agent
		for i := range 300 {
			a := &agent{}
			a.Address, a.Tier = string(rune('a'+i%26))+time.Duration(i).String(), tiers[rng.IntN(3)]
			a.NextRunAt = now.Add(-time.Duration(rng.IntN(30)) * time.Minute)
			if rng.IntN(5) > 0 { // visited, some past the staleness cap
				v := now.Add(-time.Duration(rng.IntN(600)) * time.Minute)
				a.LastVisitAt = &v
			}
			x.future.push(a)
			want = append(want, a.Agent)
		}
		x.future.push(&agent{AgentIngest: store.AgentIngest{Agent: ingest.Agent{Address: "later", NextRunAt: now.Add(time.Minute)}}})
		slices.SortFunc(want, func(a, b ingest.Agent) int { return cmpBy(x.cfg.Less(a, b, now), x.cfg.Less(b, a, now)) })
		x.promote(now)
		var got []ingest.Agent
		for a := x.next(); a != nil; a = x.next() {
			got = append(got, a.Agent)
		}
		require.Equal(t, want, got, "policy %s", policy)
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

// TestVisitCutShortGoesOn: a visit the budget cuts short keeps the scan's
// token and top, the next goes on from there and then reads what arrived
// meanwhile; every swap is found once, and the cursor ends at the newest.
func TestVisitCutShortGoesOn(t *testing.T) {
	t.Parallel()
	w := &World{Start: start, End: start.Add(24 * time.Hour), Agents: []AgentSpec{{}}}
	for i := range 150 {
		w.Agents[0].Txs = append(w.Agents[0].Txs, Tx{At: start.Add(time.Duration(i) * time.Minute), Swap: i%3 == 0})
	}
	x := &sim{w: w, cfg: ingest.DefaultConfig(), requests: map[string]int{}, bcfg: budget.Config{PerMinute: 3},
		up:    pbench.NewUpstream(pbench.Hidden{Phases: []pbench.Phase{{PerMinute: 50}}}, 50, start),
		found: [][]time.Time{make([]time.Time, 150)}, byTail: [][]bool{make([]bool, 150)}}
	x.initAgents()
	a, now := x.agents[0], start.Add(120*time.Minute) // 121 mined: three pages
	cut := false
	for range 10 {
		a.NextRunAt = now // due at every minute
		x.promote(now)
		x.visitBatch(&now, 1)
		cut = cut || a.VisitFrom != ""
		x.visited = x.visited[:0]
		x.future.push(a)
		now = now.Add(time.Minute)
	}
	require.True(t, cut, "the budget cut a visit short")
	require.Empty(t, a.VisitFrom)
	for j, tx := range w.Agents[0].Txs {
		mined := !simulator.BlockOf(tx.At).After(now.Add(-time.Minute))
		require.Equal(t, tx.Swap && mined, !x.found[0][j].IsZero(), "tx %d", j)
	}
	require.NotNil(t, a.Cursor)
}
