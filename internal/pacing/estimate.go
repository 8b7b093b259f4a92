package pacing

import (
	"time"

	"github.com/pacer-dev/pacer"
)

// Cost prices a task's runs in Temporal Cloud actions and history events.
// The formula, kept simple enough to check by hand:
//
//	heartbeats(run)    = 0 if run < HeartbeatEvery, else 1 + ⌊(run − HeartbeatEvery) / HeartbeatThrottle⌋
//	actions per run    = 1 (activity) + heartbeats(run) + 1 (the timer that woke the workflow)
//	continue-as-new    = runs × EventsPerRun / ContinueAsNewEvents, 1 action each
//	actions per day    = runs/day × actions per run + messages/day + continue-as-new/day
//
// The activities look at their progress every 0.8 × the heartbeat timeout
// of 2 minutes and heartbeat only when it changed; the SDK forwards at most
// one heartbeat per 0.8 × the timeout too, so a run under 96 s sends none.
// The workflow's one timer wakes it for every task due at that moment, so
// with several tasks the timers are the wake-ups, at most one a run (the
// bench counts them so). A signal, query or update is one action each.
// Workflow tasks and memo upserts are not billed.
type Cost struct {
	HeartbeatEvery    time.Duration `json:"heartbeatEvery"`
	HeartbeatThrottle time.Duration `json:"heartbeatThrottle"`
	// EventsPerRun is the history one run writes: TimerStarted, TimerFired,
	// ActivityTaskScheduled, ActivityTaskStarted, ActivityTaskCompleted and
	// two workflow tasks of three events each.
	EventsPerRun int `json:"eventsPerRun"`
	// ContinueAsNewEvents is the history length at which the workflow
	// continues as new (workflows.DefaultMaxHistoryEvents).
	ContinueAsNewEvents int `json:"continueAsNewEvents"`
}

// DefaultCost is pacer's: a heartbeat per 96 s of a run (0.8 × the 2-minute
// heartbeat timeout), 11 events a run, continue-as-new at 2,000 events.
func DefaultCost() Cost {
	return Cost{
		HeartbeatEvery:      96 * time.Second,
		HeartbeatThrottle:   96 * time.Second,
		EventsPerRun:        11,
		ContinueAsNewEvents: 2000,
	}
}

// Heartbeats is how many heartbeats reach the server during a run.
func (c Cost) Heartbeats(run time.Duration) int {
	if c.HeartbeatEvery <= 0 || run < c.HeartbeatEvery {
		return 0
	}
	if c.HeartbeatThrottle <= 0 {
		return int(run / c.HeartbeatEvery)
	}
	return 1 + int((run-c.HeartbeatEvery)/c.HeartbeatThrottle)
}

// RunActions is what one run of the given length costs.
func (c Cost) RunActions(run time.Duration) int {
	return 2 + c.Heartbeats(run)
}

// ActionsPerDay is the daily cost of runsPerDay runs of the given length,
// plus messagesPerDay signals, queries and updates.
func (c Cost) ActionsPerDay(runsPerDay float64, run time.Duration, messagesPerDay float64) float64 {
	actions := runsPerDay*float64(c.RunActions(run)) + messagesPerDay
	if c.ContinueAsNewEvents > 0 {
		actions += runsPerDay * float64(c.EventsPerRun) / float64(c.ContinueAsNewEvents)
	}
	return actions
}

// TaskStatus is what the status document shows of one task's pacing.
type TaskStatus = pacer.PaceStatus

// StatusOf reports a task's pacing at now without changing anything: safe in
// a query handler. lastRun is the duration of the last run.
func StatusOf(now time.Time, c *Controller, lastRun time.Duration, cost Cost) TaskStatus {
	return StatusHeld(now, c, 0, "", lastRun, cost)
}

// StatusHeld is StatusOf for a task held to hold between runs by what the
// controller does not see (by names it, as HeldByMonth): when hold is
// longer than the controller's interval, the status reports hold, and the
// runs, items and actions a day it leads to.
func StatusHeld(now time.Time, c *Controller, hold time.Duration, by string, lastRun time.Duration, cost Cost) TaskStatus {
	d := c.Snapshot(now)
	st := TaskStatus{
		Zone: d.Zone, Batch: d.Batch, Interval: d.Interval.String(), CooldownRemaining: d.CooldownRemaining.String(),
		SuccessRate: d.SuccessRate, Samples: d.Samples, SuccessLow: d.SuccessLow, SuccessHigh: d.SuccessHigh,
		CompletionsPerMinute: c.SuccessesPerMinute(now),
	}
	interval := d.Interval
	if d.CooldownRemaining > 0 {
		interval = time.Duration(c.Config.MaxInterval)
	}
	if hold > interval {
		interval, st.Interval, st.HeldBy = hold, hold.String(), by
	}
	perRun := float64(d.Batch)
	st.RunsPerDay = float64(24*time.Hour) / float64(interval)
	success := 1.0
	if d.Samples > 0 {
		success = d.SuccessRate
	}
	st.ProjectedPerDay = st.RunsPerDay * perRun * success
	st.ActionsPerDay = cost.ActionsPerDay(st.RunsPerDay, lastRun, 0)
	return st
}
