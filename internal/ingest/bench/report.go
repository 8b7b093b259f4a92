package bench

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/pacer-dev/pacer/internal/evidence"
	pbench "github.com/pacer-dev/pacer/internal/pacing/bench"
	simulator "github.com/pacer-dev/pacer/internal/sim"
)

// Delays is the discovery delay of a set of swaps.
type Delays struct {
	N              int
	Mean, P99, Max time.Duration
}

// Result is one strategy's figures in one world (on one chain) and budget.
type Result struct {
	World, Budget, Strategy string
	// Volume is the chain's calls a day (0: the agents mode, no chain).
	Volume int
	Days   float64
	// Requests are Hiro requests by reader (ReaderTail, ReaderReconciler,
	// ReaderDetails, the visits' detail batches too; the visits' list
	// pages under ReaderVisits).
	Requests map[string]int
	// All is the delay from a swap's block to its row, over the measured
	// swaps found.
	All Delays
	// Missed are measured swaps the tail's walk never handed out (found
	// only by the reconciler); NeverFound have no row at the end.
	Missed, NeverFound, Gaps int
	// OnLists is the share of the time the tail read the allowlisted
	// contracts' lists rather than the feed.
	OnLists float64
	// Month is the month quota at the end; Refused counts 429s.
	pbench.Month
	Refused int64
}

// PerDay is a reader's requests a day (all readers for "").
func (r Result) PerDay(reader string) float64 {
	n := r.Requests[reader]
	if reader == "" {
		for _, v := range r.Requests {
			n += v
		}
	}
	return float64(n) / r.Days
}

func (x *sim) result(from, to time.Time) Result {
	r := Result{World: x.w.Name, Budget: x.b.Name, Strategy: x.s.Name, Days: x.w.End.Sub(x.w.Start).Hours() / 24,
		Requests: x.requests, Gaps: x.gaps, Refused: x.refused}
	var all []time.Duration
	for i, a := range x.w.Agents {
		for j, tx := range a.Txs {
			switch at := x.found[i][j]; {
			case !tx.Swap || tx.At.Before(from) || !tx.At.Before(to):
			case at.IsZero():
				r.NeverFound++
			default:
				all = append(all, at.Sub(simulator.BlockOf(tx.At))) // from its block's time (SPEC §5.0 "Times")
				if x.c != nil && !x.byTail[i][j] {
					r.Missed++
				}
			}
		}
	}
	r.All = delays(all)
	r.Month = x.up.Month()
	if x.c != nil {
		r.Volume = x.c.Volume
		if x.onLists() {
			x.listsTime += x.w.End.Sub(x.decided)
		}
		r.OnLists = x.listsTime.Hours() / 24 / max(r.Days, 1e-9)
	}
	return r
}

func delays(ds []time.Duration) Delays {
	if len(ds) == 0 {
		return Delays{}
	}
	slices.Sort(ds)
	sum := 0.0 // seconds: a sum of durations can pass 292 years
	for _, d := range ds {
		sum += d.Seconds()
	}
	p := ds[min(len(ds)-1, int(float64(len(ds))*0.99))]
	return Delays{N: len(ds), Mean: time.Duration(sum / float64(len(ds)) * float64(time.Second)), P99: p, Max: ds[len(ds)-1]}
}

// Report is the chain benchmark's figures.
type Report struct {
	Budgets []Budget
	Results []Result
	Took    time.Duration
}

func fmtDelays(d Delays) string {
	if d.N == 0 {
		return "—"
	}
	return pbench.Human(d.Mean) + " / " + pbench.Human(d.P99)
}

// WriteChain prints the chain benchmark's report as Markdown, one table
// per budget.
func (r Report) WriteChain(w io.Writer) {
	fmt.Fprint(w, "## Results: the chain read once (tail) against the agents mode (per-agent)\n\n")
	cols := []string{"world", "strategy", ">chain volume", "tail reads", ">tail req/day", ">reconciler", ">details", ">visits",
		">all req/day", ">mean / p99", ">worst", ">missed", ">never found", ">gaps", ">month left"}
	for _, b := range r.Budgets {
		fmt.Fprintf(w, "### %s\n\n", b.Name)
		var rows [][]string
		for _, x := range r.Results {
			if x.Budget != b.Name {
				continue
			}
			vol, src := "—", "—"
			if x.Volume > 0 {
				vol, src = fmt.Sprint(x.Volume), fmtSource(x.OnLists)
			}
			rows = append(rows, []string{x.World, x.Strategy, vol, src, fmt.Sprintf("%.0f", x.PerDay(ReaderTail)),
				fmt.Sprintf("%.0f", x.PerDay(ReaderReconciler)), fmt.Sprintf("%.0f", x.PerDay(ReaderDetails)),
				fmt.Sprintf("%.0f", x.PerDay(ReaderVisits)), fmt.Sprintf("%.0f", x.PerDay("")), fmtDelays(x.All),
				pbench.Human(x.All.Max), fmt.Sprint(x.Missed), fmt.Sprint(x.NeverFound), fmt.Sprint(x.Gaps), x.Month.Cell()})
		}
		pbench.WriteTable(w, cols, rows)
	}
	fmt.Fprint(w, "### Goals\n\n")
	pbench.WriteGoals(w, r.Goals())
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

// Figures are the goals of the service's own allowlist (ServiceTail's
// results, the catalog's pairs) as published figures, each with the bound
// its goal holds (cmd/bench prints them; docs/benchmarks.md quotes them):
// keyless 10,000 agents at 40,000 a day, and the month-capped plan's worst
// row. None when the results have no such row.
func (r Report) Figures() []evidence.Figure {
	var out []evidence.Figure
	fig := func(name string, v float64, op evidence.Op, bound float64, unit string) {
		out = append(out, evidence.Figure{Name: name, Value: v, Op: op, Bound: bound, Unit: unit})
	}
	var p99, never, left = -1.0, 0.0, math.Inf(1)
	for _, x := range r.Results {
		if x.Strategy != ServiceTail.Name || x.Volume == 0 {
			continue
		}
		if x.World == "10000 agents" && x.Budget == Budgets[0].Name && x.Volume == 40_000 {
			fig("chain.keyless.p99", x.All.P99.Seconds(), evidence.AtMost, 30, "s")
			fig("chain.keyless.mean", x.All.Mean.Seconds(), evidence.AtMost, 15, "s")
			fig("chain.keyless.budget_share", 100*x.PerDay("")/(float64(Budgets[0].PerMinute)*24*60), evidence.AtMost, 25, "pct")
			fig("chain.keyless.missed", float64(x.Missed+x.NeverFound), evidence.Exactly, 0, "count")
		}
		if x.HasMonth {
			if !lossOnly(x.Volume) {
				p99 = max(p99, x.All.P99.Seconds())
			}
			never += float64(x.NeverFound)
			left = min(left, float64(x.MonthLeft))
			if x.DryAfter != nil {
				left = min(left, 0)
			}
		}
	}
	if p99 >= 0 {
		fig("chain.month.p99_worst", p99, evidence.AtMost, 300, "s")
	}
	if !math.IsInf(left, 1) {
		fig("chain.month.never_found", never, evidence.Exactly, 0, "count")
		fig("chain.month.left_min", left, evidence.AtLeast, 1, "count")
	}
	return out
}

// Goals checks the chain report against issue 18's goals for the tail
// (and issue 26's month row).
func (r Report) Goals() []pbench.Goal {
	// Cost independent of agents: per budget and volume, the tail
	// reader's (and with the reconciler's) requests across sizes, on the
	// minute plans, where the tail reads every TailEvery. On the month
	// plan the tail reads as often as the month's pace allows once the
	// details are paid: every reader together costs the month's pace, at
	// every size, and that is what is compared there.
	var out []pbench.Goal
	spreads := map[string][]float64{}
	spread := func(key string, v float64) { spreads[key] = append(spreads[key], v) }
	for _, x := range r.Results {
		if x.Volume == 0 {
			continue
		}
		key := fmt.Sprintf("%s/%s/%d", x.Strategy, x.Budget, x.Volume)
		if x.HasMonth {
			spread("month "+key, x.PerDay(""))
		} else {
			spread("tail "+key, x.PerDay(ReaderTail))
			spread("with "+key, x.PerDay(ReaderTail)+x.PerDay(ReaderReconciler))
		}
		if x.World == "10000 agents" && x.Budget == Budgets[0].Name && x.Volume == 40_000 {
			share := x.PerDay("") / (float64(Budgets[0].PerMinute) * 24 * 60)
			out = append(out, pbench.Goal{Scenario: x.Strategy, Goal: "seconds, not hours: 10,000 agents, keyless, 40,000 a day: p99 ≤ 30 s, mean ≤ 15 s, ≤ 25% of the budget, 0 missed",
				Got: fmt.Sprintf("mean %s, p99 %s, %.0f%% of the budget, %d missed, %d never found", pbench.Human(x.All.Mean), pbench.Human(x.All.P99), 100*share, x.Missed, x.NeverFound),
				Met: x.All.P99 <= 30*time.Second && x.All.Mean <= 15*time.Second && share <= 0.25 && x.Missed+x.NeverFound == 0})
		}
		if x.HasMonth && lossOnly(x.Volume) {
			out = append(out, pbench.Goal{Scenario: x.Strategy, Goal: fmt.Sprintf("the month-capped plan, %s, %d a day: 0 never found, never dry (no p99 held at this volume)", x.World, x.Volume),
				Got: fmt.Sprintf("%d never found, p99 %s, month left %d", x.NeverFound, pbench.Human(x.All.P99), x.MonthLeft),
				Met: x.NeverFound == 0 && x.DryAfter == nil && x.MonthLeft > 0})
		} else if x.HasMonth {
			out = append(out, pbench.Goal{Scenario: x.Strategy, Goal: fmt.Sprintf("the month-capped plan, %s, %d a day: 0 never found, p99 ≤ 5 min, never dry", x.World, x.Volume),
				Got: fmt.Sprintf("%d never found, p99 %s, month left %d", x.NeverFound, pbench.Human(x.All.P99), x.MonthLeft),
				Met: x.NeverFound == 0 && x.All.P99 <= 5*time.Minute && x.DryAfter == nil && x.MonthLeft > 0})
		}
	}
	worst := map[string]float64{}
	for key, v := range spreads {
		if kind := strings.Fields(key)[0]; slices.Min(v) > 0 {
			worst[kind] = math.Max(worst[kind], slices.Max(v)/slices.Min(v)-1)
		}
	}
	return append([]pbench.Goal{{Scenario: "chain", Goal: "cost independent of agents: the tail's requests a day differ by ≤ 10% across sizes at one chain volume",
		Got: fmt.Sprintf("minute plans: largest spread %.1f%% for the tail reader, %.1f%% with the reconciler (whose lists carry the agents' own swaps), details counted apart; month plan: every reader together %.1f%% (the month's pace; the tail takes what the details leave)",
			100*worst["tail"], 100*worst["with"], 100*worst["month"]),
		Met: worst["tail"] <= 0.10 && worst["month"] <= 0.10}}, out...)
}
