package bench

import (
	"sync"
	"time"
)

// Budgets are the three plans of the issue: keyless, keyed, and keyed with
// a month quota. pacer is configured a little under Hiro's limits (its
// defaults); Hiro's own limit is what it enforces.
var Budgets = []Budget{
	{Name: "keyless 45/min", Documented: 50, PerMinute: 45},
	{Name: "keyed 450/min", Documented: 500, PerMinute: 450},
	{Name: "keyed, 150,000/month", Documented: 500, PerMinute: 450, Month: 150_000},
}

// start is a month's first instant, so the month budget's horizon is a
// whole calendar month.
var start = time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)

// Horizons: five days on the minute budgets, the whole month on the month
// quota. Swaps are measured from the end of the first day (rates learned)
// to 7 hours before the end (every agent visited since).
const (
	weekHorizon = 5 * 24 * time.Hour
	warmup      = 24 * time.Hour
	tail        = 7 * time.Hour
)

// Sizes are the worlds' agent counts.
var Sizes = []int{1_000, 10_000}

// RunAll runs every world on every budget under every strategy, the
// independent simulations in parallel.
func RunAll() Report {
	began := time.Now()
	rep := Report{Budgets: Budgets}
	type job struct {
		w *World
		b Budget
	}
	var jobs []job
	for i, n := range Sizes {
		name := map[int]string{1_000: "1,000 agents", 10_000: "10,000 agents"}[n]
		week := NewWorld(name, n, uint64(100+i), start, start.Add(weekHorizon))
		month := NewWorld(name, n, uint64(100+i), start, start.AddDate(0, 1, 0))
		rep.Worlds = append(rep.Worlds, week)
		for _, b := range Budgets {
			w := week
			if b.Month > 0 {
				w = month
			}
			jobs = append(jobs, job{w, b})
		}
	}
	results := make([][]Result, len(jobs))
	comparisons := make([]Comparison, len(jobs))
	twoAtATime(len(jobs), func(i int) { results[i], comparisons[i] = compare(jobs[i].w, jobs[i].b) })
	for i := range jobs {
		rep.Results = append(rep.Results, results[i]...)
		rep.Comparisons = append(rep.Comparisons, comparisons[i])
	}
	rep.Took = time.Since(began)
	return rep
}

// compare runs the round robin, tiers and optimal in w on b, and optimal
// again at tiers' cost and at 0.65× of it when tiers leaves budget unused.
func compare(w *World, b Budget) ([]Result, Comparison) {
	from, to := w.Start.Add(warmup), w.End.Add(-tail)
	rr := Simulate(w, b, Strategy{Name: "round robin (today)", Kind: KindRoundRobin}, from, to)
	tiers := Simulate(w, b, Strategy{Name: "tiers", Kind: KindTiers}, from, to)
	opt := Simulate(w, b, Strategy{Name: "optimal", Kind: KindOptimal}, from, to)
	out := []Result{rr, tiers, opt}
	c := Comparison{World: w.Name, Budget: b.Name,
		TimeRatio: ratio(opt.All.Mean, tiers.All.Mean), CostRatio: float64(opt.Requests) / float64(tiers.Requests)}

	// The sweep's share of a minute, and what the staleness floor and the
	// swaps' own detail requests need of it.
	capacity := float64(b.PerMinute) * 24 * 60
	if b.Month > 0 {
		capacity = min(capacity, float64(b.Month)/w.End.Sub(w.Start).Hours()*24)
	}
	floor := float64(len(w.Agents)) * float64(24*time.Hour) / float64(optCap())
	c.Need, c.Capacity = floor+w.SwapsPerDay(), capacity
	c.Feasible = capacity >= c.Need

	if tiers.RequestsPerDay() < 0.9*capacity {
		// Tiers leaves budget unused: compare at its cost, and find the
		// time optimal reaches at 0.65× of it.
		equal := atCost(w, b, "optimal at tiers' cost", tiers, 1, from, to)
		low := atCost(w, b, "optimal at 0.65× tiers' cost", tiers, 0.65, from, to)
		out = append(out, equal, low)
		c.TimeRatio, c.CostRatio = ratio(equal.All.Mean, tiers.All.Mean), float64(equal.Requests)/float64(tiers.Requests)
		c.HasLowCost = true
		c.LowTimeRatio, c.LowCostRatio = ratio(low.All.Mean, tiers.All.Mean), float64(low.Requests)/float64(tiers.Requests)
	}
	maxStale := optMaxStaleness()
	c.MaxGapOK = true
	for _, r := range out[1:] {
		if r.MaxGap > maxStale {
			c.MaxGapOK = false
		}
	}
	return out, c
}

// atCost runs optimal with the visit budget that makes its Hiro spend
// share × tiers'. The visits a plan asks for and the requests it spends
// differ (the first day's rates are still being learned, intervals fall on
// the minute grid), so the budget is corrected once by what the first
// attempt spent.
func atCost(w *World, b Budget, name string, tiers Result, share float64, from, to time.Time) Result {
	details := float64(tiers.Found) / tiers.Days
	target := share * tiers.RequestsPerDay()
	visits := target - details
	r := Simulate(w, b, Strategy{Name: name, Kind: KindOptimal, VisitsPerDay: visits}, from, to)
	if spent := r.RequestsPerDay() - details; spent > 0 {
		visits *= (target - details) / spent
		r = Simulate(w, b, Strategy{Name: name, Kind: KindOptimal, VisitsPerDay: visits}, from, to)
	}
	return r
}

func ratio(a, b time.Duration) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// twoAtATime runs f(0) … f(n-1), two at a time (the box has two cores),
// and returns when all are done.
func twoAtATime(n int, f func(i int)) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for i := range n {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			f(i)
		})
	}
	wg.Wait()
}
