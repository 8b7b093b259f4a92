package bench

import (
	"fmt"
	"time"

	"github.com/pacer-dev/pacer/internal/ingest"
	pbench "github.com/pacer-dev/pacer/internal/pacing/bench"
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

// Sizes are the agents mode's worlds; ChainSizes and ChainVolumes the
// chain benchmark's agent counts and calls a day.
var (
	Sizes        = []int{1_000, 10_000}
	ChainSizes   = []int{1_000, 10_000, 100_000}
	ChainVolumes = []int{10_000, 40_000, 200_000}
)

// RunAll runs the agents mode in every world on every budget under tiers
// and optimal, the independent simulations two at a time.
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
	pbench.TwoAtATime(len(jobs), func(i int) { results[i], comparisons[i] = compare(jobs[i].w, jobs[i].b) })
	for i := range jobs {
		rep.Results = append(rep.Results, results[i]...)
		rep.Comparisons = append(rep.Comparisons, comparisons[i])
	}
	rep.Took = time.Since(began)
	return rep
}

// compare runs tiers and optimal in w on b, and optimal again at tiers'
// cost and at 0.65× of it when tiers leaves budget unused.
func compare(w *World, b Budget) ([]Result, Comparison) {
	from, to := w.Start.Add(warmup), w.End.Add(-tail)
	tiers := Simulate(w, nil, b, Strategy{Name: "tiers", Policy: ingest.PolicyTiers}, from, to)
	opt := Simulate(w, nil, b, Strategy{Name: "optimal", Policy: ingest.PolicyOptimal}, from, to)
	out := []Result{tiers, opt}
	c := Comparison{World: w.Name, Budget: b.Name,
		TimeRatio: ratio(opt.All.Mean, tiers.All.Mean), CostRatio: opt.PerDay("") / tiers.PerDay("")}

	// The sweep's share of a minute, and what the staleness floor and the
	// swaps' own detail requests need of it.
	capacity := float64(b.PerMinute) * 24 * 60
	if b.Month > 0 {
		capacity = min(capacity, float64(b.Month)/w.End.Sub(w.Start).Hours()*24)
	}
	cfg := ingest.DefaultConfig()
	floor := float64(len(w.Agents)) * float64(24*time.Hour) / float64(cfg.StalenessCap())
	c.Need, c.Capacity = floor+w.SwapsPerDay(), capacity
	c.Feasible = capacity >= c.Need

	if tiers.PerDay("") < 0.9*capacity {
		// Tiers leaves budget unused: compare at its cost, and find the
		// time optimal reaches at 0.65× of it.
		equal := atCost(w, b, "optimal at tiers' cost", tiers, 1, from, to)
		low := atCost(w, b, "optimal at 0.65× tiers' cost", tiers, 0.65, from, to)
		out = append(out, equal, low)
		c.TimeRatio, c.CostRatio = ratio(equal.All.Mean, tiers.All.Mean), equal.PerDay("")/tiers.PerDay("")
		c.HasLowCost = true
		c.LowTimeRatio, c.LowCostRatio = ratio(low.All.Mean, tiers.All.Mean), low.PerDay("")/tiers.PerDay("")
	}
	c.MaxGapOK = true
	for _, r := range out {
		c.MaxGapOK = c.MaxGapOK && r.MaxGap <= cfg.MaxStaleness
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
	target := share * tiers.PerDay("")
	visits := target - details
	s := Strategy{Name: name, Policy: ingest.PolicyOptimal, VisitsPerDay: visits}
	r := Simulate(w, nil, b, s, from, to)
	if spent := r.PerDay("") - details; spent > 0 {
		s.VisitsPerDay *= (target - details) / spent
		r = Simulate(w, nil, b, s, from, to)
	}
	return r
}

func ratio(a, b time.Duration) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// ChainOptions shape a chain benchmark run.
type ChainOptions struct {
	Sizes, Volumes []int
	Budgets        []Budget
	// Horizon is the minute plans' run (default 2 days); the month plan
	// runs a calendar month unless ShortMonth.
	Horizon    time.Duration
	ShortMonth bool
	// PerAgentUpTo also runs per-agent optimal, once per world and budget
	// (it does not read the chain, so its figures hold for every volume),
	// in worlds of at most this many agents (0: none): its cost grows
	// with the agents, which is the point.
	PerAgentUpTo int
	// Tail is the tail's strategy (a what-if may set its Batch).
	Tail Strategy
}

// RunChain runs the tail (and per-agent optimal) over every size, volume
// and budget, two simulations at a time.
func RunChain(o ChainOptions) Report {
	began := time.Now()
	if o.Horizon <= 0 {
		o.Horizon = 48 * time.Hour
	}
	var jobs []func() []Result
	for i, n := range o.Sizes {
		name := fmt.Sprintf("%d agents", n)
		for _, b := range o.Budgets {
			end := start.Add(o.Horizon)
			if b.Month > 0 && !o.ShortMonth {
				end = start.AddDate(0, 1, 0)
			}
			from, to := start.Add(min(warmup, o.Horizon/4)), end.Add(-min(tail, o.Horizon/4))
			seed := uint64(100 + i)
			if n <= o.PerAgentUpTo {
				jobs = append(jobs, func() []Result {
					w := NewWorld(name, n, seed, start, end)
					return []Result{Simulate(w, nil, b, Strategy{Name: "per-agent optimal", Policy: ingest.PolicyOptimal}, from, to)}
				})
			}
			for _, v := range o.Volumes {
				jobs = append(jobs, func() []Result {
					w := NewWorld(name, n, seed, start, end)
					c := NewChain(w, v, seed^uint64(v))
					if c == nil {
						return nil // the agents alone make more calls than v a day
					}
					return []Result{Simulate(w, c, b, o.Tail, from, to)}
				})
			}
		}
	}
	results := make([][]Result, len(jobs))
	pbench.TwoAtATime(len(jobs), func(i int) { results[i] = jobs[i]() })
	rep := Report{Budgets: o.Budgets, Took: time.Since(began)}
	for _, r := range results {
		rep.Results = append(rep.Results, r...)
	}
	return rep
}
