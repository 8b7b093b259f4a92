package workflows

import (
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/cron"
	"github.com/pacer-dev/pacer/internal/schedule"
)

// compileCrons compiles the schedule of every cron task and gives the task
// its occurrence state, keeping what it carried; a task that follows an
// interval (or no schedule) drops it. A spec that does not compile (the
// config was validated, so only a zone database change could do that)
// leaves the task on no schedule, logged, rather than fail the run.
func (s *scheduler) compileCrons() {
	s.crons = map[string]*cron.Schedule{}
	for _, d := range s.defs {
		t := s.tasks[d.name]
		spec, ok := s.cfg.schedule(d.name)
		if !ok || !spec.IsCron() {
			if t.Cron != nil { // from cron to an interval: its wake no longer holds
				t.Cron, t.NextDueAt, t.Dormant = nil, nil, false
			}
			continue
		}
		sched, err := cron.New(spec)
		if err != nil {
			s.logger.Error("schedule.invalid", "task", d.name, "schedule", spec.String(), "error", err.Error())
			t.Cron = nil
			continue
		}
		s.crons[d.name] = sched
		if t.Cron == nil {
			t.Cron = &cron.State{}
		}
		t.NextDueAt, t.Dormant = nil, false // the decision asks the schedule
	}
}

// planCrons decides, for every idle cron task, the occurrences that came
// due since it last looked (its catch-up policy applies to the ones it
// missed), and points the task's due time at its next wake: at once while
// runs are queued, else its next occurrence. Workflow code writes nothing:
// the passed occurrences ride on the next run's Occurrence to the ledger.
func (s *scheduler) planCrons(now time.Time) {
	for _, d := range s.defs {
		t, sched := s.tasks[d.name], s.crons[d.name]
		if sched == nil || t.Cron == nil {
			continue
		}
		if t.Running() || t.Broken != nil || len(t.Cron.Queue) > 0 {
			continue
		}
		s.fence(t, now, func() {
			next, rep := sched.Plan(d.name, *t.Cron, now, s.pausedFunc(d.name))
			*t.Cron = next
			if rep.Missed > 0 || rep.Unrecorded != nil {
				s.logger.Warn("schedule.caught_up", "task", d.name, "catchup", string(sched.Spec().Catchup),
					"missed", rep.Missed, "queued", rep.Queued, "skipped", rep.Skipped, "coalesced", rep.Coalesced,
					"unrecorded", rep.Unrecorded)
			}
		})
	}
}

// runRollup computes the rollups of its occurrence (SPEC §10.1); once it
// did, deliveries may be due, so deliver wakes.
func runRollup(ctx workflow.Context, s *scheduler, occ pacer.Occurrence, _ bool) schedule.Outcome {
	opts := s.activityOptions("hourly and daily rollups", rollupStartToClose)
	opts.HeartbeatTimeout = rollupHeartbeatTimeout
	res, o := runTask[pacer.RollupResult](ctx, opts, ActivityRollup, pacer.RollupInput{Occurrence: occ})
	s.state.LastRollupResult = res
	if res.ErrorClass == "" {
		s.wakeDeliver()
	}
	return o
}

// wakeDeliver makes deliver due now.
func (s *scheduler) wakeDeliver() {
	t := s.tasks[pacer.TaskDeliver]
	if t == nil {
		return
	}
	t.Dormant, t.NextDueAt = false, nil
	if t.Running() {
		s.deliverWoken = true
	}
}

// runDeliver runs one deliver run (SPEC §10.3): one activity whatever the
// number of subscribers. The task is due again when its result says
// (soon while deliveries are due, the next retry time otherwise) and
// dormant when nothing is pending, until a rollup run wakes it.
func runDeliver(ctx workflow.Context, s *scheduler, occ pacer.Occurrence, _ bool) schedule.Outcome {
	s.deliverWoken = false
	opts := s.activityOptions("webhook deliveries", deliverStartToClose)
	opts.HeartbeatTimeout = deliverHeartbeatTimeout
	res, o := runTask[pacer.DeliverResult](ctx, opts, ActivityDeliver, pacer.DeliverInput{Occurrence: occ})
	if res.ErrorClass == "" || s.state.LastDeliverResult == nil {
		s.state.LastDeliverResult = res
	} else {
		// A failed run knows no counts: keep the last ones, with its error.
		last := *s.state.LastDeliverResult
		last.Run = res.Run
		s.state.LastDeliverResult = &last
	}
	t := s.tasks[pacer.TaskDeliver]
	switch {
	case s.deliverWoken:
		t.Dormant, t.NextDueAt = false, nil
	case res.ErrorClass != "":
		at := workflow.Now(ctx).Add(deliverRetryAfterFailure)
		t.Dormant, t.NextDueAt = false, &at
	case res.NextDueAt == nil:
		t.Dormant, t.NextDueAt = true, nil
	default:
		t.Dormant, t.NextDueAt = false, utc(res.NextDueAt)
	}
	return o
}
