// Package schedule decides when each periodic task is due. It is pure: time is
// always an argument, never read from a clock, so the same code runs inside the
// workflow (on workflow time) and in plain unit tests.
package schedule

import (
	"fmt"
	"time"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/cron"
)

// MaxPause bounds a pause so that a typo ("9000h") cannot silently stop the
// scheduler for a year.
const MaxPause = 30 * 24 * time.Hour

// Task is the scheduling state of one task. It is carried across
// continue-as-new, so every field must survive a JSON round trip.
type Task struct {
	Name  string         `json:"name"`
	Every pacer.Duration `json:"every"`
	// LastRunAt is when the last run started; cadence runs start to start.
	LastRunAt *time.Time `json:"lastRunAt,omitempty"`
	// NextDueAt is when the task's own work is next due, as its last run
	// said (the sweep: its earliest due agent). Like NextRunAfter it only
	// delays: the task is due at its cadence or then, whichever is later.
	NextDueAt *time.Time `json:"nextDueAt,omitempty"`
	// RequestedAt is when the pending request was made (Requested).
	RequestedAt *time.Time `json:"requestedAt,omitempty"`
	// LastNominalAt is the nominal time of the last run's occurrence (its
	// run key, SPEC §3.4): the next run's key must be later.
	LastNominalAt *time.Time `json:"lastNominalAt,omitempty"`
	// NextRunAfter is a back-off set by the upstream (rate limits): the task is
	// not due before it, whatever its cadence says.
	NextRunAfter        *time.Time `json:"nextRunAfter,omitempty"`
	ConsecutiveFailures int        `json:"consecutiveFailures"`
	LastError           *RunError  `json:"lastError,omitempty"`
	// Requested is set by a refresh: run as soon as possible, ignoring pause
	// and due checks.
	Requested bool `json:"requested,omitempty"`
	// PacedUntil is when the upstream's budget next allows a useful run
	// (month pacing); like NextRunAfter it only delays, never hurries.
	PacedUntil *time.Time `json:"pacedUntil,omitempty"`
	// BreakerUntil is set while the task's circuit breaker is open: after
	// too many failures in a row the task only probes once per cooldown.
	BreakerUntil *time.Time `json:"breakerUntil,omitempty"`
	// BreakerTrips counts how often the breaker opened.
	BreakerTrips int `json:"breakerTrips,omitempty"`
	// LastDuration is how long the last finished run took: whether a run in
	// flight will likely still be running when the task is next due.
	LastDuration pacer.Duration `json:"lastDuration,omitempty"`
	// Started and Finished count runs; an update waiting for "the next run"
	// waits for Finished to pass the Started it saw.
	Started  int64 `json:"started"`
	Finished int64 `json:"finished"`
	// Cron is a cron-scheduled task's occurrence state (SPEC §3.4); nil for
	// an interval task. The scheduler keeps NextDueAt at its next wake.
	Cron *cron.State `json:"cron,omitempty"`
	// Dormant is set while the task has nothing to do until something
	// wakes it (deliver with nothing pending, a cron schedule that fires no
	// more): it never comes due on its own, only by a request.
	Dormant bool `json:"dormant,omitempty"`
	// Broken is set when the task's scheduling code panicked (its decision,
	// its cron arithmetic, its result's handling; SPEC §3.8): it does not
	// run, the other tasks keep their cadence, and resume or the next run
	// of the scheduler (a fixed build after continue-as-new) clears it.
	Broken *RunError `json:"broken,omitempty"`
	// HintedAt is when a hint (an agent's new transaction) asked for a
	// sweep not yet started; the next start clears it.
	HintedAt *time.Time `json:"hintedAt,omitempty"`
}

// RunError is the last failure of a task, kept for operators.
type RunError struct {
	Class   string    `json:"class"`
	Message string    `json:"message"`
	At      time.Time `json:"at"`
}

// Running reports whether a run has started and not yet finished.
func (t *Task) Running() bool { return t.Started > t.Finished }

// Breaker configures the circuit breaker. A zero Threshold turns it off.
type Breaker struct {
	// Threshold is how many failed runs in a row open the breaker.
	Threshold int `json:"threshold"`
	// Cooldown is how long an open breaker waits before the next probe run.
	Cooldown time.Duration `json:"cooldown"`
}

// BreakerOpen reports whether the task's breaker is open.
func (t *Task) BreakerOpen() bool { return t.BreakerUntil != nil }

// ResetBreaker closes the breaker (an operator's resume or refresh).
func (t *Task) ResetBreaker() { t.BreakerUntil = nil }

// Begin records the start of a run at now.
func (t *Task) Begin(now time.Time) {
	t.LastRunAt = &now
	t.Requested, t.RequestedAt, t.HintedAt = false, nil, nil
	t.Started++
}

// Outcome is what the scheduler learns from a finished run.
type Outcome struct {
	// Class is empty on success, otherwise the error class of the failure.
	Class   string
	Message string
	// Backoff defers the next run (an exhausted upstream quota); zero for none.
	Backoff time.Duration
}

// Finish records the outcome of the run that started last, at now. It
// reports whether this outcome opened the breaker.
func (t *Task) Finish(now time.Time, o Outcome, b Breaker) (tripped bool) {
	t.Finished = t.Started
	if t.LastRunAt != nil {
		t.LastDuration = pacer.Duration(now.Sub(*t.LastRunAt))
	}
	if o.Class == "" {
		t.ConsecutiveFailures = 0
		t.BreakerUntil = nil
	} else {
		t.ConsecutiveFailures++
		t.LastError = &RunError{Class: o.Class, Message: o.Message, At: now}
		if b.Threshold > 0 && t.ConsecutiveFailures >= b.Threshold {
			// Open, or stay open after a failed probe: wait a cooldown.
			tripped = t.BreakerUntil == nil
			until := now.Add(b.Cooldown)
			t.BreakerUntil = &until
			if tripped {
				t.BreakerTrips++
			}
		}
	}
	if o.Backoff > 0 {
		after := now.Add(o.Backoff)
		t.NextRunAfter = &after
	}
	return tripped
}

// PauseUntil resolves a pause request made at now: exactly one of until (an
// RFC3339 time) and forDur (a Go duration) must be given, and the end must lie
// in the future and within MaxPause.
func PauseUntil(now time.Time, until, forDur string) (time.Time, error) {
	var end time.Time
	switch {
	case until != "" && forDur != "":
		return time.Time{}, fmt.Errorf(`give either "until" or "for", not both`)
	case until != "":
		t, err := time.Parse(time.RFC3339, until)
		if err != nil {
			return time.Time{}, fmt.Errorf(`"until" is not an RFC3339 time: %.80q`, until)
		}
		end = t.UTC()
	case forDur != "":
		d, err := time.ParseDuration(forDur)
		if err != nil {
			return time.Time{}, fmt.Errorf(`"for" is not a Go duration (like "30m"): %.80q`, forDur)
		}
		if d <= 0 {
			return time.Time{}, fmt.Errorf(`"for" must be positive, got %s`, d)
		}
		end = now.Add(d)
	default:
		return time.Time{}, fmt.Errorf(`give "until" (RFC3339) or "for" (Go duration)`)
	}
	if !end.After(now) {
		return time.Time{}, fmt.Errorf("pause end %s is not in the future", end.Format(time.RFC3339))
	}
	if end.Sub(now) > MaxPause {
		return time.Time{}, fmt.Errorf("pause end %s is more than %s away", end.Format(time.RFC3339), MaxPause)
	}
	return end, nil
}
