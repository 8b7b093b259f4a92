package bench

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/pacer-dev/pacer/internal/hiro"
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
	// PerAgentUpTo leaves per-agent optimal out of worlds larger than this
	// (0: no limit): its cost grows with the agents, which is the point,
	// and at 100,000 agents one simulation takes most of an hour.
	PerAgentUpTo int
	// DetailBatch is how many transactions a tx/multiple request asks for
	// (0: hiro.MaxBatch, what the service asks): a what-if.
	DetailBatch int
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
			if o.PerAgent && (o.PerAgentUpTo == 0 || n <= o.PerAgentUpTo) {
				jobs = append(jobs, func() []ChainResult {
					w := NewWorld(name, n, seed, start, end)
					r := Simulate(w, b, Strategy{Name: "optimal", Kind: KindOptimal}, from, to)
					return []ChainResult{perAgentChainResult(r, 0)}
				})
			}
			for _, v := range o.Volumes {
				jobs = append(jobs, func() []ChainResult {
					w := NewWorld(name, n, seed, start, end)
					c := NewChain(w, v, seed^uint64(v))
					if c == nil {
						return nil // the agents alone make more calls than v a day
					}
					return []ChainResult{simulateTail(c, b, eng, from, to, cmp.Or(o.DetailBatch, hiro.MaxBatch))}
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
		fmt.Fprintln(w, "| world | strategy | chain volume | tail reads | tail req/day | reconciler | details | visits | all req/day | mean / p99 | worst | missed | never found | gaps | month left |")
		fmt.Fprintln(w, "|---|---|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
		for _, x := range r.Results {
			if x.Budget != b.Name {
				continue
			}
			vol, src := "—", "—"
			if x.Volume > 0 {
				vol = fmt.Sprintf("%d", x.Volume)
				src = fmtSource(x.OnLists)
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %.0f | %.0f | %.0f | %.0f | %.0f | %s | %s | %d | %d | %d | %s |\n",
				x.World, x.Strategy, vol, src, x.PerDay(ReaderTail), x.PerDay(ReaderReconciler), x.PerDay(ReaderDetails),
				x.PerDay("visits"), x.PerDay(""), fmtDelays(x.All), fmtDur(x.All.Max), x.Missed, x.NeverFound, x.Gaps, fmtMonth(x.HasMonth, x.MonthLeft, x.DryAt))
		}
		fmt.Fprintln(w)
	}
	writeGoals(w, r.Goals())
	fmt.Fprintf(w, "(%d simulations in %s.)\n", len(r.Results), r.Took.Round(time.Second))
}

// fmtSource says where the tail read: the feed, the allowlisted
// contracts' lists, or both (the lists' share of the time).
func fmtSource(onLists float64) string {
	switch {
	case onLists <= 0:
		return "feed"
	case onLists >= 0.995:
		return "lists"
	}
	return fmt.Sprintf("feed, lists %.0f%%", 100*onLists)
}

// Goals checks the report against issue 18's goals for the tail.
func (r ChainReport) Goals() []Goal {
	tails := func(keep func(ChainResult) bool) []ChainResult {
		var out []ChainResult
		for _, x := range r.Results {
			if x.Requests["visits"] == 0 && keep(x) {
				out = append(out, x)
			}
		}
		return out
	}
	var out []Goal

	// Cost independent of agents: per budget and volume, the tail
	// reader's (and with the reconciler's) requests across sizes, on the
	// minute plans, where the tail reads every TailEvery. On the month
	// plan the tail reads as often as the month's pace allows once the
	// details are paid: every reader together costs the month's pace, at
	// every size, and that is what is compared there.
	worst, worstWith, worstMonth := 0.0, 0.0, 0.0
	groups := map[string][]ChainResult{}
	for _, x := range tails(func(ChainResult) bool { return true }) {
		key := fmt.Sprintf("%s/%d", x.Budget, x.Volume)
		groups[key] = append(groups[key], x)
	}
	spread := func(g []ChainResult, f func(ChainResult) float64) float64 {
		lo, hi := math.Inf(1), 0.0
		for _, x := range g {
			lo, hi = math.Min(lo, f(x)), math.Max(hi, f(x))
		}
		if len(g) < 2 || lo <= 0 {
			return 0
		}
		return hi/lo - 1
	}
	for _, g := range groups {
		if g[0].HasMonth {
			worstMonth = math.Max(worstMonth, spread(g, func(x ChainResult) float64 { return x.PerDay("") }))
			continue
		}
		worst = math.Max(worst, spread(g, func(x ChainResult) float64 { return x.PerDay(ReaderTail) }))
		worstWith = math.Max(worstWith, spread(g, func(x ChainResult) float64 {
			return x.PerDay(ReaderTail) + x.PerDay(ReaderReconciler)
		}))
	}
	out = append(out, Goal{Name: "cost independent of agents: the tail's requests a day differ by ≤ 10% across sizes at one chain volume",
		OK: worst <= 0.10 && worstMonth <= 0.10, Detail: fmt.Sprintf("minute plans: largest spread %.1f%% for the tail reader, %.1f%% with the reconciler (whose lists carry the agents' own swaps), details counted apart; month plan: every reader together %.1f%% (the month's pace; the tail takes what the details leave)", 100*worst, 100*worstWith, 100*worstMonth)})

	for _, x := range tails(func(x ChainResult) bool {
		return x.World == "10000 agents" && x.Budget == Budgets[0].Name && x.Volume == 40_000
	}) {
		share := x.PerDay("") / (float64(Budgets[0].PerMinute) * 24 * 60)
		out = append(out, Goal{Name: "seconds, not hours: 10,000 agents, keyless, 40,000 a day: p99 ≤ 30 s, mean ≤ 15 s, ≤ 25% of the budget, 0 missed",
			OK:     x.All.P99 <= 30*time.Second && x.All.Mean <= 15*time.Second && share <= 0.25 && x.Missed+x.NeverFound == 0,
			Detail: fmt.Sprintf("mean %s, p99 %s, %.0f%% of the budget, %d missed, %d never found", fmtDur(x.All.Mean), fmtDur(x.All.P99), 100*share, x.Missed, x.NeverFound)})
	}
	for _, x := range tails(func(x ChainResult) bool { return (x.World == "1000 agents" || x.World == "10000 agents") && x.HasMonth }) {
		out = append(out, Goal{Name: fmt.Sprintf("the month-capped plan, %s, %d a day: 0 never found, p99 ≤ 5 min, never dry", x.World, x.Volume),
			OK:     x.NeverFound == 0 && x.All.P99 <= 5*time.Minute && x.DryAt == nil && x.MonthLeft > 0,
			Detail: fmt.Sprintf("%d never found, p99 %s, month left %d", x.NeverFound, fmtDur(x.All.P99), x.MonthLeft)})
	}
	return out
}
