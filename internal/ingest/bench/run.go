package bench

import (
	"cmp"
	"fmt"
	"slices"
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

// Swaps are measured from the end of the first day (rates learned; a
// quarter of a shorter horizon) to 7 hours before the end.
const (
	warmup = 24 * time.Hour
	tail   = 7 * time.Hour
)

// ChainSizes and ChainVolumes are the chain benchmark's agent counts and
// calls a day. LossVolumes are volumes the month plan also runs at, in
// the smallest world only, for the one goal held there: no swap lost (0
// never found, the month never dry). At these volumes the tail fell
// behind the feed and gave ranges up faster than the reconciler read
// them (36 swaps never found at 100,000 a day, 1,631 at 150,000 with the
// offset prediction alone); polling alone, their p99 is not held, the
// month's pace cannot read 40 contracts' lists every 5 minutes
// (docs/discovery.md); with push (ServicePush) it is.
var (
	ChainSizes   = []int{1_000, 10_000, 100_000}
	ChainVolumes = []int{10_000, 40_000, 200_000}
	LossVolumes  = []int{100_000, 150_000}
)

// lossOnly reports whether volume is one of LossVolumes and not of
// ChainVolumes: its month rows hold no p99 without push (holdsP99).
func lossOnly(volume int) bool {
	return slices.Contains(LossVolumes, volume) && !slices.Contains(ChainVolumes, volume)
}

// ChainOptions shape a chain benchmark run.
type ChainOptions struct {
	Sizes, Volumes []int
	Budgets        []Budget
	// Horizon is the minute plans' run (default 2 days); the month plan
	// runs a calendar month unless ShortMonth (tests).
	Horizon    time.Duration
	ShortMonth bool
	// PerAgentUpTo also runs the agents mode (PACER_DISCOVERY=agents)
	// under PerAgent's policies, once per world and budget (it does not
	// read the chain, so its figures hold for every volume), in worlds of
	// at most this many agents (0: none): its cost grows with the agents,
	// which is the point.
	PerAgentUpTo int
	PerAgent     []ingest.Policy
	// Tails are the tail's strategies, each on a chain of its allowlist.
	Tails []Strategy
	// LossVolumes are volumes the month-capped budgets of Budgets also
	// run at, in the smallest of Sizes (see LossVolumes).
	LossVolumes []int
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
			for _, p := range o.PerAgent {
				if n <= o.PerAgentUpTo {
					jobs = append(jobs, func() []Result {
						w := NewWorld(name, n, seed, start, end)
						return []Result{Simulate(w, nil, b, Strategy{Name: "per-agent " + string(p), Policy: p}, from, to)}
					})
				}
			}
			volumes := o.Volumes
			if b.Month > 0 && n == slices.Min(o.Sizes) {
				for _, v := range o.LossVolumes {
					if !slices.Contains(volumes, v) {
						volumes = append(slices.Clip(volumes), v)
					}
				}
			}
			for _, v := range volumes {
				for _, s := range o.Tails {
					jobs = append(jobs, func() []Result {
						w := NewWorld(name, n, seed, start, end)
						c := NewChain(w, cmp.Or(s.Allowlist, BenchAllowlist), v, seed^uint64(v))
						if c == nil {
							return nil // the agents alone make more calls than v a day
						}
						return []Result{Simulate(w, c, b, s, from, to)}
					})
				}
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
