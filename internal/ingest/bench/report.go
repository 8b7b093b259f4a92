package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/pacer-dev/pacer/internal/ingest"
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
	Policy                  ingest.Policy
	// Volume is the chain's calls a day (0: the agents mode, no chain).
	Volume int
	Days   float64
	// Requests are Hiro requests by reader (ReaderTail, ReaderReconciler,
	// ReaderDetails; the agents' visits under ReaderVisits).
	Requests map[string]int
	// All is the delay from a swap's block to its row, over the measured
	// swaps found; ByClass per agent class.
	All     Delays
	ByClass map[ingest.Tier]Delays
	// Found counts every swap whose row exists at the end.
	Found int
	// Missed are measured swaps the tail's walk never handed out (found
	// only by the reconciler); NeverFound have no row at the end.
	Missed, NeverFound, Gaps int
	// MaxGap is the longest any agent went without a visit (agents mode).
	MaxGap time.Duration
	// OnLists is the share of the time the tail read the allowlisted
	// contracts' lists rather than the feed.
	OnLists float64
	// MonthLeft is the month quota left at the end; DryAt when the month
	// refused a request; Refused counts 429s.
	HasMonth      bool
	MonthLeft     int64
	DryAt         *time.Time
	Refused       int64
	ActionsPerDay float64
	// CarriedBytes is the size of the result the workflow keeps of a run.
	CarriedBytes int
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
	r := Result{World: x.w.Name, Budget: x.b.Name, Strategy: x.s.Name, Policy: x.s.Policy, Days: x.w.End.Sub(x.w.Start).Hours() / 24,
		Requests: x.requests, Gaps: x.gaps, Refused: x.refused, ByClass: map[ingest.Tier]Delays{}}
	byClass := map[ingest.Tier][]time.Duration{}
	var all []time.Duration
	for i, a := range x.w.Agents {
		for j, tx := range a.Txs {
			at := x.found[i][j]
			if tx.Swap && !at.IsZero() {
				r.Found++
			}
			switch {
			case !tx.Swap || tx.At.Before(from) || !tx.At.Before(to):
			case at.IsZero():
				r.NeverFound++
			default:
				d := at.Sub(simulator.BlockOf(tx.At)) // from its block's time (SPEC §5.0 "Times")
				byClass[a.Class], all = append(byClass[a.Class], d), append(all, d)
				if x.c != nil && !x.byTail[i][j] {
					r.Missed++
				}
			}
		}
	}
	for c, ds := range byClass {
		r.ByClass[c] = delays(ds)
	}
	r.All = delays(all)
	r.HasMonth, r.MonthLeft, r.DryAt = x.up.Quota.Limits.HasMonth(), int64(x.up.Quota.MonthLeft()), x.up.Quota.DryAt
	r.ActionsPerDay = x.actions / r.Days
	if x.c != nil {
		r.Volume = x.c.Volume
		if x.onLists() {
			x.listsTime += x.w.End.Sub(x.decided)
		}
		r.OnLists = x.listsTime.Hours() / 24 / max(r.Days, 1e-9)
		return r
	}
	x.lastRes.Tiers = map[string]int{}
	for _, a := range x.agents {
		x.lastRes.Tiers[string(a.Tier)]++
		last := x.w.Start
		if a.LastVisitAt != nil {
			last = *a.LastVisitAt
		}
		r.MaxGap = max(r.MaxGap, a.maxGap, x.w.End.Sub(last))
	}
	// What the workflow keeps of a run: its result document.
	b, _ := json.Marshal(x.lastRes)
	r.CarriedBytes = len(b)
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
	// requests over tiers'); with HasLowCost, LowTimeRatio is optimal's
	// with a visit budget that makes its cost LowCostRatio of tiers'.
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

// Report is a benchmark's figures: the agents mode's (RunAll) or the
// chain's (RunChain).
type Report struct {
	Worlds      []*World
	Budgets     []Budget
	Results     []Result
	Comparisons []Comparison
	Took        time.Duration
}

func fmtMonth(r Result) string {
	switch {
	case !r.HasMonth:
		return "—"
	case r.DryAt != nil:
		return fmt.Sprintf("%d (dry %s)", r.MonthLeft, r.DryAt.Format("Jan 2 15:04"))
	}
	return fmt.Sprintf("%d", r.MonthLeft)
}

func fmtDelays(d Delays) string {
	if d.N == 0 {
		return "—"
	}
	return pbench.Human(d.Mean) + " / " + pbench.Human(d.P99)
}

// WriteAgents prints the agents mode's report as Markdown.
func (r Report) WriteAgents(w io.Writer) {
	fmt.Fprint(w, "## Results: discovery\n\n")
	for _, wd := range r.Worlds {
		c := map[ingest.Tier]int{}
		for _, a := range wd.Agents {
			c[a.Class]++
		}
		fmt.Fprintf(w, "- **%s**: %d hot, %d warm, %d cold agents, %.0f swaps a day; %s to %s.\n", wd.Name,
			c[ingest.Hot], c[ingest.Warm], c[ingest.Cold], wd.SwapsPerDay(), wd.Start.Format("2006-01-02"), wd.End.Format("2006-01-02"))
	}
	cols := []string{"world", "strategy", ">hot mean / p99", ">warm", ">cold", ">all swaps", ">Hiro req/day", ">req per swap",
		">not found", ">longest wait", ">month left", ">actions/day"}
	for _, b := range r.Budgets {
		fmt.Fprintf(w, "\n### %s (Hiro %d/min, pacer configured %d/min, %d a month)\n\n", b.Name, b.Documented, b.PerMinute, b.Month)
		var rows [][]string
		for _, x := range r.Results {
			if x.Budget == b.Name {
				rows = append(rows, []string{x.World, x.Strategy, fmtDelays(x.ByClass[ingest.Hot]), fmtDelays(x.ByClass[ingest.Warm]),
					fmtDelays(x.ByClass[ingest.Cold]), fmtDelays(x.All), fmt.Sprintf("%.0f", x.PerDay("")),
					fmt.Sprintf("%.2f", x.PerDay("")*x.Days/float64(max(x.Found, 1))), fmt.Sprint(x.NeverFound),
					pbench.Human(x.MaxGap), fmtMonth(x), fmt.Sprintf("%.0f", x.ActionsPerDay)})
			}
		}
		pbench.WriteTable(w, cols, rows)
		for _, c := range r.Comparisons {
			if c.Budget != b.Name {
				continue
			}
			fmt.Fprintf(w, "- %s: optimal's mean time is **%.2f×** tiers' at %.2f× its cost", c.World, c.TimeRatio, c.CostRatio)
			if c.HasLowCost {
				fmt.Fprintf(w, "; at %.2f× tiers' cost it is %.2f× tiers' time", c.LowCostRatio, c.LowTimeRatio)
			}
			verdict := map[bool]string{true: "goal met", false: "goal NOT met"}[c.Met()]
			if !c.Feasible {
				verdict = fmt.Sprintf("no policy can do better here: visiting every agent within PACER_MAX_STALENESS and fetching every swap needs %.0f requests a day, the budget gives %.0f", c.Need, c.Capacity)
			}
			fmt.Fprintf(w, " (%s).\n", verdict)
		}
	}
	fmt.Fprint(w, "\n### Goals\n\n")
	pbench.WriteGoals(w, r.agentGoals())
	fmt.Fprintf(w, "(%d simulations in %s.)\n\n", len(r.Results), r.Took.Round(time.Second))
}

// agentGoals checks the agents mode's report against the discovery goals.
func (r Report) agentGoals() []pbench.Goal {
	queued, met, total := 0, 0, 0
	var stale, dry []string
	largest := map[string]int{}
	for _, c := range r.Comparisons {
		if c.Feasible {
			total++
			met += map[bool]int{true: 1}[c.Met()]
			if !c.MaxGapOK {
				stale = append(stale, c.World+" on "+c.Budget)
			}
		}
	}
	for _, x := range r.Results {
		if c, ok := r.comparison(x.World, x.Budget); ok && c.Feasible {
			queued += x.NeverFound
		}
		if x.HasMonth && (x.DryAt != nil || x.MonthLeft <= 0) {
			dry = append(dry, x.World+" "+x.Strategy)
		}
		largest[x.World] = max(largest[x.World], x.CarriedBytes)
	}
	var detail []string
	lo, hi := largest[r.Worlds[0].Name], largest[r.Worlds[len(r.Worlds)-1].Name]
	for _, w := range r.Worlds {
		detail = append(detail, fmt.Sprintf("%s: %d bytes", w.Name, largest[w.Name]))
	}
	const s = "discovery"
	return []pbench.Goal{
		{Scenario: s, Goal: "0 swaps without a row at the end, where the budget keeps PACER_MAX_STALENESS", Got: fmt.Sprint(queued), Met: queued == 0},
		{Scenario: s, Goal: "optimal ≤ 0.65× tiers' mean time at equal cost, or tiers' time at ≤ 0.65× the cost",
			Got: fmt.Sprintf("met in %d of the %d worlds and budgets where the budget can keep PACER_MAX_STALENESS", met, total), Met: met == total},
		{Scenario: s, Goal: "no agent past PACER_MAX_STALENESS (where the budget can keep it)", Got: "exceeded in: " + orNone(stale), Met: len(stale) == 0},
		{Scenario: s, Goal: "the month never runs dry", Got: "ran dry: " + orNone(dry), Met: len(dry) == 0},
		// Ten times the agents may add a digit to a few counts, nothing more.
		{Scenario: s, Goal: "the workflow's carried state does not grow with the number of agents",
			Got: "the largest sweep result the workflow keeps: " + strings.Join(detail, ", "), Met: hi > 0 && hi-lo <= 16 && hi < 1024},
	}
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

// WriteChain prints the chain benchmark's report as Markdown, one table
// per budget.
func (r Report) WriteChain(w io.Writer) {
	fmt.Fprint(w, "## Results: the chain read once (tail) against per-agent optimal\n\n")
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
				pbench.Human(x.All.Max), fmt.Sprint(x.Missed), fmt.Sprint(x.NeverFound), fmt.Sprint(x.Gaps), fmtMonth(x)})
		}
		pbench.WriteTable(w, cols, rows)
	}
	fmt.Fprint(w, "### Goals\n\n")
	pbench.WriteGoals(w, r.chainGoals())
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

// chainGoals checks the chain report against issue 18's goals for the
// tail (and issue 26's month row).
func (r Report) chainGoals() []pbench.Goal {
	// Cost independent of agents: per budget and volume, the tail
	// reader's (and with the reconciler's) requests across sizes, on the
	// minute plans, where the tail reads every TailEvery. On the month
	// plan the tail reads as often as the month's pace allows once the
	// details are paid: every reader together costs the month's pace, at
	// every size, and that is what is compared there.
	var out []pbench.Goal
	type span struct{ lo, hi float64 }
	spreads := map[string]*span{}
	spread := func(key string, v float64) {
		s := spreads[key]
		if s == nil {
			s = &span{math.Inf(1), 0}
			spreads[key] = s
		}
		s.lo, s.hi = math.Min(s.lo, v), math.Max(s.hi, v)
	}
	for _, x := range r.Results {
		if x.Volume == 0 {
			continue
		}
		key := fmt.Sprintf("%s/%d", x.Budget, x.Volume)
		if x.HasMonth {
			spread("month "+key, x.PerDay(""))
		} else {
			spread("tail "+key, x.PerDay(ReaderTail))
			spread("with "+key, x.PerDay(ReaderTail)+x.PerDay(ReaderReconciler))
		}
		if x.World == "10000 agents" && x.Budget == Budgets[0].Name && x.Volume == 40_000 {
			share := x.PerDay("") / (float64(Budgets[0].PerMinute) * 24 * 60)
			out = append(out, pbench.Goal{Scenario: "chain", Goal: "seconds, not hours: 10,000 agents, keyless, 40,000 a day: p99 ≤ 30 s, mean ≤ 15 s, ≤ 25% of the budget, 0 missed",
				Got: fmt.Sprintf("mean %s, p99 %s, %.0f%% of the budget, %d missed, %d never found", pbench.Human(x.All.Mean), pbench.Human(x.All.P99), 100*share, x.Missed, x.NeverFound),
				Met: x.All.P99 <= 30*time.Second && x.All.Mean <= 15*time.Second && share <= 0.25 && x.Missed+x.NeverFound == 0})
		}
		if x.HasMonth {
			out = append(out, pbench.Goal{Scenario: "chain", Goal: fmt.Sprintf("the month-capped plan, %s, %d a day: 0 never found, p99 ≤ 5 min, never dry", x.World, x.Volume),
				Got: fmt.Sprintf("%d never found, p99 %s, month left %d", x.NeverFound, pbench.Human(x.All.P99), x.MonthLeft),
				Met: x.NeverFound == 0 && x.All.P99 <= 5*time.Minute && x.DryAt == nil && x.MonthLeft > 0})
		}
	}
	worst := map[string]float64{}
	for key, s := range spreads {
		kind := strings.Fields(key)[0]
		if s.lo > 0 {
			worst[kind] = math.Max(worst[kind], s.hi/s.lo-1)
		}
	}
	return append([]pbench.Goal{{Scenario: "chain", Goal: "cost independent of agents: the tail's requests a day differ by ≤ 10% across sizes at one chain volume",
		Got: fmt.Sprintf("minute plans: largest spread %.1f%% for the tail reader, %.1f%% with the reconciler (whose lists carry the agents' own swaps), details counted apart; month plan: every reader together %.1f%% (the month's pace; the tail takes what the details leave)",
			100*worst["tail"], 100*worst["with"], 100*worst["month"]),
		Met: worst["tail"] <= 0.10 && worst["month"] <= 0.10}}, out...)
}
