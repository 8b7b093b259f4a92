package schedule

import (
	"time"

	"github.com/pacer-dev/pacer/internal/cron"
)

// Reasons the decision gives (SPEC §3.6): one word for why a task is not
// running sooner than its Decision.At, or why it starts now.
const (
	// A task that starts now: due on its own, asked for by an operator, or
	// woken by a hint (the sweep).
	ReasonDue       = "due"
	ReasonRequested = "requested"
	ReasonHinted    = "hinted"
	// A task that waits.
	ReasonRunning  = "running"
	ReasonCadence  = "cadence"
	ReasonBackoff  = "backoff"
	ReasonBreaker  = "breaker"
	ReasonBudget   = "budget"
	ReasonPaused   = "paused"
	ReasonCron     = "cron"
	ReasonIdle     = "idle"
	ReasonStopping = "stopping"
	// ReasonHeld: due, but the run holds scheduled starts until the runs in
	// flight end (its history is long); their end wakes the loop.
	ReasonHeld = "held"
	// ReasonBroken: the task's scheduling code panicked (Task.Broken).
	ReasonBroken = "broken"
)

// HintGap bounds hinted wakes: a hinted sweep starts at most once per
// HintGap after its last start, however many hints arrive. Senders debounce
// per agent; this bounds the whole stream.
const HintGap = time.Second

// Pause is an operator's pause window, of one task or (Task "") of all.
// The windows live in the scheduler's carried state and memo, so a restart
// never changes what was paused.
type Pause struct {
	Task  string    `json:"task,omitempty"`
	From  time.Time `json:"from"`
	Until time.Time `json:"until"`
}

// View is everything the decision reads besides the task itself, all of it
// carried state (or derived from the carried config: the compiled cron
// schedules).
type View struct {
	// Tasks are all the scheduler's tasks, in their fixed order: wake-ups
	// align across them.
	Tasks  []*Task
	Pauses []Pause
	// Crons are the compiled schedules of the cron tasks, by task.
	Crons map[string]*cron.Schedule
	// Stopping: a stop was asked for; no scheduled run starts.
	Stopping bool
	// Holding: scheduled starts wait for the runs in flight (holdStarts).
	Holding bool
	// Isolated keeps each task's arithmetic to its own decision: aligning
	// one task to another never lets the other's panic out (the workflow's
	// revision 3; issue 41.2). Without it a panic in rollup's cron
	// arithmetic surfaced in tenero's decision and fenced tenero off too.
	Isolated bool
	// Fault, when set (tests only), is called as a task's own arithmetic
	// starts, with the instant it decides for: where a test plants a panic.
	Fault func(task string, at time.Time)
}

// Decision is when a task next starts on its own and the one reason it
// does not start sooner.
type Decision struct {
	// At is when the task next starts (now or later); zero when nothing
	// but a message or another run's end can make it start (idle,
	// stopping, held, or running without a known next time).
	At     time.Time
	Reason string
	// Start says the task starts now.
	Start bool
	// Wake says the scheduler's one timer should fire at At: false when
	// the task starts now, or when something other than time (a run's end,
	// a message) will make it start.
	Wake bool
	// The inputs behind the answer, for the status document: the back-off
	// an upstream set, the open breaker's probe, month pacing, the pause
	// in force (task or global).
	Backoff, Breaker, Budget, PausedUntil *time.Time
}

// Decide is the one place that reads a task's pacing, back-off, breaker,
// pause, hint and cron inputs and says when it next runs and why (SPEC
// §3.6). The loop starts a task when Start is set, the timer is armed for
// the earliest At with Wake, and the status document, the CLI and the
// operator's page show At and Reason. It is pure: time is an argument.
func (v View) Decide(t *Task, now time.Time) Decision {
	d := v.decide(t, now)
	if d.Reason == ReasonCadence || d.Reason == ReasonCron {
		d.At = v.align(t, d.At)
	}
	return d
}

func (v View) decide(t *Task, now time.Time) Decision {
	d := Decision{Backoff: later(t.NextRunAfter, now), Breaker: t.BreakerUntil, Budget: later(t.PacedUntil, now)}
	paused, pausedOK := v.pausedAt(t.Name, now)
	if pausedOK {
		d.PausedUntil = &paused
	}
	switch {
	case t.Broken != nil:
		d.Reason = ReasonBroken
		return d
	case t.Running():
		// Its next start is decided when its run ends, which wakes the
		// scheduler: a prediction its end moves would be a timer for nothing.
		d.Reason = ReasonRunning
		return d
	case t.Requested:
		d.At, d.Reason, d.Start = now, ReasonRequested, true
		return d
	case v.Stopping:
		d.Reason = ReasonStopping
		return d
	}
	due, reason, ok := v.due(t, now)
	if !ok {
		d.Reason = ReasonIdle
		return d
	}
	if t.HintedAt != nil {
		// A hint overrides cadence, back-off, breaker and budget, never a
		// pause; at most one hinted start per HintGap.
		due, reason = *t.HintedAt, ReasonHinted
		if t.LastRunAt != nil && due.Before(t.LastRunAt.Add(HintGap)) {
			due = t.LastRunAt.Add(HintGap)
		}
	}
	if until, ok := v.pausedAt(t.Name, due); ok {
		due, reason = until, ReasonPaused
	} else if pausedOK && !due.After(now) {
		due, reason = paused, ReasonPaused
	}
	switch {
	case due.After(now):
		d.At, d.Reason, d.Wake = due, reason, true
	case v.Holding:
		d.Reason = ReasonHeld
	default:
		d.At, d.Start = now, true
		d.Reason = ReasonDue
		if reason == ReasonHinted {
			d.Reason = ReasonHinted
		}
	}
	return d
}

// due is when the task may next run by its own inputs (pause aside), and
// what that time comes from; ok is false for a task that has nothing to
// do until something wakes it.
func (v View) due(t *Task, now time.Time) (time.Time, string, bool) {
	if v.Fault != nil {
		v.Fault(t.Name, now)
	}
	var due time.Time
	reason := ReasonCadence
	if sched := v.Crons[t.Name]; sched != nil && t.Cron != nil {
		if len(t.Cron.Queue) == 0 {
			next, ok := sched.Wake(t.Name, *t.Cron, now)
			if !ok {
				return time.Time{}, ReasonIdle, false
			}
			due, reason = next, ReasonCron
		}
	} else {
		if t.Dormant {
			return time.Time{}, ReasonIdle, false
		}
		if t.LastRunAt != nil {
			due = t.LastRunAt.Add(time.Duration(t.Every))
		}
		if t.NextDueAt != nil && t.NextDueAt.After(due) {
			due = *t.NextDueAt
		}
	}
	for _, c := range []struct {
		at     *time.Time
		reason string
	}{{t.NextRunAfter, ReasonBackoff}, {t.BreakerUntil, ReasonBreaker}, {t.PacedUntil, ReasonBudget}} {
		if c.at != nil && c.at.After(due) {
			due, reason = *c.at, c.reason
		}
	}
	return due, reason, true
}

// align moves a task's wake-up onto another task's when that one comes
// soon after (within a tenth of the task's cadence): one timer then starts
// both runs (tenero joins the sweep's minute grid). It only ever delays.
func (v View) align(t *Task, at time.Time) time.Time {
	slack := time.Duration(t.Every) / 10
	if slack <= 0 || at.IsZero() {
		return at
	}
	best := at
	for _, o := range v.Tasks {
		if o == t || o.Running() || o.Requested {
			continue
		}
		od, ok := v.decideOther(o, at)
		if !ok {
			continue
		}
		if od.Reason != ReasonCadence && od.Reason != ReasonCron {
			continue
		}
		if od.At.After(at) && !od.At.After(at.Add(slack)) && (best.Equal(at) || od.At.Before(best)) {
			best = od.At
		}
	}
	return best
}

// decideOther is another task's decision at at, for aligning to it. With
// Isolated a panic in that task's arithmetic is not this task's: ok is
// false, and the other task's own decision, fenced where it runs, meets
// the panic again and fences that task alone.
func (v View) decideOther(o *Task, at time.Time) (d Decision, ok bool) {
	if v.Isolated {
		defer func() {
			if r := recover(); r != nil {
				d, ok = Decision{}, false
			}
		}()
	}
	return v.decide(o, at), true
}

// Wake is when the one timer should fire: the earliest At of the tasks
// that want a timer. ok is false when none does (every task waits for a
// message or a run's end).
func (v View) Wake(now time.Time) (wake time.Time, ok bool) {
	for _, at := range v.Wakes(now) {
		if !ok || at.Before(wake) {
			wake, ok = at, true
		}
	}
	return wake, ok
}

// Wakes are the instants tasks want a timer for, one per task that does
// (never before now), in the tasks' order: a timer armed for one of them
// still stands; Wake is the earliest.
func (v View) Wakes(now time.Time) []time.Time {
	var out []time.Time
	for _, t := range v.Tasks {
		d := v.Decide(t, now)
		if !d.Wake {
			continue
		}
		out = append(out, notBefore(d.At, now))
	}
	return out
}

// notBefore is at, or now when at lies before it.
func notBefore(at, now time.Time) time.Time {
	if at.Before(now) {
		return now
	}
	return at
}

// PausedUntil is the end of the pause in force at now for the task ("" for
// the scheduler as a whole).
func (v View) PausedUntil(task string, now time.Time) (time.Time, bool) {
	return v.pausedAt(task, now)
}

// pausedAt reports whether a pause of the task (or of all) covers at, and
// until when, following windows that touch.
func (v View) pausedAt(task string, at time.Time) (time.Time, bool) {
	until, found := at, false
	for changed := true; changed; {
		changed = false
		for _, p := range v.Pauses {
			if (p.Task == "" || p.Task == task) && !until.Before(p.From) && until.Before(p.Until) {
				until, found, changed = p.Until, true, true
			}
		}
	}
	return until, found
}

// later is at when it lies after now, else nil: a back-off that has
// passed is no reason.
func later(at *time.Time, now time.Time) *time.Time {
	if at == nil || !at.After(now) {
		return nil
	}
	return at
}
