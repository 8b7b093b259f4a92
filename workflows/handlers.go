package workflows

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/cron"
	"github.com/pacer-dev/pacer/internal/schedule"
)

// registerHandlers sets the status query and the updates. Each update's
// validator rejects a bad input before anything is written to history; the
// signals of the same names do the same work without an answer.
func (s *scheduler) registerHandlers(ctx workflow.Context) error {
	if err := workflow.SetQueryHandlerWithOptions(ctx, QueryStatus, func() (Status, error) {
		return s.status(ctx), nil
	}, workflow.QueryHandlerOptions{Description: "the scheduler's status document: pause, tasks, last results, pacing"}); err != nil {
		return err
	}
	updates := []struct {
		name, description  string
		handler, validator any
	}{
		{UpdateRefreshNow, `run tasks now and return their results; {"task":"<task>"|"all"}`,
			s.refreshNow, func(ctx workflow.Context, raw json.RawMessage) error {
				names, err := ParseRefresh(raw, s.taskNames())
				if err == nil {
					_, err = s.unbroken(names, "")
				}
				return s.unlessStopping(err)
			}},
		{UpdatePause, `pause scheduled runs and return when the pause ends; {"for":"30m"} or {"until":"<RFC3339>"}, at most 30 days, optionally "task":"<task>" for one task`,
			s.pauseNow, func(ctx workflow.Context, raw json.RawMessage) error {
				_, _, err := ParsePauseTask(raw, workflow.Now(ctx), s.taskNames())
				return s.unlessStopping(err)
			}},
		{UpdateBackfill, `run a cron task's occurrences over a past range, each as of its own nominal time: {"task":"rollup","from":"<RFC3339>","to":"<RFC3339>"}`,
			s.backfill, func(ctx workflow.Context, raw json.RawMessage) error {
				_, _, err := ParseBackfill(raw, workflow.Now(ctx), s.crons, s.taskNames())
				return s.unlessStopping(err)
			}},
		{UpdateSkip, `give up on one owed occurrence of a cron task: it is not run again, and task_runs shows it skipped (reason operator): {"task":"rollup","nominalAt":"<RFC3339>"}`,
			s.skip, func(ctx workflow.Context, raw json.RawMessage) error {
				_, _, err := s.parseSkip(raw)
				return s.unlessStopping(err)
			}},
		{UpdateResume, `clear pauses, close open circuit breakers and clear back-offs; no input for every task, or {"task":"<task>"} for one`,
			s.resumeNow, func(_ workflow.Context, raw json.RawMessage) error {
				_, err := ParseResume(raw, s.taskNames())
				return s.unlessStopping(err)
			}},
		{UpdateTune, `set a task's pacing within its bounds and return it: {"task":…,"batch":20,"interval":"10m"}, or {"task":…,"reset":true}`,
			s.tuneNow, func(ctx workflow.Context, raw json.RawMessage) error {
				return s.unlessStopping(CheckTune(raw, s.pacedTaskNames()))
			}},
		{UpdateReconfigure, `change cadences and schedules in place: {"teneroEvery":"5m","sweepEvery":"1m","schedules":{"rollup":{"cron":"5 * * * *","catchup":"backfill"}}} (any subset); returns the config in force`,
			s.reconfigure, func(ctx workflow.Context, raw json.RawMessage) error {
				_, err := ParseReconfigure(raw, s.set)
				return s.unlessStopping(err)
			}},
		{UpdateStop, `finish the runs in flight, then complete with the state as the result; workers leave it stopped until pacer start; {"reason":"…"}`,
			s.stop, func(ctx workflow.Context, raw json.RawMessage) error {
				_, err := ParseStop(raw)
				if err == nil && s.stopping != nil {
					err = errors.New("the scheduler is already stopping")
				}
				return err
			}},
	}
	for _, u := range updates {
		if err := workflow.SetUpdateHandlerWithOptions(ctx, u.name, u.handler, workflow.UpdateHandlerOptions{
			Validator: u.validator, Description: u.description,
		}); err != nil {
			return err
		}
	}
	return nil
}

// unlessStopping passes err on, or rejects any change once a stop began.
func (s *scheduler) unlessStopping(err error) error {
	if err == nil && s.stopping != nil {
		return errStopping
	}
	return err
}

// refreshNow asks for a run of each selected task and waits for those runs.
func (s *scheduler) refreshNow(ctx workflow.Context, raw json.RawMessage) (RefreshNowResult, error) {
	names, err := ParseRefresh(raw, s.taskNames())
	if err == nil {
		names, err = s.unbroken(names, "update")
	}
	if err != nil {
		return RefreshNowResult{}, err
	}
	want := make(map[string]int64, len(names))
	for _, name := range names {
		want[name] = s.tasks[name].Started + 1
	}
	s.request(names, workflow.Now(ctx))
	s.logger.Info("scheduler.refresh_requested", "tasks", names, "via", "update")
	s.wake.SendAsync(struct{}{})
	// A task whose fence fires before its run starts never runs: it ends
	// the wait too, and the answer is its panic (revision 3, issue 41.1).
	broken := func(name string) bool { return s.revision >= 3 && s.tasks[name].Broken != nil }
	if err := workflow.Await(ctx, func() bool {
		for _, name := range names {
			if s.tasks[name].Finished < want[name] && !broken(name) {
				return false
			}
		}
		return true
	}); err != nil {
		return RefreshNowResult{}, err
	}
	for _, name := range names {
		if broken(name) && s.tasks[name].Finished < want[name] {
			return RefreshNowResult{}, fmt.Errorf("task %s broke before its run started, its scheduling code panicked: %.200s",
				name, s.tasks[name].Broken.Message)
		}
	}
	var res RefreshNowResult
	for _, name := range names {
		switch name {
		case pacer.TaskTenero:
			res.Tenero = s.state.LastTeneroResult
		case pacer.TaskSweep:
			res.Sweep = s.state.LastSweepResult
		case pacer.TaskRollup:
			res.Rollup = s.state.LastRollupResult
		case pacer.TaskDeliver:
			res.Deliver = s.state.LastDeliverResult
		case pacer.TaskFinalize:
			res.Finalize = s.state.LastFinalizeResult
		case pacer.TaskChainhook:
			res.Chainhook = s.state.LastChainhookResult
		}
	}
	return res, nil
}

func (s *scheduler) pauseNow(ctx workflow.Context, raw json.RawMessage) (PauseResult, error) {
	until, task, err := ParsePauseTask(raw, workflow.Now(ctx), s.taskNames())
	if err != nil {
		return PauseResult{}, err
	}
	s.pause(task, until, workflow.Now(ctx), "update")
	s.wake.SendAsync(struct{}{})
	return PauseResult{PausedUntil: until.UTC(), Task: task}, nil
}

// backfill queues a past range's occurrences of a cron task, each as of
// its own nominal time, ahead of the occurrences the schedule decides
// next; each runs through the ledger like any other, so one that already
// ran ok is not run again.
func (s *scheduler) backfill(ctx workflow.Context, raw json.RawMessage) (BackfillResult, error) {
	task, times, err := ParseBackfill(raw, workflow.Now(ctx), s.crons, s.taskNames())
	if err != nil {
		return BackfillResult{}, err
	}
	t := s.tasks[task]
	queued := map[time.Time]bool{}
	for _, q := range t.Cron.Queue {
		queued[q.NominalAt.UTC()] = true
	}
	res := BackfillResult{Task: task, Times: []time.Time{}}
	var add []pacer.Occurrence
	for _, at := range times {
		if !queued[at] {
			add = append(add, pacer.Occurrence{Task: task, NominalAt: at})
			res.Times = append(res.Times, at)
		}
	}
	t.Cron.Queue = append(add, t.Cron.Queue...)
	res.Queued = len(add)
	s.logger.Info("scheduler.backfill_queued", "task", task, "queued", res.Queued, "from", times[0], "to", times[len(times)-1])
	s.wake.SendAsync(struct{}{})
	return res, nil
}

// parseSkip reads a skip. The occurrences a task owes are its queue:
// failed ones waiting for their back-off, and the ones catch-up or a
// backfill queued.
func (s *scheduler) parseSkip(raw json.RawMessage) (string, time.Time, error) {
	return ParseSkip(raw, s.taskNames(), func(task string) ([]time.Time, bool) {
		t := s.tasks[task]
		if t == nil || t.Cron == nil || s.crons[task] == nil {
			return nil, false
		}
		return queuedTimes(t), true
	})
}

// queuedTimes are the nominal times of a cron task's queue, oldest first
// as they run.
func queuedTimes(t *schedule.Task) []time.Time {
	out := []time.Time{}
	for _, q := range t.Cron.Queue {
		out = append(out, q.NominalAt.UTC())
	}
	return out
}

// skip takes an owed occurrence out of its task's queue: it is passed as
// skipped (reason operator), and what it carried to the ledger (the
// occurrences passed before it) stays pending, so the task's next run
// writes both (the ledger turns the occurrence's failed row into the
// skip).
func (s *scheduler) skip(ctx workflow.Context, raw json.RawMessage) (SkipResult, error) {
	task, at, err := s.parseSkip(raw)
	if err != nil {
		return SkipResult{}, err
	}
	t := s.tasks[task]
	i := slices.IndexFunc(t.Cron.Queue, func(o pacer.Occurrence) bool { return o.NominalAt.Equal(at) })
	occ := t.Cron.Queue[i]
	t.Cron.Queue = slices.Delete(slices.Clone(t.Cron.Queue), i, i+1)
	passed := append(slices.Clone(occ.Passed), pacer.PassedOccurrence{NominalAt: at, Status: pacer.RunSkipped, Reason: pacer.SkipOperator})
	t.Cron.Pending = cron.Compact(append(passed, t.Cron.Pending...))
	t.Cron.Counts.Skipped++
	if len(t.Cron.Queue) == 0 {
		// Nothing owed any more: the back-off of its failures is no
		// reason to wait past the next fire time.
		t.NextRunAfter = nil
	}
	res := SkipResult{Task: task, NominalAt: at, Owed: queuedTimes(t)}
	s.logger.Warn("scheduler.occurrence_skipped", "task", task, "nominalAt", at, "reason", pacer.SkipOperator, "owed", len(res.Owed))
	s.wake.SendAsync(struct{}{})
	return res, nil
}

func (s *scheduler) resumeNow(ctx workflow.Context, raw json.RawMessage) (ResumeResult, error) {
	task, err := ParseResume(raw, s.taskNames())
	if err != nil {
		return ResumeResult{}, err
	}
	res := s.resume(workflow.Now(ctx), "update", task)
	s.wake.SendAsync(struct{}{})
	return res, nil
}

func (s *scheduler) tuneNow(ctx workflow.Context, raw json.RawMessage) (TuneResult, error) {
	in, names, err := ParseTune(raw, s.pacedTaskNames())
	if err != nil {
		return TuneResult{}, err
	}
	s.tune(in, names, workflow.Now(ctx))
	s.wake.SendAsync(struct{}{})
	res := TuneResult{Tasks: map[string]Pace{}}
	for _, name := range names {
		res.Tasks[name] = s.pace(name)
	}
	return res, nil
}

// reconfigure applies a new config in place at once, and continues as new
// at the next idle moment so that the run's input holds it (a restart reads
// the config from there).
func (s *scheduler) reconfigure(ctx workflow.Context, raw json.RawMessage) (ReconfigureResult, error) {
	next, err := ParseReconfigure(raw, s.set)
	if err != nil {
		return ReconfigureResult{}, err
	}
	prev := s.cfg
	s.set = next
	s.applyConfig(next.Over(s.defaults), workflow.Now(ctx))
	s.reconfigured = true
	s.logger.Info("scheduler.reconfigured", "teneroEvery", s.cfg.TeneroEvery, "sweepEvery", s.cfg.SweepEvery,
		"wasTeneroEvery", prev.TeneroEvery, "wasSweepEvery", prev.SweepEvery, "schedules", s.cfg.Schedules,
		"wasSchedules", prev.Schedules)
	s.wake.SendAsync(struct{}{})
	return ReconfigureResult{Config: s.set}, nil
}

// applyConfig puts a new config in force: each task's cadence, and its
// controller's bounds, at the new cadence for a task whose cadence changed.
func (s *scheduler) applyConfig(cfg Config, now time.Time) {
	old := s.cfg
	s.cfg = cfg
	for _, d := range s.defs {
		t := s.tasks[d.name]
		t.Every = cfg.every(d.name)
		s.restartCron(t, old, cfg, now)
		if d.paced {
			t.Every = s.every(d.name) // the next run bounds its controller by the new cadence
		}
	}
	s.compileCrons()
}

// restartCron starts a task moved from one cron spec to another at now:
// the new spec's times before now were never due, so none counts as
// missed. Occurrences already owed or queued stay.
func (s *scheduler) restartCron(t *schedule.Task, old, cfg Config, now time.Time) {
	was, _ := old.schedule(t.Name)
	is, _ := cfg.schedule(t.Name)
	if t.Cron == nil || !was.IsCron() || !is.IsCron() || was.String() == is.String() {
		return
	}
	if t.Cron.Last.Before(now) {
		t.Cron.Last = now
	}
	s.logger.Info("schedule.restarted", "task", t.Name, "was", was.String(), "schedule", is.String(), "from", now)
}

// stop stops scheduled runs, waits for the runs in flight, and answers with
// the state the run then completes with.
func (s *scheduler) stop(ctx workflow.Context, raw json.RawMessage) (*StopResult, error) {
	in, err := ParseStop(raw)
	if err != nil {
		return nil, err
	}
	// Refreshes already delivered run before the answer: their callers
	// were promised a run.
	s.drainSignals(ctx)
	s.stopping = &in
	s.logger.Info("scheduler.stop_requested", "reason", in.Reason)
	s.wake.SendAsync(struct{}{})
	if err := workflow.Await(ctx, s.idle); err != nil {
		return nil, err
	}
	return s.stopResult(ctx), nil
}

func (s *scheduler) pause(task string, until, now time.Time, via string) {
	s.addPause(task, now, until)
	s.logger.Info("scheduler.paused", "until", until, "task", task, "via", via)
}

// resume ends every pause (of all tasks and of each), closes open
// breakers and clears back-offs and budget waits (the 24-hour month
// back-off too): an operator's resume says to run again now. With a task,
// only that task's own pauses, breaker and back-offs.
func (s *scheduler) resume(now time.Time, via, task string) ResumeResult {
	res := ResumeResult{BreakersClosed: []string{}}
	res.WasPaused = s.endPauses(now, task)
	for _, t := range s.state.Tasks {
		if task != "" && t.Name != task {
			continue
		}
		if t.BreakerOpen() {
			t.ResetBreaker()
			res.BreakersClosed = append(res.BreakersClosed, t.Name)
			s.logger.Info("scheduler.breaker_reset", "task", t.Name, "via", "resume")
		}
		if t.NextRunAfter != nil || t.PacedUntil != nil {
			t.NextRunAfter, t.PacedUntil = nil, nil
			res.BackoffsCleared = append(res.BackoffsCleared, t.Name)
		}
		if t.Broken != nil {
			t.Broken = nil
			res.Repaired = append(res.Repaired, t.Name)
		}
	}
	s.logger.Info("scheduler.resumed", "reason", "resume "+via, "task", task, "wasPaused", res.WasPaused,
		"breakersClosed", res.BreakersClosed, "backoffsCleared", res.BackoffsCleared, "repaired", res.Repaired)
	return res
}

func (s *scheduler) onPause(ctx workflow.Context, raw json.RawMessage) {
	until, task, err := ParsePauseTask(raw, workflow.Now(ctx), s.taskNames())
	if err != nil {
		s.reject(SignalPause, err, raw)
		return
	}
	s.pause(task, until, workflow.Now(ctx), "signal")
}

// onHint makes the sweep due now (SPEC §3.1, §5.3): many hints before it
// starts are one run, and the decision keeps hinted starts a HintGap apart.
func (s *scheduler) onHint(ctx workflow.Context, raw json.RawMessage) {
	agent, err := ParseHint(raw)
	if err == nil && s.tasks[pacer.TaskSweep] == nil {
		err = errors.New("hints need the sweep task")
	}
	if err != nil {
		s.reject(SignalHint, err, raw)
		return
	}
	t := s.tasks[pacer.TaskSweep]
	if t.HintedAt == nil {
		at := workflow.Now(ctx)
		t.HintedAt = &at
		s.logger.Debug("scheduler.hinted", "agent", agent)
	}
}

func (s *scheduler) onRefresh(ctx workflow.Context, raw json.RawMessage) {
	names, err := ParseRefresh(raw, s.taskNames())
	if err == nil {
		names, err = s.unbroken(names, "signal")
	}
	if err != nil {
		s.reject(SignalRefresh, err, raw)
		return
	}
	s.request(names, workflow.Now(ctx))
	s.logger.Info("scheduler.refresh_requested", "tasks", names, "via", "signal")
}

func (s *scheduler) onTune(ctx workflow.Context, raw json.RawMessage) {
	in, names, err := ParseTune(raw, s.pacedTaskNames())
	if err != nil {
		s.reject(SignalTune, err, raw)
		return
	}
	s.tune(in, names, workflow.Now(ctx))
}

// reject logs a dropped signal with its reason (SPEC §3.1).
func (s *scheduler) reject(name string, err error, raw json.RawMessage) {
	s.logger.Warn("scheduler.message_rejected", "message", name, "reason", clip([]byte(err.Error())), "input", clip(raw))
}

// unbroken is a refresh's tasks but the broken ones (revision 3): the
// fence never starts a broken task, so its request would never be taken
// and the run never idle (issue 41.1). A refresh of broken tasks alone is
// refused with the panic; "all" runs the others, and logs which it left
// (via names the message; the validator passes "").
func (s *scheduler) unbroken(names []string, via string) ([]string, error) {
	if s.revision < 3 {
		return names, nil
	}
	var out []string
	var broken []string
	for _, name := range names {
		if t := s.tasks[name]; t.Broken != nil {
			broken = append(broken, name)
			continue
		}
		out = append(out, name)
	}
	if len(out) == 0 && len(broken) > 0 {
		t := s.tasks[broken[0]]
		return nil, fmt.Errorf("task %s is broken, its scheduling code panicked: %.200s; resume, or a fixed build's next run, tries it again",
			t.Name, t.Broken.Message)
	}
	if len(broken) > 0 && via != "" { // "": the validator, which the handler follows
		s.logger.Warn("scheduler.refresh_skipped_broken", "tasks", broken, "via", via,
			"hint", "a broken task does not run: a fixed build's next run, or resume, tries it again")
	}
	return out, nil
}

// request asks for a run of each task as soon as possible. An explicit
// refresh is an operator's word that the cause is fixed: it closes an open
// breaker too.
func (s *scheduler) request(names []string, now time.Time) {
	for _, name := range names {
		t := s.tasks[name]
		if !t.Requested {
			at := now
			t.RequestedAt = &at
		}
		t.Requested = true
		if t.BreakerOpen() {
			t.ResetBreaker()
			s.logger.Info("scheduler.breaker_reset", "task", name, "via", "refresh")
		}
	}
}

// signal is one of the scheduler's signals and what it does.
type signal struct {
	name   string
	ch     workflow.ReceiveChannel
	handle func(ctx workflow.Context, raw json.RawMessage)
}

func (s *scheduler) signals() []signal {
	return []signal{
		{SignalPause, s.pauseCh, s.onPause},
		{SignalResume, s.resumeCh, func(ctx workflow.Context, raw json.RawMessage) {
			task, err := ParseResume(raw, s.taskNames())
			if err != nil {
				s.reject(SignalResume, err, raw)
				return
			}
			s.resume(workflow.Now(ctx), "signal", task)
		}},
		{SignalRefresh, s.refreshCh, s.onRefresh},
		{SignalTune, s.tuneCh, s.onTune},
		{SignalHint, s.hintCh, s.onHint},
	}
}

// receive takes one pending signal off its channel, if any, and applies it.
// The channel decodes the payload with the worker's data converter (a codec
// the worker is configured with included). One it cannot decode at all is
// dropped by the SDK, which logs the decoding error and takes the next one;
// the drop is seen here in the channel's length, and logged as a rejection
// with the others.
func (s *scheduler) receive(ctx workflow.Context, sig signal) bool {
	before := sig.ch.Len()
	var raw json.RawMessage
	ok := sig.ch.ReceiveAsync(&raw)
	dropped := before - sig.ch.Len()
	if ok {
		dropped--
	}
	for range dropped {
		s.logger.Warn("scheduler.message_rejected", "message", sig.name, "reason", "undecodable payload")
	}
	if ok {
		sig.handle(ctx, raw)
	}
	return ok || dropped > 0
}

// drainSignals applies every signal already delivered, so none is lost when
// the run continues as new or stops: their effects travel in the carried
// state.
func (s *scheduler) drainSignals(ctx workflow.Context) {
	for _, sig := range s.signals() {
		for s.receive(ctx, sig) {
		}
	}
}

// clip keeps a rejected payload short enough to log.
func clip(raw json.RawMessage) string {
	const max = 200
	if len(raw) > max {
		return string(raw[:max]) + "…"
	}
	return string(raw)
}
