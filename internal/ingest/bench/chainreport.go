package bench

import (
	"fmt"
	"io"
	"time"
)

// The chain benchmark (issue 18 item 7): per-agent optimal against the
// tail, at 1,000, 10,000 and 100,000 agents, chain volumes of 10,000,
// 40,000 and 200,000 strangers' calls a day, on the three Hiro plans.

// ChainVolumes are the strangers' calls a day of the benchmark's chains.
var ChainVolumes = []int{10_000, 40_000, 200_000}

// ChainSizes are the benchmark's agent counts.
var ChainSizes = []int{1_000, 10_000, 100_000}

// ChainOptions shape a chain benchmark run.
type ChainOptions struct {
	Sizes, Volumes []int
	Budgets        []Budget
	// Horizon is the minute plans' run (default 2 days); the month plan
	// runs a calendar month unless ShortMonth.
	Horizon    time.Duration
	ShortMonth bool
	// PerAgent also runs per-agent optimal, once per world and budget
	// (it does not read the chain, so its figures hold for every volume).
	PerAgent bool
}

// ChainReport is the chain benchmark's figures.
type ChainReport struct {
	Results []ChainResult
	Took    time.Duration
}

// RunChain runs eng's tail (and per-agent optimal) over every size,
// volume and budget, two simulations at a time.
func RunChain(eng Engine, o ChainOptions) ChainReport {
	began := time.Now()
	if o.Horizon <= 0 {
		o.Horizon = 48 * time.Hour
	}
	type job func() []ChainResult
	var jobs []job
	for i, n := range o.Sizes {
		name := fmt.Sprintf("%d agents", n)
		for _, b := range o.Budgets {
			end := start.Add(o.Horizon)
			if b.Month > 0 && !o.ShortMonth {
				end = start.AddDate(0, 1, 0)
			}
			from, to := start.Add(min(warmup, o.Horizon/4)), end.Add(-min(tail, o.Horizon/4))
			seed := uint64(100 + i)
			if o.PerAgent {
				jobs = append(jobs, func() []ChainResult {
					w := NewWorld(name, n, seed, start, end)
					r := Simulate(w, b, Strategy{Name: "optimal", Kind: KindOptimal}, from, to)
					return []ChainResult{perAgentChainResult(r, 0)}
				})
			}
			for _, v := range o.Volumes {
				jobs = append(jobs, func() []ChainResult {
					w := NewWorld(name, n, seed, start, end)
					return []ChainResult{SimulateTail(NewChain(w, v, seed^uint64(v)), b, eng, from, to)}
				})
			}
		}
	}
	results := make([][]ChainResult, len(jobs))
	twoAtATime(len(jobs), func(i int) { results[i] = jobs[i]() })
	rep := ChainReport{Took: time.Since(began)}
	for _, r := range results {
		rep.Results = append(rep.Results, r...)
	}
	return rep
}

// Write prints the report as Markdown, one table per budget.
func (r ChainReport) Write(w io.Writer, budgets []Budget) {
	fmt.Fprintln(w, "## Results: the chain read once (tail) against per-agent optimal")
	fmt.Fprintln(w)
	for _, b := range budgets {
		fmt.Fprintf(w, "### %s\n\n", b.Name)
		fmt.Fprintln(w, "| world | strategy | chain volume | tail req/day | reconciler | details | visits | all req/day | mean / p99 | worst | missed | never found | gaps | month left |")
		fmt.Fprintln(w, "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
		for _, x := range r.Results {
			if x.Budget != b.Name {
				continue
			}
			vol, month := "—", "—"
			if x.Volume > 0 {
				vol = fmt.Sprintf("%d", x.Volume)
			}
			if x.HasMonth {
				month = fmt.Sprintf("%d", x.MonthLeft)
				if x.DryAt != nil {
					month += " (dry " + x.DryAt.Format("Jan 2 15:04") + ")"
				}
			}
			fmt.Fprintf(w, "| %s | %s | %s | %.0f | %.0f | %.0f | %.0f | %.0f | %s | %s | %d | %d | %d | %s |\n",
				x.World, x.Strategy, vol, x.PerDay(ReaderTail), x.PerDay(ReaderReconciler), x.PerDay(ReaderDetails),
				x.PerDay("visits"), x.PerDay(""), fmtDelays(x.All), fmtDur(x.All.Max), x.Missed, x.NeverFound, x.Gaps, month)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "(%d simulations in %s.)\n", len(r.Results), r.Took.Round(time.Second))
}
