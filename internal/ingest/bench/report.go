package bench

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/pacer-dev/pacer/internal/ingest"
)

// Delays is the discovery delay of a set of swaps.
type Delays struct {
	N         int
	Mean, P99 time.Duration
	// Max is the worst.
	Max time.Duration
}

// Result is one strategy's figures in one world on one budget.
type Result struct {
	World, Budget, Strategy string
	Kind                    string
	// ByClass is the delay from a swap being mined to its row existing,
	// per agent class; All over every measured swap.
	ByClass map[ingest.Tier]Delays
	All     Delays
	// Requests is every Hiro request; Found every swap whose row exists.
	Requests, Found int
	Days            float64
	// Missed are measured swaps passed over for good (the round robin's
	// 25 newest moved past them); NotFound are measured swaps without a
	// row at the end for another reason.
	Missed, NotFound int
	// MaxGap is the longest any agent went without a visit.
	MaxGap time.Duration
	// MonthLeft is the month quota left at the end; DryAt when the month
	// refused a request.
	HasMonth  bool
	MonthLeft int64
	DryAt     *time.Time
	// Refused counts 429s.
	Refused       int64
	ActionsPerDay float64
	// CarriedBytes is the size of the result the workflow keeps of a run.
	CarriedBytes int
}

// RequestsPerDay is the run's Hiro spend a day.
func (r Result) RequestsPerDay() float64 { return float64(r.Requests) / r.Days }

// RequestsPerSwap is Hiro requests per swap found.
func (r Result) RequestsPerSwap() float64 {
	if r.Found == 0 {
		return 0
	}
	return float64(r.Requests) / float64(r.Found)
}

func (x *sim) result() Result {
	r := Result{World: x.w.Name, Budget: x.b.Name, Strategy: x.s.Name, Kind: x.s.Kind, Requests: x.requests,
		Days: x.w.End.Sub(x.w.Start).Hours() / 24, ByClass: map[ingest.Tier]Delays{}, Refused: x.refused}
	byClass := map[ingest.Tier][]time.Duration{}
	var all []time.Duration
	for _, a := range x.agents {
		last := a.rrLast
		if a.LastVisitAt != nil {
			last = *a.LastVisitAt
		}
		r.MaxGap = max(r.MaxGap, a.maxGap, x.w.End.Sub(last))
		for i, tx := range a.spec.Txs {
			if !tx.Swap {
				continue
			}
			if !a.found[i].IsZero() {
				r.Found++
			}
			if tx.At.Before(x.measure[0]) || !tx.At.Before(x.measure[1]) {
				continue
			}
			switch {
			case !a.found[i].IsZero():
				d := a.found[i].Sub(tx.At)
				byClass[a.spec.Class] = append(byClass[a.spec.Class], d)
				all = append(all, d)
			case i < a.missedFrom:
				r.Missed++
			default:
				r.NotFound++
			}
		}
	}
	for c, ds := range byClass {
		r.ByClass[c] = delays(ds)
	}
	r.All = delays(all)
	r.HasMonth, r.MonthLeft, r.DryAt = x.month()
	r.ActionsPerDay = x.actions / r.Days
	x.lastRes.Tiers = x.tierCounts()
	r.CarriedBytes = carriedBytes(x.lastRes)
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

// Comparison is optimal against tiers in one world on one budget.
type Comparison struct {
	World, Budget string
	// TimeRatio is optimal's mean delay over tiers' at CostRatio (optimal's
	// requests over tiers'); AtLowCost is optimal with a visit budget that
	// makes its cost LowCostRatio of tiers', and its time ratio.
	TimeRatio, CostRatio       float64
	HasLowCost                 bool
	LowTimeRatio, LowCostRatio float64
	// Feasible says the budget can visit every agent within the staleness
	// cap: Capacity (requests a day) covers Need (every agent once per
	// cap, and every swap's detail request); MaxGapOK that no agent waited
	// past MaxStaleness.
	Feasible, MaxGapOK bool
	Need, Capacity     float64
}

// Met reports whether optimal beat tiers by the goal: ≤ 0.65× the time at
// equal cost, or the same time at ≤ 0.65× the cost.
func (c Comparison) Met() bool {
	return (c.TimeRatio <= 0.65 && c.CostRatio <= 1.02) || (c.HasLowCost && c.LowTimeRatio <= 1 && c.LowCostRatio <= 0.67)
}

// Report is the whole discovery benchmark.
type Report struct {
	Worlds      []*World
	Budgets     []Budget
	Results     []Result
	Comparisons []Comparison
	Took        time.Duration
}

func fmtDur(d time.Duration) string {
	switch {
	case d == 0:
		return "—"
	case d < time.Minute:
		return fmt.Sprintf("%.0fs", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%.1fm", d.Minutes())
	}
	return fmt.Sprintf("%.1fh", d.Hours())
}

// fmtMonth is the month left at the end, and when it ran dry.
func fmtMonth(has bool, left int64, dryAt *time.Time) string {
	if !has {
		return "—"
	}
	if dryAt != nil {
		return fmt.Sprintf("%d (dry %s)", left, dryAt.Format("Jan 2 15:04"))
	}
	return fmt.Sprintf("%d", left)
}

func fmtDelays(d Delays) string {
	if d.N == 0 {
		return "—"
	}
	return fmtDur(d.Mean) + " / " + fmtDur(d.P99)
}

// Write prints the report as Markdown.
func (r Report) Write(w io.Writer) {
	fmt.Fprintln(w, "## Results: discovery")
	fmt.Fprintln(w)
	for _, wd := range r.Worlds {
		c := wd.ClassCounts()
		fmt.Fprintf(w, "- **%s**: %d hot, %d warm, %d cold agents, %.0f swaps a day; %s to %s.\n", wd.Name,
			c[ingest.Hot], c[ingest.Warm], c[ingest.Cold], wd.SwapsPerDay(), wd.Start.Format("2006-01-02"), wd.End.Format("2006-01-02"))
	}
	fmt.Fprintln(w)
	for _, b := range r.Budgets {
		month := "no month quota"
		if b.Month > 0 {
			month = fmt.Sprintf("%d a month", b.Month)
		}
		fmt.Fprintf(w, "### %s (Hiro %d/min, pacer configured %d/min, %s)\n\n", b.Name, b.Documented, b.PerMinute, month)
		fmt.Fprintln(w, "| world | strategy | hot mean / p99 | warm | cold | all swaps | Hiro req/day | req per swap | missed | not found | longest wait | month left | actions/day |")
		fmt.Fprintln(w, "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
		for _, x := range r.Results {
			if x.Budget != b.Name {
				continue
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %.0f | %.2f | %d | %d | %s | %s | %.0f |\n",
				x.World, x.Strategy, fmtDelays(x.ByClass[ingest.Hot]), fmtDelays(x.ByClass[ingest.Warm]),
				fmtDelays(x.ByClass[ingest.Cold]), fmtDelays(x.All), x.RequestsPerDay(), x.RequestsPerSwap(),
				x.Missed, x.NotFound, fmtDur(x.MaxGap), fmtMonth(x.HasMonth, x.MonthLeft, x.DryAt), x.ActionsPerDay)
		}
		fmt.Fprintln(w)
		for _, c := range r.Comparisons {
			if c.Budget != b.Name {
				continue
			}
			fmt.Fprintf(w, "- %s: optimal's mean time is **%.2f×** tiers' at %.2f× its cost", c.World, c.TimeRatio, c.CostRatio)
			if c.HasLowCost {
				fmt.Fprintf(w, "; at %.2f× tiers' cost it is %.2f× tiers' time", c.LowCostRatio, c.LowTimeRatio)
			}
			verdict := "goal met"
			if !c.Met() {
				verdict = "goal NOT met"
			}
			if !c.Feasible {
				verdict = fmt.Sprintf("no policy can do better here: visiting every agent within PACER_MAX_STALENESS and fetching every swap needs %.0f requests a day, the budget gives %.0f", c.Need, c.Capacity)
			}
			fmt.Fprintf(w, " (%s).\n", verdict)
		}
		fmt.Fprintln(w)
	}
	writeGoals(w, r.Goals())
	fmt.Fprintf(w, "(%d simulations.)\n", len(r.Results))
}

// writeGoals prints a goals section.
func writeGoals(w io.Writer, goals []Goal) {
	fmt.Fprintln(w, "### Goals")
	fmt.Fprintln(w)
	for _, g := range goals {
		mark := "ok"
		if !g.OK {
			mark = "NOT MET"
		}
		fmt.Fprintf(w, "- %s: %s — %s\n", g.Name, mark, g.Detail)
	}
	fmt.Fprintln(w)
}

// Goal is one of the goals and whether the run met it.
type Goal struct {
	Name, Detail string
	OK           bool
}

// Goals checks the report against the discovery goals.
func (r Report) Goals() []Goal {
	var out []Goal
	missed, queued, rr := 0, 0, 0
	for _, x := range r.Results {
		if x.Kind == KindRoundRobin {
			rr += x.Missed
			continue
		}
		missed += x.Missed
		if c, ok := r.comparison(x.World, x.Budget); ok && c.Feasible {
			queued += x.NotFound
		}
	}
	out = append(out, Goal{Name: "0 swaps missed by tiers and optimal in every world", OK: missed == 0 && queued == 0,
		Detail: fmt.Sprintf("%d passed over, %d without a row at the end where the budget keeps PACER_MAX_STALENESS (the round robin passed over %d)", missed, queued, rr)})

	met, total := 0, 0
	for _, c := range r.Comparisons {
		if !c.Feasible {
			continue
		}
		total++
		if c.Met() {
			met++
		}
	}
	out = append(out, Goal{Name: "optimal ≤ 0.65× tiers' mean time at equal cost, or tiers' time at ≤ 0.65× the cost",
		OK: met == total, Detail: fmt.Sprintf("met in %d of the %d worlds and budgets where the budget can keep PACER_MAX_STALENESS", met, total)})

	var stale []string
	for _, c := range r.Comparisons {
		if c.Feasible && !c.MaxGapOK {
			stale = append(stale, c.World+" on "+c.Budget)
		}
	}
	out = append(out, Goal{Name: "no agent past PACER_MAX_STALENESS (where the budget can keep it)", OK: len(stale) == 0,
		Detail: fmt.Sprintf("longest waits in the tables; exceeded in: %s", orNone(stale))})

	var dry []string
	for _, x := range r.Results {
		if x.HasMonth && (x.DryAt != nil || x.MonthLeft <= 0) {
			dry = append(dry, x.World+" "+x.Strategy)
		}
	}
	out = append(out, Goal{Name: "the month never runs dry", OK: len(dry) == 0, Detail: "ran dry: " + orNone(dry)})

	largest := map[string]int{}
	for _, x := range r.Results {
		if x.Kind != KindRoundRobin {
			largest[x.World] = max(largest[x.World], x.CarriedBytes)
		}
	}
	var detail []string
	lo, hi := 0, 0
	for i, w := range r.Worlds {
		n := largest[w.Name]
		detail = append(detail, fmt.Sprintf("%s: %d bytes", w.Name, n))
		if i == 0 {
			lo = n
		}
		hi = n
	}
	// Ten times the agents may add a digit to a few counts, nothing more.
	out = append(out, Goal{Name: "the workflow's carried state does not grow with the number of agents",
		OK:     hi > 0 && hi-lo <= 16 && hi < 1024,
		Detail: "the largest sweep result the workflow keeps: " + strings.Join(detail, ", ") + " (counts and three tier totals, no agent)"})
	return out
}

func (r Report) comparison(world, budget string) (Comparison, bool) {
	for _, c := range r.Comparisons {
		if c.World == world && c.Budget == budget {
			return c, true
		}
	}
	return Comparison{}, false
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, "; ")
}
