package ingest

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

func ptr(t time.Time) *time.Time { return &t }

func TestTierOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		giveLast *time.Time
		want     Tier
	}{
		{"never swapped", nil, Cold},
		{"just now", ptr(t0), Hot},
		{"23h59m ago", ptr(t0.Add(-HotWithin + time.Minute)), Hot},
		{"exactly 24h ago", ptr(t0.Add(-HotWithin)), Warm},
		{"6 days ago", ptr(t0.Add(-6 * 24 * time.Hour)), Warm},
		{"exactly 7 days ago", ptr(t0.Add(-WarmWithin)), Cold},
		{"a month ago", ptr(t0.AddDate(0, -1, 0)), Cold},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, TierOf(tt.giveLast, t0))
		})
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	require.NoError(t, DefaultConfig().Validate())
	require.NoError(t, Config{Policy: PolicyTiers}.WithDefaults().Validate())
	tests := []struct {
		name string
		give Config
	}{
		{"unknown policy", Config{Policy: "fastest"}},
		{"hot slower than warm", Config{HotEvery: time.Hour, WarmEvery: time.Minute}},
		{"sub-second", Config{HotEvery: time.Millisecond}},
		{"staleness under two hot intervals", Config{MaxStaleness: 90 * time.Second}},
		{"reconcile floor past max-staleness", Config{ReconcileEvery: 7 * time.Hour}},
		{"sub-second reconcile floor", Config{ReconcileEvery: time.Millisecond}},
		{"negative reconcile floor", Config{ReconcileEvery: -time.Minute}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.ErrorIs(t, tt.give.WithDefaults().Validate(), ErrInvalidConfig)
		})
	}
	_, err := ParsePolicy("Tiers ")
	require.NoError(t, err)
	_, err = ParseTier("lukewarm")
	require.ErrorIs(t, err, ErrInvalidConfig)
}

func TestTiersIntervalsAndBackoff(t *testing.T) {
	t.Parallel()
	c := Config{Policy: PolicyTiers}.WithDefaults()
	tests := []struct {
		name       string
		giveLast   *time.Time
		giveErrors int
		want       time.Duration
	}{
		{"hot", ptr(t0.Add(-time.Hour)), 0, time.Minute},
		{"warm", ptr(t0.Add(-48 * time.Hour)), 0, 15 * time.Minute},
		{"cold", nil, 0, time.Hour},
		{"hot, 1 error", ptr(t0.Add(-time.Hour)), 1, 2 * time.Minute},
		{"hot, 3 errors", ptr(t0.Add(-time.Hour)), 3, 8 * time.Minute},
		{"hot, 10 errors: capped at 1h", ptr(t0.Add(-time.Hour)), 10, time.Hour},
		{"warm, 2 errors", ptr(t0.Add(-48 * time.Hour)), 2, time.Hour},
		{"cold, 5 errors: its own interval is the cap", nil, 5, time.Hour},
		{"hot, 1000 errors: no overflow", ptr(t0.Add(-time.Hour)), 1000, time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := Agent{LastSwapAt: tt.giveLast}
			got := c.Backoff(c.Interval(a, t0, Allocation{}), tt.giveErrors)
			require.Equal(t, tt.want, got)
		})
	}

	// A cold interval beyond the staleness cap is held under MaxStaleness.
	long := Config{Policy: PolicyTiers, ColdEvery: 12 * time.Hour}.WithDefaults()
	require.Equal(t, long.StalenessCap(), long.Interval(Agent{}, t0, Allocation{}))
	require.Less(t, long.StalenessCap(), long.MaxStaleness)
	require.Equal(t, long.StalenessCap(), long.Backoff(long.StalenessCap(), 4))
}

// TestReconcileFloor holds both policies to the floor while push is on:
// no interval under ReconcileEvery however busy the agent or large the
// budget, slower intervals untouched, the floor itself under the
// staleness cap, and the hint's due-now order unchanged.
func TestReconcileFloor(t *testing.T) {
	t.Parallel()
	const floor = 10 * time.Minute
	rates := []float64{0, 0.01, 0.5, 3, 40, 400}
	for _, policy := range []Policy{PolicyOptimal, PolicyTiers} {
		t.Run(string(policy), func(t *testing.T) {
			off := Config{Policy: policy}.WithDefaults()
			on := off
			on.ReconcileEvery = floor
			require.NoError(t, on.Validate())
			require.Equal(t, floor, on.Fastest())
			require.Equal(t, off.HotEvery, off.Fastest())
			for _, budget := range []float64{1e9, 2000, 200} {
				aOff, aOn := off.Allocate(rates, budget), on.Allocate(rates, budget)
				for _, r := range rates {
					for _, last := range []*time.Time{nil, ptr(t0.Add(-time.Hour)), ptr(t0.Add(-48 * time.Hour))} {
						a := Agent{SwapRate: r, LastSwapAt: last}
						got, was := on.Interval(a, t0, aOn), off.Interval(a, t0, aOff)
						require.GreaterOrEqual(t, got, floor, "rate %v budget %v", r, budget)
						require.LessOrEqual(t, got, on.StalenessCap())
						if was >= floor && budget >= 1e9 {
							require.Equal(t, was, got, "a slower interval is left alone")
						}
					}
				}
			}
			// Busy and plentiful: the floor exactly, where polling alone
			// would visit every HotEvery.
			hot := Agent{SwapRate: 400, LastSwapAt: ptr(t0.Add(-time.Minute))}
			require.Equal(t, off.HotEvery, off.Interval(hot, t0, off.Allocate(rates, 1e9)))
			require.Equal(t, floor, on.Interval(hot, t0, on.Allocate(rates, 1e9)))
			// A visit schedules the next one at the floor at the soonest.
			after := on.AfterVisit(hot, Visit{At: t0, Complete: true}, on.Allocate(rates, 1e9))
			require.Equal(t, t0.Add(floor), after.NextRunAt)
			// A hinted agent (due now) still comes before one due later.
			hinted, later := after, after
			hinted.Address, hinted.NextRunAt = "a-hinted", t0
			later.Address = "b-later"
			require.True(t, on.Less(hinted, later, t0))
		})
	}

	// A floor at or past the staleness cap is the cap: the floor never
	// makes an agent wait past MaxStaleness.
	c := Config{ReconcileEvery: DefaultMaxStaleness}.WithDefaults()
	require.NoError(t, c.Validate())
	require.Equal(t, c.StalenessCap(), c.Fastest())
	require.Equal(t, c.StalenessCap(), c.Interval(Agent{SwapRate: 400}, t0, c.Allocate(rates, 1e9)))
}

// spend is what an allocation costs, in visits a day.
func spend(c Config, rates []float64, a Allocation) float64 {
	total := 0.0
	for _, r := range rates {
		total += perDay(c.Interval(Agent{SwapRate: r}, t0, a))
	}
	return total
}

func TestAllocateSpendsTheBudgetAndFollowsTheSquareRoot(t *testing.T) {
	t.Parallel()
	c := DefaultConfig()
	rng := rand.New(rand.NewPCG(1, 2))
	rates := make([]float64, 1000)
	for i := range rates {
		rates[i] = math.Exp(rng.Float64()*8 - 4) // 0.02 to 55 a day
	}
	floor, ceiling := float64(len(rates))*perDay(c.StalenessCap()), float64(len(rates))*perDay(c.HotEvery)

	for _, budget := range []float64{floor * 1.01, floor * 2, floor * 10, ceiling / 2} {
		a := c.Allocate(rates, budget)
		require.False(t, a.Short)
		// Intervals under 20 minutes are rounded to the minute grid.
		require.InEpsilon(t, budget, spend(c, rates, a), 0.05, "budget %f", budget)
		// Unclamped agents get visits in proportion to the square root of
		// their smoothed rate.
		checked := 0
		for i, r := range rates {
			d := c.Interval(Agent{SwapRate: r}, t0, a)
			if d > 20*c.HotEvery && d < c.StalenessCap() {
				require.InEpsilon(t, a.Scale*math.Sqrt(a.Prior.Smooth(r)), perDay(d), 1e-6, "agent %d", i)
				checked++
			}
		}
		if budget < ceiling/4 {
			require.Positive(t, checked)
		}
	}

	// Budgets below the floor or above the ceiling.
	require.True(t, c.Allocate(rates, floor*0.9).Short)
	require.True(t, math.IsInf(c.Allocate(rates, ceiling*2).Scale, 1))
	require.Equal(t, c.HotEvery, c.Interval(Agent{SwapRate: 0.001}, t0, c.Allocate(rates, ceiling*2)))
	require.True(t, math.IsInf(c.Allocate(nil, 1).Scale, 1))

	// A smaller budget lowers every agent's rate (or leaves it clamped).
	big, small := c.Allocate(rates, floor*10), c.Allocate(rates, floor*3)
	require.Less(t, small.Scale, big.Scale)
	for _, r := range rates {
		require.GreaterOrEqual(t, c.Interval(Agent{SwapRate: r}, t0, small), c.Interval(Agent{SwapRate: r}, t0, big))
	}
}

// TestSquareRootBeatsOtherSplits checks the derivation numerically: at
// equal cost, the square-root split has a smaller expected delay than
// splitting in proportion to the rate or equally.
func TestFitPrior(t *testing.T) {
	t.Parallel()
	// The same rate everywhere: no spread beyond noise, nothing to smooth.
	same := []float64{2, 2, 2, 2}
	p := FitPrior(same)
	require.Equal(t, Prior{}, p)
	require.Equal(t, 2.0, p.Smooth(2))

	// A few busy agents among many quiet ones, most seen never to swap:
	// the quiet ones get a small rate instead of none, the busy ones keep
	// theirs, and the prior's mean is the population's.
	var mixed []float64
	for i := range 100 {
		switch {
		case i < 5:
			mixed = append(mixed, 20+float64(i))
		case i < 20:
			mixed = append(mixed, 0.5)
		default:
			mixed = append(mixed, 0)
		}
	}
	p = FitPrior(mixed)
	mean := 0.0
	for _, r := range mixed {
		mean += r
	}
	mean /= float64(len(mixed))
	require.InEpsilon(t, mean, p.Shape/p.Scale, 1e-9)
	quiet := p.Smooth(0)
	require.Positive(t, quiet)
	require.Less(t, quiet, 0.5)
	require.InEpsilon(t, 22.0, p.Smooth(22), 0.05)
	require.Equal(t, Prior{}, FitPrior([]float64{0, 0, 0}))
}

func TestSquareRootBeatsOtherSplits(t *testing.T) {
	t.Parallel()
	rates := []float64{100, 30, 5, 1, 0.5, 0.1, 0.1, 0.05}
	budget := 200.0 // visits a day
	delay := func(f func(r float64) float64) float64 {
		total, weight := 0.0, 0.0
		for _, r := range rates {
			total += r / (2 * f(r))
			weight += r
		}
		return total / weight
	}
	sumSqrt, sum := 0.0, 0.0
	for _, r := range rates {
		sumSqrt += math.Sqrt(r)
		sum += r
	}
	optimal := delay(func(r float64) float64 { return budget * math.Sqrt(r) / sumSqrt })
	linear := delay(func(r float64) float64 { return budget * r / sum })
	equal := delay(func(float64) float64 { return budget / float64(len(rates)) })
	require.Less(t, optimal, linear)
	require.Less(t, optimal, equal)
	// D* = (Σ√λ)² / (2B) per unit time, over Σλ per swap.
	require.InEpsilon(t, sumSqrt*sumSqrt/(2*budget)/sum, optimal, 1e-9)
}

func TestLessOrdersTheDueSet(t *testing.T) {
	t.Parallel()
	now := t0
	c := DefaultConfig()
	stale := now.Add(-c.StalenessCap() - time.Minute)
	staler := stale.Add(-time.Hour)
	agents := []Agent{
		{Address: "a", Tier: Cold, NextRunAt: now.Add(-3 * time.Minute), LastVisitAt: ptr(now.Add(-time.Hour))},
		{Address: "b", Tier: Hot, NextRunAt: now.Add(-1 * time.Minute), LastVisitAt: ptr(now.Add(-time.Minute))},
		{Address: "c", Tier: Warm, NextRunAt: now.Add(-2 * time.Minute)},
		{Address: "d", Tier: Cold, NextRunAt: now.Add(-time.Minute), LastVisitAt: ptr(stale)},
		{Address: "e", Tier: Hot, NextRunAt: now.Add(-time.Minute), LastVisitAt: ptr(staler)},
		{Address: "f", Tier: Hot, NextRunAt: now.Add(-2 * time.Minute)},
		// Never visited, due since before the cap: critical too.
		{Address: "g", Tier: Cold, NextRunAt: staler.Add(-time.Hour)},
	}
	order := func(p Policy) string {
		c := c
		c.Policy = p
		s := slices.Clone(agents)
		slices.SortFunc(s, func(x, y Agent) int {
			switch {
			case c.Less(x, y, now):
				return -1
			case c.Less(y, x, now):
				return 1
			}
			return 0
		})
		out := ""
		for _, a := range s {
			out += a.Address
		}
		return out
	}
	// c and f were never visited: critical, waiting since they were due.
	require.Equal(t, "gedcfab", order(PolicyOptimal), "critical (longest waiting first), then earliest due, then address")
	require.Equal(t, "gedfcba", order(PolicyTiers), "critical (hot first among equal waits), then hot, warm, cold")
}

func TestAfterVisit(t *testing.T) {
	t.Parallel()
	c := DefaultConfig()
	alloc := Allocation{Scale: 300} // an interval of about 15 minutes
	a := Agent{Address: "x", NextRunAt: t0}

	// First visit finds two swaps, one an hour ago and one two days ago.
	a = c.AfterVisit(a, Visit{At: t0, Complete: true, Swaps: []time.Time{t0.Add(-time.Hour), t0.Add(-48 * time.Hour)}}, alloc)
	require.Equal(t, Hot, a.Tier)
	require.Equal(t, t0.Add(-time.Hour), *a.LastSwapAt)
	wantRate := (math.Exp(-1.0/72) + math.Exp(-48.0/72)) / 3
	require.InEpsilon(t, wantRate, a.SwapRate, 1e-9)
	require.Equal(t, t0.Add(c.Interval(a, t0, alloc)), a.NextRunAt)
	require.Zero(t, a.ErrorCount)

	// A failed visit backs off; a second one backs off further.
	at := t0.Add(10 * time.Minute)
	f1 := c.AfterVisit(a, Visit{At: at, Failed: true}, alloc)
	require.Equal(t, 1, f1.ErrorCount)
	f2 := c.AfterVisit(f1, Visit{At: at, Failed: true}, alloc)
	require.Equal(t, 2, f2.ErrorCount)
	require.Greater(t, f2.NextRunAt.Sub(at), f1.NextRunAt.Sub(at))

	// A visit cut short by the budget leaves the agent due, errors cleared.
	p := c.AfterVisit(f2, Visit{At: at}, alloc)
	require.Equal(t, at, p.NextRunAt)
	require.Zero(t, p.ErrorCount)

	// A visit cut short keeps the staleness clock running: a never-visited
	// agent keeps its due time, a visited one its last visit; the rate
	// still counts what the visit saw.
	due := t0.Add(-time.Hour)
	cut := c.AfterVisit(Agent{NextRunAt: due}, Visit{At: t0, Swaps: []time.Time{t0}}, alloc)
	require.Nil(t, cut.LastVisitAt)
	require.Equal(t, due, cut.NextRunAt)
	require.InEpsilon(t, 1.0/3, cut.RateAt(t0), 1e-9)
	hourOn := t0.Add(time.Hour)
	cut = c.AfterVisit(a, Visit{At: hourOn, Swaps: []time.Time{hourOn}}, alloc)
	require.Equal(t, t0, *cut.LastVisitAt)
	require.Equal(t, a.NextRunAt, cut.NextRunAt, "still due since it was due")
	require.InEpsilon(t, a.RateAt(hourOn)+1.0/3, cut.RateAt(hourOn), 1e-9)

	// The rate decays while the agent is quiet.
	later := c.AfterVisit(a, Visit{At: t0.Add(RateWindow), Complete: true}, alloc)
	require.InEpsilon(t, a.SwapRate/math.E, later.SwapRate, 1e-9)
	require.Equal(t, Warm, later.Tier)
}

// TestRateConverges feeds a steady agent's swaps through visits at a
// varying pace: the smoothed rate settles near the true rate.
func TestRateConverges(t *testing.T) {
	t.Parallel()
	c := DefaultConfig()
	rng := rand.New(rand.NewPCG(3, 4))
	const trueRate = 12.0 // a day
	a := Agent{Address: "steady"}
	now, next := t0, t0
	var pending []time.Time
	for now.Before(t0.Add(30 * 24 * time.Hour)) {
		// Poisson arrivals.
		next = next.Add(time.Duration(rng.ExpFloat64() / trueRate * float64(24*time.Hour)))
		for now.Before(next) {
			step := time.Duration(rng.IntN(120)+1) * time.Minute
			now = now.Add(step)
			var seen []time.Time
			for _, s := range pending {
				if !s.After(now) {
					seen = append(seen, s)
				}
			}
			pending = slices.DeleteFunc(pending, func(s time.Time) bool { return !s.After(now) })
			a = c.AfterVisit(a, Visit{At: now, Complete: true, Swaps: seen}, Allocation{Scale: 10})
		}
		pending = append(pending, next)
	}
	require.InEpsilon(t, trueRate, a.SwapRate, 0.35)
}

// With budget to spare every rate grows together: agents never seen to
// swap are not left at the staleness cap while the budget goes unused
// (issue 18: 1,000 agents, 0 requests a minute after their first visits).
func TestSpareBudgetIsSpent(t *testing.T) {
	t.Parallel()
	c := DefaultConfig()
	rates := make([]float64, 1000)
	keyed := 450.0 * 60 * 24 * Headroom
	a := c.Allocate(rates, keyed)
	got := c.Interval(Agent{}, t0, a)
	require.Less(t, got, c.StalenessCap())
	// Intervals sit on the sweep's HotEvery grid, so the plan spends the
	// budget to within a grid step.
	require.InEpsilon(t, keyed, spend(c, rates, a), 0.2, "the budget is spent, not left unused")
	// A smaller budget lowers every rate together.
	small := c.Allocate(rates, keyed/10)
	require.Greater(t, c.Interval(Agent{}, t0, small), got)
}

func TestEventsOnlyVisitsOnEventsAlone(t *testing.T) {
	t.Parallel()
	c := DefaultConfig()
	c.EventsOnly = true
	a := c.AfterVisit(Agent{Address: "a", NextRunAt: t0}, Visit{At: t0, Complete: true}, Allocation{})
	require.Equal(t, t0.Add(Dormant), a.NextRunAt, "after its history, an agent waits for an event")
	failed := c.AfterVisit(Agent{Address: "a", NextRunAt: t0}, Visit{At: t0, Failed: true}, Allocation{})
	require.Equal(t, t0.Add(2*c.HotEvery), failed.NextRunAt, "a failed visit backs off and tries again")
}

func TestAllocationsKeepASolveForItsTTL(t *testing.T) {
	t.Parallel()
	var c Allocations
	cfg := Config{Policy: PolicyOptimal}.WithDefaults()
	rates := make([]float64, 1000)
	reads := 0
	read := func(rate float64) func() (Lane, error) {
		return func() (Lane, error) { reads++; return Lane{Rates: rates, Rate: rate}, nil }
	}
	first, err := c.Get(cfg, t0, read(100_000))
	require.NoError(t, err)
	require.Equal(t, cfg.Allocate(rates, 100_000*Headroom), first)
	got, _ := c.Get(cfg, t0.Add(AllocationTTL-time.Second), read(200_000))
	require.Equal(t, first, got, "kept within the TTL")
	require.Equal(t, 1, reads)

	other := cfg
	other.HotEvery *= 2
	got, _ = c.Get(other, t0.Add(time.Second), read(300_000))
	require.Equal(t, other.Allocate(rates, 300_000*Headroom), got, "another configuration solves again")
	got, _ = c.Get(other, t0.Add(time.Second+AllocationTTL), read(400_000))
	require.Equal(t, other.Allocate(rates, 400_000*Headroom), got, "and so does the TTL's end")

	_, err = c.Get(cfg, t0.Add(time.Hour), func() (Lane, error) { return Lane{}, errors.New("no budget") })
	require.Error(t, err)
	got, _ = c.Get(other, t0.Add(time.Second+AllocationTTL), read(500_000))
	require.Equal(t, other.Allocate(rates, 400_000*Headroom), got, "a failed solve keeps nothing")
	require.Equal(t, 3, reads)
}

// The plan's share follows what the lane spent: raised while it spends
// less than Spend of its rate (intervals round up to the next run), back
// toward Headroom, and never below it, when it spends more; held while
// the plan does not bind.
func TestAllocationsPlanWhatTheLaneSpends(t *testing.T) {
	t.Parallel()
	cfg := DefaultConfig()
	rates := make([]float64, 1000)
	const rate = 450.0 * 60 * 24 // requests a day
	var c Allocations
	var taken int64
	at := t0
	step := func(spent float64) Allocation { // the lane spent spent of its rate since the last solve
		taken += int64(spent * rate * AllocationTTL.Hours() / 24)
		at = at.Add(AllocationTTL)
		a, err := c.Get(cfg, at, func() (Lane, error) { return Lane{Rates: rates, Rate: rate, Taken: taken}, nil })
		require.NoError(t, err)
		return a
	}
	first := step(0)
	require.InDelta(t, Headroom, c.share, 1e-9)
	under := step(0.75)
	require.InDelta(t, Headroom*math.Sqrt(Spend/0.75), c.share, 1e-3)
	require.Greater(t, under.Scale, first.Scale, "a lane spending less is planned more visits")
	for range 50 {
		step(0.6)
	}
	require.InDelta(t, MaxShare, c.share, 1e-9, "bounded")
	step(0.99)
	require.Less(t, c.share, MaxShare)
	for range 50 {
		step(0.99)
	}
	require.InDelta(t, Headroom, c.share, 1e-9, "a lane spent is planned Headroom of its rate, not less")

	// Budget to cover every agent at the fastest interval: nothing binds,
	// and a lane left unspent does not wind the share up.
	var idle Allocations
	for i := range 5 {
		a, _ := idle.Get(cfg, t0.Add(time.Duration(i)*AllocationTTL), func() (Lane, error) {
			return Lane{Rates: rates, Rate: 1e9, Taken: int64(i) * 1000}, nil
		})
		require.True(t, math.IsInf(a.Scale, 1))
	}
	require.InDelta(t, Headroom, idle.share, 1e-9)
}
