package bench

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/pacer-dev/pacer/internal/budget"
	"github.com/pacer-dev/pacer/internal/pacing"
)

// Result is one strategy's figures in one scenario.
type Result struct {
	Strategy string
	// CapacityUsed is the share of the hidden capacity used: successful
	// requests over what the windows held for us (the month's quota, pro
	// rata, where it binds first).
	CapacityUsed float64
	// Rejected is the share of requests refused with a 429.
	Rejected float64
	Requests int
	Runs     int
	// Steps is the time each step of the hidden limit took to re-converge.
	Steps []Step
	// Staleness of the prices over the horizon, sampled every minute for
	// every token; HasStaleness is false without a prices task.
	HasStaleness       bool
	StaleP50, StaleP99 time.Duration
	// Month is the month quota at the horizon (the month's end in the
	// month scenario).
	Month
	// ActionsPerDay and EventsPerDay price the runs by pacing.Cost, with
	// one timer per wake-up; FloorPerDay is what the tasks' schedules
	// cannot go below, counted from the schedules alone (scheduleFloor),
	// not from the runs. EventsPerTick is the history one run writes.
	ActionsPerDay float64
	FloorPerDay   float64
	EventsPerTick int
	EventsPerDay  float64
	// FinishedAfter is when a finite crawl was done.
	FinishedAfter *time.Duration
	// PerTask splits the actions a day of a scenario with several tasks.
	PerTask string
	// ReducedRuns is what one bad run cost: the runs its cadence had room
	// for after it that did not happen on time and in full.
	ReducedRuns int
}

// Step is one change of the hidden limit and how long the strategy took to
// settle: the time from the step to the first minute from which every minute
// until the next step used at least 90% of the capacity with no more than 1%
// of it refused. Converged is false when that never happened.
type Step struct {
	At        time.Duration
	After     time.Duration
	Converged bool
}

// Outcome is a scenario's results, one per strategy.
type Outcome struct {
	Scenario Scenario
	Results  []Result
}

// Run simulates every strategy of a scenario.
func Run(sc Scenario) Outcome {
	out, strategies := Outcome{Scenario: sc}, sc.Strategies
	if strategies == nil {
		strategies = []Strategy{FixedCron(0), TokenBucket(), Seed(), Pacer()}
	}
	for _, st := range strategies {
		sims := make([]*taskSim, len(sc.Tasks))
		for i, t := range sc.Tasks {
			sims[i] = newTaskSim(t, start, sc.Duration)
			sims[i].simulate(st.build(t, start))
		}
		r := measure(sims, pacing.DefaultCost())
		r.Strategy = st.Name
		out.Results = append(out.Results, r)
	}
	return out
}

// RunAll simulates every scenario.
func RunAll() []Outcome {
	var all []Outcome
	for _, sc := range Scenarios() {
		all = append(all, Run(sc))
	}
	return all
}

// measure turns the tasks' tallies into a result.
func measure(sims []*taskSim, cost pacing.Cost) Result {
	var r Result
	var used, capacity float64
	var actions, days float64
	perTask := make([]float64, len(sims))
	wakeups := map[int64]bool{}
	for i, s := range sims {
		r.Runs += len(s.runs)
		minutes := len(s.okPerMinute)
		if s.finishedAt != nil {
			minutes = min(minutes, int((s.finishedAt.Sub(s.start)+time.Minute-1)/time.Minute))
		}
		span := time.Duration(minutes) * time.Minute
		// A walk does a fixed round of work; the capacity it leaves unused
		// is not a goal, so it does not count.
		c, walk := 0.0, s.task.Work.Kind == Walk
		for m := range minutes {
			p := s.task.Hidden.at(time.Duration(m) * time.Minute)
			if !walk {
				c += float64(p.PerMinute - p.Noisy)
				used += float64(s.okPerMinute[m])
			}
		}
		if pm := s.task.Hidden.PerMonth; pm > 0 {
			monthStart, monthEnd := budget.MonthOf(s.start)
			c = min(c, float64(pm)*float64(span)/float64(monthEnd.Sub(monthStart)))
		}
		capacity += c
		for _, run := range s.runs {
			r.Requests += run.requests
			r.Rejected += float64(run.rejected)
			hb := cost.Heartbeats(run.end.Sub(run.start))
			perTask[i] += float64(1 + hb)
			// One timer wakes the workflow for every task due then.
			wakeups[run.start.Unix()] = true
		}
		perTask[i] += float64(len(s.runs)*cost.EventsPerRun) / float64(cost.ContinueAsNewEvents)
		actions += perTask[i]
		days = max(days, span.Hours()/24)
		if s.finishedAt != nil {
			d := s.finishedAt.Sub(s.start)
			r.FinishedAfter = &d
		}
		if s.task.Work.Kind == Prices && !r.HasStaleness {
			r.HasStaleness = true
			r.StaleP50, r.StaleP99 = staleness(s)
		}
		if s.task.Hidden.PerMonth > 0 && !r.HasMonth {
			r.Month = s.up.Month()
		}
	}
	r.Steps = steps(sims[0])
	r.ReducedRuns = reducedRuns(sims[0])
	if capacity > 0 {
		r.CapacityUsed = used / capacity
	}
	if r.Requests > 0 {
		r.Rejected /= float64(r.Requests)
	}
	actions += float64(len(wakeups))
	r.ActionsPerDay, r.FloorPerDay = actions/days, scheduleFloor(sims)/days
	if len(sims) > 1 {
		for i, s := range sims {
			r.PerTask += fmt.Sprintf("%s %s + ", s.task.Name, Count(perTask[i]/days))
		}
		r.PerTask += "timers " + Count(float64(len(wakeups))/days)
	}
	r.EventsPerTick = cost.EventsPerRun
	r.EventsPerDay = float64(r.Runs*cost.EventsPerRun) / days
	return r
}

// scheduleFloor is the Temporal actions the tasks' schedules need over
// the horizon, counted from the schedules themselves (every CronEvery from
// the start) and from nothing a strategy did: one timer per instant at
// which some task is due (tasks due together share one wake-up) and one
// activity per task due.
func scheduleFloor(sims []*taskSim) float64 {
	instants, activities := map[time.Time]bool{}, 0
	for _, s := range sims {
		for at := s.start; at.Before(s.end) && s.task.CronEvery > 0; at = at.Add(s.task.CronEvery) {
			instants[at] = true
			activities++
		}
	}
	return float64(len(instants) + activities)
}

// staleness is the p50 and p99 age of the task's prices, sampled at every
// minute for every token. The cache starts fresh: a token never refreshed
// is as old as the scenario.
func staleness(s *taskSim) (p50, p99 time.Duration) {
	minutes := len(s.okPerMinute)
	hist := make([]int, minutes+1) // by age in whole minutes
	for _, times := range s.refreshedAt {
		next, last := 0, s.start
		for m := range minutes {
			at := s.start.Add(time.Duration(m) * time.Minute)
			for next < len(times) && !times[next].After(at) {
				last = times[next]
				next++
			}
			hist[int(at.Sub(last)/time.Minute)]++
		}
	}
	return percentile(hist, 0.50), percentile(hist, 0.99)
}

// percentile is the smallest age (in minutes) at or below which a share p
// of the samples lie.
func percentile(hist []int, p float64) time.Duration {
	total := 0
	for _, n := range hist {
		total += n
	}
	want := int(math.Ceil(p * float64(total)))
	seen := 0
	for age, n := range hist {
		if seen += n; seen >= want {
			return time.Duration(age) * time.Minute
		}
	}
	return time.Duration(len(hist)) * time.Minute
}

// steps measures the re-convergence after each change of the first task's
// hidden limits.
func steps(s *taskSim) []Step {
	phases := s.task.Hidden.Phases
	var out []Step
	for i := 1; i < len(phases); i++ {
		from := int(phases[i].At / time.Minute)
		to := len(s.okPerMinute)
		if i+1 < len(phases) {
			to = int(phases[i+1].At / time.Minute)
		}
		st := Step{At: phases[i].At}
		// Walk back from the phase's end while every minute is on target.
		settled := to
		for m := to - 1; m >= from && s.onTarget(m); m-- {
			settled = m
		}
		if settled < to {
			st.Converged, st.After = true, time.Duration(settled-from)*time.Minute
		}
		out = append(out, st)
	}
	return out
}

// reducedRuns counts what the first bad run (no request answered well,
// some failed) cost: of the runs the configured cadence has room for
// between it and the horizon, those that did not happen on time and as
// large as the last run before it.
func reducedRuns(s *taskSim) int {
	runs := s.runs
	bad := slices.IndexFunc(runs, func(r runResult) bool { return r.ok == 0 && r.failed > 0 })
	if bad < 1 {
		return 0
	}
	every := s.task.CronEvery
	slots := int(s.end.Sub(runs[bad].start.Add(time.Second)) / every)
	normal, full := runs[bad-1].requests, 0
	for i := bad + 1; i < len(runs); i++ {
		onTime := runs[i].start.Sub(runs[i-1].start) <= every+time.Second
		if onTime && runs[i].requests >= normal {
			full++
		}
	}
	return max(slots-full, 0)
}

// onTarget is a minute that used at least 90% of its capacity with at most
// 1% of it refused.
func (s *taskSim) onTarget(m int) bool {
	p := s.task.Hidden.at(time.Duration(m) * time.Minute)
	c := p.PerMinute - p.Noisy
	return s.okPerMinute[m]*10 >= c*9 && s.rejectedPerMinute[m]*100 <= c
}

// WriteTables writes one Markdown table per scenario.
func WriteTables(w io.Writer, outcomes []Outcome) {
	cols := []string{"strategy", ">capacity used", ">rejected", ">re-converge", ">staleness p50 / p99", ">month left",
		">actions/day", ">events/tick (per day)", "vs baseline"}
	for _, o := range outcomes {
		fmt.Fprintf(w, "### %s\n\n%s.\n\n", o.Scenario.Name, o.Scenario.About)
		var rows [][]string
		for _, r := range o.Results {
			rows = append(rows, []string{r.Strategy, Pct(r.CapacityUsed), Pct(r.Rejected), reconverge(r.Steps), stale(r), r.Month.Cell(),
				Count(r.ActionsPerDay), fmt.Sprintf("%d (%s)", r.EventsPerTick, Count(r.EventsPerDay)), versus(r, o.Results[0])})
		}
		WriteTable(w, cols, rows)
		rs := o.Results
		notes := []string{note("Crawl done after: ", ", ", rs, func(r Result) (string, bool) {
			if r.FinishedAfter == nil {
				return "", false
			}
			return " " + Human(*r.FinishedAfter), true
		})}
		if notes[0] != "" {
			notes[0] += note(" Not done within the horizon: ", ", ", rs, func(r Result) (string, bool) { return "", r.FinishedAfter == nil })
		}
		if o.Scenario.Blip {
			notes = append(notes, note("Runs at a reduced pace after the bad run (of the runs the cadence has room for until the horizon, those not on time or not in full): ",
				", ", rs, func(r Result) (string, bool) { return fmt.Sprintf(" %d", r.ReducedRuns), true }))
		}
		notes = append(notes, note("Actions/day by task: ", "; ", rs, func(r Result) (string, bool) { return ": " + r.PerTask, r.PerTask != "" }))
		for _, n := range notes {
			if n != "" {
				fmt.Fprintf(w, "%s\n\n", n)
			}
		}
	}
}

func reconverge(steps []Step) string {
	if len(steps) == 0 {
		return "—"
	}
	parts := make([]string, len(steps))
	for i, s := range steps {
		parts[i] = "never"
		if s.Converged {
			parts[i] = Human(s.After)
		}
	}
	return strings.Join(parts, " / ")
}

func stale(r Result) string {
	if !r.HasStaleness {
		return "—"
	}
	return Human(r.StaleP50) + " / " + Human(r.StaleP99)
}

// versus compares a result with the baseline's (the scenario's first
// strategy): how much more capacity, how much fresher (p99), how many times
// the actions.
func versus(r, base Result) string {
	if r.Strategy == base.Strategy {
		return "baseline"
	}
	ratio := func(v, base float64) string {
		if base == 0 {
			return "—"
		}
		return "×" + plain(v/base)
	}
	parts := []string{"capacity " + ratio(r.CapacityUsed, base.CapacityUsed)}
	if r.HasStaleness && base.HasStaleness {
		parts = append(parts, "p99 staleness ÷"+plain(float64(base.StaleP99)/float64(max(r.StaleP99, time.Minute))))
	}
	return strings.Join(append(parts, "actions "+ratio(r.ActionsPerDay, base.ActionsPerDay)), ", ")
}

// note is lead, then the strategies that have a part, each with it,
// joined by sep ("" when none has).
func note(lead, sep string, rs []Result, part func(Result) (string, bool)) string {
	var parts []string
	for _, r := range rs {
		if p, ok := part(r); ok {
			parts = append(parts, r.Strategy+p)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return lead + strings.Join(parts, sep) + "."
}
