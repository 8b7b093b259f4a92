package schedule

import "time"

// The decision of runs that began before the one-decision gate
// (workflows' changeOneDecision), kept as it was so that they replay.
// Decide replaced it; nothing else may read these inputs.

// DueAt is the earliest moment the task may run on its own: its cadence after
// the last start, and not before any back-off. A task that never ran is due at
// once (the zero time).
func (t *Task) DueAt() time.Time {
	due, _ := t.Due()
	return due
}

// Why a task is not due yet: what its due time comes from.
const (
	WaitCadence = "cadence" // the task's cadence (or its own next due work)
	WaitBackoff = "backoff" // an upstream said to wait (a spent quota)
	WaitBreaker = "breaker" // the circuit breaker is open until its probe
	WaitPacing  = "pacing"  // the upstream's budget lacks the run's requests
	WaitPaused  = "paused"  // an operator's pause
	WaitIdle    = "idle"    // dormant: nothing to do until something wakes it
)

// Due is DueAt and the reason it is then, one of the Wait… words: the
// latest of the task's cadence, its own next due work, a back-off, an open
// breaker and month pacing.
func (t *Task) Due() (time.Time, string) {
	if t.Dormant {
		return time.Time{}, WaitIdle
	}
	var due time.Time
	reason := WaitCadence
	if t.LastRunAt != nil {
		due = t.LastRunAt.Add(time.Duration(t.Every))
	}
	for _, c := range []struct {
		at     *time.Time
		reason string
	}{{t.NextDueAt, WaitCadence}, {t.NextRunAfter, WaitBackoff}, {t.BreakerUntil, WaitBreaker}, {t.PacedUntil, WaitPacing}} {
		if c.at != nil && c.at.After(due) {
			due, reason = *c.at, c.reason
		}
	}
	return due, reason
}

// ShouldStart reports whether the task should start now: requested
// explicitly, or due and not paused. A running task never starts twice.
func (t *Task) ShouldStart(now time.Time, pausedUntil *time.Time) bool {
	if t.Running() {
		return false
	}
	if t.Requested {
		return true
	}
	return !t.Dormant && !Paused(now, pausedUntil) && !now.Before(t.DueAt())
}

// Paused reports whether a pause is in force at now.
func Paused(now time.Time, pausedUntil *time.Time) bool {
	return pausedUntil != nil && now.Before(*pausedUntil)
}

// NextWake is the earliest moment any idle task becomes startable, taking a
// pause into account. ok is false when there is nothing to wait for (every
// task is running).
func NextWake(now time.Time, pausedUntil *time.Time, tasks []*Task) (wake time.Time, ok bool) {
	for _, t := range tasks {
		if t.Running() || t.Dormant && !t.Requested {
			continue
		}
		at := t.DueAt()
		if !t.Requested && Paused(now, pausedUntil) && pausedUntil.After(at) {
			at = *pausedUntil
		}
		if t.Requested || at.Before(now) {
			at = now
		}
		if !ok || at.Before(wake) {
			wake, ok = at, true
		}
	}
	return wake, ok
}

// NextWakeCounting is NextWake counting running tasks too: the moment a
// running task will be due again is known when it starts (its cadence), so
// the one timer can point there before it finishes, and a run's end moves
// the timer only when the run changed its due time. A running task that
// will still be running then (already due, or its last run took longer
// than its cadence) starts when its run ends, which wakes the loop without
// a timer.
func NextWakeCounting(now time.Time, pausedUntil *time.Time, tasks []*Task) (wake time.Time, ok bool) {
	for _, t := range tasks {
		if t.Dormant && !t.Requested {
			continue
		}
		at := t.DueAt()
		if t.Running() && (!at.After(now) || t.LastRunAt != nil && !t.LastRunAt.Add(time.Duration(t.LastDuration)).Before(at)) {
			continue
		}
		if !t.Requested && Paused(now, pausedUntil) && pausedUntil.After(at) {
			at = *pausedUntil
		}
		if (t.Requested && !t.Running()) || at.Before(now) {
			at = now
		}
		if !ok || at.Before(wake) {
			wake, ok = at, true
		}
	}
	return wake, ok
}
