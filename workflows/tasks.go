package workflows

import (
	"slices"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/cron"
	"github.com/pacer-dev/pacer/internal/schedule"
)

// tasksOf is the task list of a run. Revision 2 adds the registry task
// (SPEC §12) when its cadence is configured (PACER_REGISTRY_URL set).
// Revision 3 adds finalize (SPEC §13), always: it is dormant while no
// round waits, and a run whose rounds changed is woken by a refresh of
// it; and chainhook (SPEC §11) when its cadence is configured
// (PACER_CHAINHOOK_MANAGE=1).
func tasksOf(revision workflow.Version, cfg Config) []taskDef {
	defs := slices.Clone(taskDefs)
	if revision >= 2 && cfg.RegistryEvery > 0 {
		defs = append(defs, taskDef{name: pacer.TaskRegistry, run: runRegistry})
	}
	if revision >= 3 {
		defs = append(defs, taskDef{name: pacer.TaskFinalize, run: runFinalize})
		if cfg.ChainhookEvery > 0 {
			defs = append(defs, taskDef{name: pacer.TaskChainhook, run: runChainhook})
		}
	}
	return defs
}

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
// dormant when nothing is pending, until a rollup run (or, from revision
// 4, a finalize run that finalized a round) wakes it.
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
	if s.deliverWoken {
		t.Dormant, t.NextDueAt = false, nil
		return o
	}
	s.dueAfter(ctx, t, res.ErrorClass != "", res.NextDueAt)
	return o
}

// dueAfter points an on-demand task (deliver, finalize) at its next run
// as its result said: at next, dormant (until a message or another task
// wakes it) when next is nil, and a minute on after a run that failed as
// a whole, which says nothing.
func (s *scheduler) dueAfter(ctx workflow.Context, t *schedule.Task, failed bool, next *time.Time) {
	now := workflow.Now(ctx)
	switch {
	case failed:
		at := now.Add(onDemandRetryAfterFailure)
		t.Dormant, t.NextDueAt = false, &at
	case next == nil:
		t.Dormant, t.NextDueAt = true, nil
	default:
		t.Dormant, t.NextDueAt = false, s.capDue(now, next)
	}
}

// runFinalize finalizes the rounds whose grace has passed and whose
// ledger is complete through their end (SPEC §13); once it finalized one,
// deliver wakes (revision 4). Its result says when
// it is due again: the earliest grace end of a round not yet final, a
// minute on while one waits, or never (no round left), when it is
// dormant until the rounds CLI or the admin API refreshes it.
func runFinalize(ctx workflow.Context, s *scheduler, occ pacer.Occurrence, _ bool) schedule.Outcome {
	opts := s.activityOptions("round finalization", finalizeStartToClose)
	opts.HeartbeatTimeout = 0 // one transaction: bounded by its start-to-close
	res, o := runTask[pacer.FinalizeResult](ctx, opts, ActivityFinalize, pacer.FinalizeInput{Occurrence: occ})
	if res.ErrorClass == "" || s.state.LastFinalizeResult == nil {
		s.state.LastFinalizeResult = res
	} else {
		// A failed run knows no round: keep what the last one waited for.
		last := *s.state.LastFinalizeResult
		last.Run, last.Finalized = res.Run, nil
		s.state.LastFinalizeResult = &last
	}
	s.dueAfter(ctx, s.tasks[pacer.TaskFinalize], res.ErrorClass != "", res.NextDueAt)
	// Revision 4: a run that finalized a round queued its round.finalized
	// deliveries (SPEC §10.2), so deliver wakes now rather than at the
	// next rollup's.
	if s.revision >= 4 && res.ErrorClass == "" && len(res.Finalized) > 0 {
		s.wakeDeliver()
	}
	return o
}

// runChainhook keeps pacer's hook on Hiro's platform as it should be
// (SPEC §11): created, its filter the allowlist's, enabled, and the blocks
// it missed replayed.
func runChainhook(ctx workflow.Context, s *scheduler, occ pacer.Occurrence, _ bool) schedule.Outcome {
	opts := s.activityOptions("chainhook upkeep", chainhookStartToClose)
	opts.HeartbeatTimeout = 0 // a few platform calls: bounded by its start-to-close
	res, o := runTask[pacer.ChainhookResult](ctx, opts, ActivityChainhook, pacer.ChainhookInput{Occurrence: occ})
	s.state.LastChainhookResult = res
	return o
}
