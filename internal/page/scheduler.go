package page

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/workflows"
)

// The run strip covers the last day in slots of a quarter of an hour.
const (
	stripSlot  = 15 * time.Minute
	stripSlots = 96
)

// knownTasks are the tasks of SPEC §3, in the order the page lists them;
// the queries ask for these (and index scans stay per task).
var knownTasks = []string{pacer.TaskTenero, pacer.TaskSweep, pacer.TaskRollup, pacer.TaskDeliver}

// SchedulerSection is the scheduler: its state, one row per task, and the
// day's runs.
type SchedulerSection struct {
	Section
	// State is running, paused, stopped or unknown (no status answer).
	State     string
	StateNote string
	Level     Level
	Tasks     []TaskRow
	Strip     Strip
	// HistoryNote is the status's generation and history length.
	HistoryNote string
}

// TaskRow is one task in the scheduler table.
type TaskRow struct {
	Name     string
	Schedule string
	LastRun  Moment
	// LastOutcome is the last finished run's status (and error class).
	LastOutcome string
	LastLevel   Level
	LastTook    string
	NextRun     Moment
	// Reason is the scheduler's one word for why the task is not running
	// now (its status document's waiting).
	Reason   string
	Breaker  string
	Level    Level
	Failures int
	Runs24h  int
}

// Strip is the day's runs: a row of slots per task, each coloured by the
// worst outcome in it.
type Strip struct {
	W, H   float64
	Rows   []StripRow
	XTicks []Tick
}

// StripRow is one task's slots.
type StripRow struct {
	Task  string
	Y     float64
	Cells []Bar
}

type slotCount struct {
	task   string
	slot   int
	status string
	n      int
}

type lastRun struct {
	status     string
	started    *time.Time
	finished   time.Time
	errorClass string
}

type schedulerData struct {
	slots   []slotCount
	last    map[string]lastRun
	stripAt time.Time // the first slot's start
}

// stripSQL counts the occurrences of each task per slot and status, from
// the primary key (task, nominal_at): one index range per task.
const stripSQL = `
select task, floor(extract(epoch from nominal_at - $2) / $3)::int as slot, status, count(*)
from task_runs
where task = any($1) and nominal_at >= $2 and nominal_at < $4
group by 1, 2, 3`

// lastRunSQL reads each task's newest finished run through
// task_runs_finished_idx: one index probe per task.
const lastRunSQL = `
select t.task, r.status, r.started_at, r.finished_at, coalesce(r.error_class, '')
from unnest($1::text[]) as t(task)
cross join lateral (
    select status, started_at, finished_at, error_class from task_runs
    where task = t.task and finished_at is not null
    order by finished_at desc limit 1
) r`

func loadScheduler(ctx context.Context, pool *pgxpool.Pool, now time.Time) (schedulerData, error) {
	d := schedulerData{last: map[string]lastRun{}}
	d.stripAt = now.Truncate(stripSlot).Add(-(stripSlots - 1) * stripSlot)
	end := d.stripAt.Add(stripSlots * stripSlot)
	rows, _ := pool.Query(ctx, stripSQL, knownTasks, d.stripAt, stripSlot.Seconds(), end)
	var err error
	d.slots, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (slotCount, error) {
		var c slotCount
		return c, r.Scan(&c.task, &c.slot, &c.status, &c.n)
	})
	if err != nil {
		return d, fmt.Errorf("run strip: %w", err)
	}
	rows, _ = pool.Query(ctx, lastRunSQL, knownTasks)
	type row struct {
		task string
		lastRun
	}
	last, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
		var x row
		return x, r.Scan(&x.task, &x.status, &x.started, &x.finished, &x.errorClass)
	})
	if err != nil {
		return d, fmt.Errorf("last runs: %w", err)
	}
	for _, x := range last {
		d.last[x.task] = x.lastRun
	}
	return d, nil
}

// outcomeRank orders run statuses by how much an operator needs to see
// them: a slot shows its worst.
var outcomeRank = map[string]int{
	pacer.RunFailed: 6, pacer.RunRunning: 5, pacer.RunSkipped: 4, pacer.RunCoalesced: 3,
	pacer.RunOK: 2, pacer.RunScheduled: 1,
}

func buildScheduler(d schedulerData, st *workflows.Status, now time.Time) SchedulerSection {
	s := SchedulerSection{State: "unknown", Level: LevelBad,
		StateNote: "the scheduler's status is unavailable (Temporal unreachable, or no scheduler running)"}
	if st != nil {
		s.State, s.StateNote, s.Level = "running", fmt.Sprintf("workflow %s, run %s", st.WorkflowID, st.RunID), LevelOK
		switch {
		case st.Stopping != nil:
			// A stopped scheduler still answers its status query, with the
			// state it stopped in; workers leave it stopped until pacer start.
			s.State, s.Level = "stopped", LevelBad
			if running(st) {
				s.State = "stopping"
			}
			s.StateNote = "asked to stop (" + cmp.Or(st.Stopping.Reason, "no reason given") + "); pacer start starts it again with its state"
		case st.PausedUntil != nil && st.PausedUntil.After(now):
			s.State, s.Level = "paused", LevelWarn
			s.StateNote = "until " + stamp(*st.PausedUntil) + " (" + relative(*st.PausedUntil, now) + "); explicit refreshes still run"
		}
		s.HistoryNote = fmt.Sprintf("generation %s, %s history events", count(st.Generation), count(st.HistoryLength))
	}

	// Tasks: those the status knows, those with runs, in the contract's order.
	names := map[string]bool{}
	if st != nil {
		for name := range st.Tasks {
			names[name] = true
		}
	}
	for _, c := range d.slots {
		names[c.task] = true
	}
	for name := range d.last {
		names[name] = true
	}
	order := func(a, b string) int {
		ia, ib := slices.Index(knownTasks, a), slices.Index(knownTasks, b)
		if ia < 0 {
			ia = len(knownTasks)
		}
		if ib < 0 {
			ib = len(knownTasks)
		}
		return cmp.Or(cmp.Compare(ia, ib), strings.Compare(a, b))
	}
	tasks := make([]string, 0, len(names))
	for name := range names {
		tasks = append(tasks, name)
	}
	slices.SortFunc(tasks, order)

	runs := map[string]int{}
	for _, c := range d.slots {
		runs[c.task] += c.n
	}
	for _, name := range tasks {
		row := TaskRow{Name: name, Schedule: "—", Reason: "—", Breaker: "—", Level: LevelNone, LastLevel: LevelNone,
			LastRun: Moment{Rel: "—"}, NextRun: Moment{Rel: "—"}, LastOutcome: "no run yet", Runs24h: runs[name]}
		if lr, ok := d.last[name]; ok {
			row.LastRun = moment(&lr.finished, now)
			row.LastOutcome, row.LastLevel = lr.status, LevelOK
			if lr.status != pacer.RunOK {
				row.LastLevel = LevelBad
			}
			if lr.errorClass != "" {
				row.LastOutcome += " (" + lr.errorClass + ")"
			}
			if lr.started != nil {
				row.LastTook = span(lr.finished.Sub(*lr.started))
			}
		}
		if st != nil {
			if ts, ok := st.Tasks[name]; ok {
				row.Schedule = taskSchedule(ts)
				row.NextRun = moment(ts.NextDueAt, now)
				row.Reason = cmp.Or(ts.Waiting, "—")
				row.Failures = st.ConsecutiveFailures[name]
				row.Breaker, row.Level = "closed", LevelOK
				if ts.Breaker.Open {
					row.Breaker, row.Level = "OPEN", LevelBad
					if ts.Breaker.ProbeAt != nil {
						row.Breaker += ", probes " + relative(*ts.Breaker.ProbeAt, now)
					}
				} else if row.Failures > 0 {
					row.Breaker, row.Level = fmt.Sprintf("closed, %d of %d failures", row.Failures, ts.Breaker.Threshold), LevelWarn
				}
			}
		}
		if name == pacer.TaskSweep && st != nil {
			row.Reason = sweepLag(st.LastSweepResult, row.Reason)
		}
		s.Tasks = append(s.Tasks, row)
	}
	s.Strip = buildStrip(tasks, d)
	return s
}

// sweepLag adds the tail's lag behind the chain's head (SPEC §5.0) and its
// open gaps to the sweep's reason, when the sweep reads the chain.
func sweepLag(res *pacer.SweepResult, reason string) string {
	if res == nil {
		return reason
	}
	tail, ok := res.Readers["tail"]
	if !ok {
		return reason
	}
	lag := "tail at the chain's head"
	if tail.LagSeconds >= 1 {
		lag = fmt.Sprintf("tail %s behind the chain's head", span(time.Duration(tail.LagSeconds*float64(time.Second))))
	}
	if tail.Source == "contracts" {
		lag += ", reading the allowlisted contracts' lists (the month cannot pay the feed)"
	}
	if res.OpenGaps > 0 {
		lag += fmt.Sprintf(", %d gaps open", res.OpenGaps)
	}
	if reason == "—" || reason == "" {
		return lag
	}
	return reason + "; " + lag
}

// running reports whether any task of st is running.
func running(st *workflows.Status) bool {
	for _, t := range st.Tasks {
		if t.Running {
			return true
		}
	}
	return false
}

// taskSchedule is a task's schedule for people: its cadence, or its cron
// spec with zone and catch-up and the occurrences it missed, or, for a
// task without one, when it runs.
func taskSchedule(ts workflows.TaskStatus) string {
	switch spec := ts.Schedule; {
	case spec != nil && spec.IsCron():
		out := fmt.Sprintf("cron %s (%s, %s)", spec.Cron, cmp.Or(spec.TZ, "UTC"), spec.Catchup)
		if ts.Missed > 0 {
			out += fmt.Sprintf("; %d missed", ts.Missed)
		}
		return out
	case ts.OnDemand():
		return "while deliveries are due"
	}
	return schedule(ts.Every)
}

// schedule is a task's cadence for people: "every 5m" from "5m0s".
func schedule(every string) string {
	d, err := time.ParseDuration(every)
	if err != nil || d <= 0 {
		return cmp.Or(every, "—")
	}
	return "every " + span(d)
}

const (
	stripW, stripRowH, stripLabelW = 960.0, 18.0, 70.0
)

func buildStrip(tasks []string, d schedulerData) Strip {
	byCell := map[string]map[int]map[string]int{}
	for _, c := range d.slots {
		if c.slot < 0 || c.slot >= stripSlots {
			continue
		}
		if byCell[c.task] == nil {
			byCell[c.task] = map[int]map[string]int{}
		}
		if byCell[c.task][c.slot] == nil {
			byCell[c.task][c.slot] = map[string]int{}
		}
		byCell[c.task][c.slot][c.status] += c.n
	}
	cellW := (stripW - stripLabelW) / stripSlots
	s := Strip{W: stripW, H: float64(len(tasks))*stripRowH + 16}
	for i, task := range tasks {
		row := StripRow{Task: task, Y: float64(i) * stripRowH}
		for slot := range stripSlots {
			from := d.stripAt.Add(time.Duration(slot) * stripSlot)
			counts := byCell[task][slot]
			cell := Bar{X: stripLabelW + float64(slot)*cellW, Y: row.Y + 2, W: cellW - 1, H: stripRowH - 4, Class: "empty"}
			if len(counts) == 0 {
				continue
			}
			statuses := make([]string, 0, len(counts))
			for status := range counts {
				statuses = append(statuses, status)
			}
			slices.SortFunc(statuses, func(a, b string) int { return cmp.Compare(outcomeRank[b], outcomeRank[a]) })
			cell.Class = "run-" + statuses[0]
			parts := make([]string, len(statuses))
			for j, status := range statuses {
				parts[j] = fmt.Sprintf("%s %s", count(counts[status]), status)
			}
			cell.Title = fmt.Sprintf("%s %s–%s UTC: %s", task, from.UTC().Format("15:04"),
				from.Add(stripSlot).UTC().Format("15:04"), strings.Join(parts, ", "))
			row.Cells = append(row.Cells, cell)
		}
		s.Rows = append(s.Rows, row)
	}
	for slot := 0; slot < stripSlots; slot += 16 { // every 4 hours
		from := d.stripAt.Add(time.Duration(slot) * stripSlot)
		s.XTicks = append(s.XTicks, Tick{X: stripLabelW + float64(slot)*cellW, Y: s.H - 3, Text: from.UTC().Format("15:04"), Anchor: "start"})
	}
	s.XTicks = append(s.XTicks, Tick{X: stripW, Y: s.H - 3, Text: "now", Anchor: "end"})
	return s
}
