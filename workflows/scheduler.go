package workflows

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/cron"
	"github.com/pacer-dev/pacer/internal/schedule"
)

// State is everything the scheduler knows, carried across continue-as-new,
// a stop and a restart.
type State struct {
	PausedUntil *time.Time       `json:"pausedUntil,omitempty"`
	Tasks       []*schedule.Task `json:"tasks"`
	// Pauses are the operators' pause windows, of one task or of all
	//: what was paused survives a restart, and
	// occurrences due in a window are passed as paused. PausedUntil mirrors
	// the global one for readers of older states.
	Pauses []schedule.Pause `json:"pauses,omitempty"`
	// LastTeneroResult is the last finished tenero run's report.
	LastTeneroResult *pacer.TeneroResult `json:"lastTeneroResult,omitempty"`
	LastSweepResult  *pacer.SweepResult  `json:"lastSweepResult,omitempty"`
	LastRollupResult *pacer.RollupResult `json:"lastRollupResult,omitempty"`
	// LastDeliverResult carries the deliveries' counts by status, which
	// the status document shows.
	LastDeliverResult *pacer.DeliverResult `json:"lastDeliverResult,omitempty"`
	// LastFinalizeResult says which round finalize waits for and why;
	// LastChainhookResult is the hook as the chainhook task last found it.
	LastFinalizeResult  *pacer.FinalizeResult  `json:"lastFinalizeResult,omitempty"`
	LastChainhookResult *pacer.ChainhookResult `json:"lastChainhookResult,omitempty"`
	// Generation counts the runs of this workflow ID (continue-as-new chain).
	Generation int `json:"generation"`
	// Pacing is each task's adaptive controller, looked up by name only,
	// never ranged over.
	Pacing map[string]*Pacing `json:"pacing,omitempty"`
}

// SchedulerInput starts a run; State is nil on the very first start.
type SchedulerInput struct {
	Config Config `json:"config"`
	State  *State `json:"state,omitempty"`
	// Restart is set when a worker or an operator started the scheduler
	// again after its last run closed: what closed it and how old the
	// carried state is.
	Restart *Restart `json:"restart,omitempty"`
	// Defaults are the defaults in force for this run, every field set: the
	// build that started it or continued it as new wrote them (SPEC §3.5).
	// A run given none records its build's in a side effect.
	Defaults *Config `json:"defaults,omitempty"`
}

// Restart says where a restarted scheduler's state comes from.
type Restart struct {
	// After is how the last run closed: stopped, terminated, failed,
	// timed out or canceled.
	After string `json:"after"`
	RunID string `json:"runId"`
	// StateFrom is when the carried state was current: the stop, or for a
	// run that ended without a result, when that run started. Its pause and
	// breakers come from its memo, current at OperatorStateFrom.
	StateFrom         time.Time  `json:"stateFrom"`
	OperatorStateFrom *time.Time `json:"operatorStateFrom,omitempty"`
}

// SchedulerWorkflow is the one durable loop that runs pacer's periodic tasks.
// It sleeps on a single timer set to the earliest moment any task is due,
// wakes early for messages and finished runs, and continues as new before
// its history grows large. The stop update completes it with its state as
// the result.
func SchedulerWorkflow(ctx workflow.Context, in SchedulerInput) (*StopResult, error) {
	return schedulerWorkflow(ctx, in, runOptions{})
}

// runOptions are what tests change of a run: a fault injected into one
// task's scheduling code, and the build's defaults.
type runOptions struct {
	// fault, when set, is called in every task's fenced scheduling code.
	fault func(t *schedule.Task)
	// arith, when set, is called as a task's own arithmetic starts in the
	// decision (schedule.View.Fault), wherever that decision runs.
	arith func(task string, at time.Time)
	// defaults stands for CodeDefaults.
	defaults func() Config
}

func schedulerWorkflow(ctx workflow.Context, in SchedulerInput, opts runOptions) (*StopResult, error) {
	if err := in.Config.Validate(); err != nil {
		// Fail at once with the reason rather than panic later in a loop of
		// failing workflow tasks.
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), errTypeInvalidConfig, nil)
	}
	s := newScheduler(ctx, in, opts)
	if err := s.registerHandlers(ctx); err != nil {
		return nil, err
	}
	if in.Restart != nil {
		s.logger.Warn("scheduler.restarted", "after", in.Restart.After, "previousRunId", in.Restart.RunID,
			"stateFrom", in.Restart.StateFrom, "operatorStateFrom", in.Restart.OperatorStateFrom,
			"pausedUntil", s.state.PausedUntil)
	}
	return s.loop(ctx)
}

// codeDefaults are this build's defaults (CodeDefaults, or a test's).
func (s *scheduler) codeDefaults() Config {
	if s.opts.defaults != nil {
		return s.opts.defaults()
	}
	return CodeDefaults()
}

// errTypeInvalidConfig is the application error type of a run that failed
// on its config.
const errTypeInvalidConfig = "invalid_config"

// taskDef is how the workflow runs one task: its activity and how the
// activity's answer becomes a scheduling outcome.
type taskDef struct {
	name string
	// paced tasks spend an upstream's budget: the adaptive controller sets
	// their batch and interval.
	paced bool
	// run runs the task once; occ is its run key, forced is true for an
	// operator's refresh.
	run func(ctx workflow.Context, s *scheduler, occ pacer.Occurrence, forced bool) schedule.Outcome
}

// taskDefs lists the tasks in a fixed order: the order of starts, of the
// status document and of refresh "all".
var taskDefs = []taskDef{
	{name: pacer.TaskTenero, paced: true, run: runTenero},
	{name: pacer.TaskSweep, paced: true, run: runSweep},
	{name: pacer.TaskRollup, run: runRollup},
	{name: pacer.TaskDeliver, run: runDeliver},
}

// readRevision is the revision of what this run schedules (SPEC §3.7),
// read once at its start: one marker of ChangeID in its history.
func readRevision(ctx workflow.Context) workflow.Version {
	return workflow.GetVersion(ctx, ChangeID, RevisionFloor, RevisionCurrent)
}

type scheduler struct {
	defs []taskDef
	opts runOptions
	// revision is this run's revision (readRevision); every branch on it
	// names the revision that brought the change.
	revision workflow.Version
	// set is the config the operator set (the run's input, reconfigure);
	// defaults the defaults in force for this run; cfg is set over them.
	set, defaults, cfg Config
	state              State
	tasks              map[string]*schedule.Task
	logger             log.Logger
	// crons are the compiled schedules of the cron tasks, by task name.
	crons map[string]*cron.Schedule
	// deliverWoken is set when a rollup run made deliver due while a
	// deliver run was in flight: that run's "nothing pending" is stale.
	deliverWoken bool

	pauseCh, resumeCh, refreshCh, tuneCh, hintCh workflow.ReceiveChannel
	// holding is set while the run holds scheduled starts (holdStarts).
	holding bool
	// wake is how finished runs and update handlers get the loop's attention.
	wake workflow.Channel

	// armed are the armed timers, each for a wake-up that still stands.
	armed []*armedTimer

	// stopping is set by the stop update: no scheduled run starts, and the
	// run completes once the runs in flight are done.
	stopping *StopInput
	// reconfigured is set by the reconfigure update: the run continues as
	// new, so that its input holds the new config, at the first idle moment.
	reconfigured bool
	// memoStale is set when what the memo shows changed (changed).
	memoStale bool
}

func newScheduler(ctx workflow.Context, in SchedulerInput, opts runOptions) *scheduler {
	s := &scheduler{
		revision: readRevision(ctx),
		opts:     opts,
		set:      in.Config,
		logger:   workflow.GetLogger(ctx),
		pauseCh: signalChannel(ctx, SignalPause,
			`no scheduled run starts until then (refreshes still run); {"for":"30m"} or {"until":"<RFC3339>"}, at most 30 days`),
		resumeCh: signalChannel(ctx, SignalResume, "clear a pause and close every open circuit breaker; no input"),
		refreshCh: signalChannel(ctx, SignalRefresh,
			`run tasks as soon as possible, ignoring pause and due checks; {"task":"<task>"|"all"}`),
		tuneCh: signalChannel(ctx, SignalTune,
			`set a task's pacing within its bounds: {"task":…,"batch":20,"interval":"10m"}, or {"task":…,"reset":true}`),
		hintCh: signalChannel(ctx, SignalHint,
			`an agent has a new transaction: the sweep runs soon whatever its pacing, not while paused; {"agent":"SP…"} (optional)`),
		wake:  workflow.NewBufferedChannel(ctx, 1),
		tasks: map[string]*schedule.Task{},
		// A run's start is a change: its first wait writes the memo.
		memoStale: true,
	}
	s.defs = tasksOf(s.revision, s.set)
	if in.Defaults != nil {
		s.defaults = *in.Defaults
	} else {
		_ = workflow.SideEffect(ctx, func(workflow.Context) any { return s.codeDefaults() }).Get(&s.defaults)
	}
	s.cfg = s.set.Over(s.defaults)
	if in.State != nil {
		s.state = *in.State
		s.state.Generation++
	}
	s.adoptPauses()
	// Rebuild the task list from the registered tasks, keeping what the
	// carried state knew: a task added by a deploy appears, a removed one goes.
	carried := map[string]*schedule.Task{}
	for _, t := range s.state.Tasks {
		if t != nil {
			carried[t.Name] = t
		}
	}
	s.state.Tasks = nil
	for _, d := range s.defs {
		t := carried[d.name]
		if t == nil {
			t = &schedule.Task{Name: d.name}
		}
		t.Every = s.cfg.every(d.name)
		t.Finished = t.Started // runs do not cross continue-as-new
		t.Broken = nil         // a new run's code tries again
		s.state.Tasks = append(s.state.Tasks, t)
		s.tasks[d.name] = t
	}
	s.compileCrons()
	s.setupPacing()
	return s
}

// signalChannel is a signal's channel, described for the Web UI and
// `temporal workflow metadata`.
func signalChannel(ctx workflow.Context, name, description string) workflow.ReceiveChannel {
	return workflow.GetSignalChannelWithOptions(ctx, name, workflow.SignalChannelOptions{Description: description})
}

func (s *scheduler) taskNames() []string {
	names := make([]string, 0, len(s.defs))
	for _, d := range s.defs {
		names = append(names, d.name)
	}
	return names
}

// pacedTaskNames are the tasks tune can set.
func (s *scheduler) pacedTaskNames() []string {
	var names []string
	for _, d := range s.defs {
		if d.paced {
			names = append(names, d.name)
		}
	}
	return names
}

// loop runs until the stop update completes the run or the run continues
// as new (SPEC §3). It starts due runs at once, whatever else is in flight,
// and continues as new at the first moment no run is in flight.
func (s *scheduler) loop(ctx workflow.Context) (*StopResult, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, err // cancelled by an operator
		}
		now := workflow.Now(ctx)
		s.expirePauses(now)
		s.planCrons(now)
		s.holding = s.holdStarts(ctx)
		s.startRuns(ctx, now)
		if s.idle() && (s.stopping != nil || s.reconfigured || s.continueAsNewWanted(ctx)) {
			done, err := s.handOver(ctx)
			if err != nil || done {
				break
			}
			continue
		}
		s.wait(ctx, now)
	}
	if s.stopping != nil {
		s.upsertMemo(ctx) // the stopped run's memo says so
		return s.stopResult(ctx), nil
	}
	return nil, s.continueAsNew(ctx)
}

// handOver waits for the update handlers in flight and applies the signals
// already delivered, so that nothing is lost when the run ends. It reports
// whether the run may end now; a message that asked for a run says no.
func (s *scheduler) handOver(ctx workflow.Context) (bool, error) {
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) || !s.idle() }); err != nil {
		return false, err
	}
	if !s.idle() {
		return false, nil
	}
	s.drainSignals(ctx)
	return s.idle(), nil
}

// holdStarts is the safety valve of continuing as new at idle moments: a
// run whose tasks are never idle together (a sweep that runs back to back)
// stops starting scheduled runs once its history is twice the length at
// which it wanted to continue as new, well inside the server's limit.
func (s *scheduler) holdStarts(ctx workflow.Context) bool {
	return workflow.GetInfo(ctx).GetCurrentHistoryLength() >= 2*s.cfg.MaxHistoryEvents
}

// idle reports whether no run is in flight and none is requested. A
// broken task's request is none (revision 3): the fence never starts it.
func (s *scheduler) idle() bool {
	for _, t := range s.state.Tasks {
		if t.Running() || t.Requested && (t.Broken == nil || s.revision < 3) {
			return false
		}
	}
	return true
}

func (s *scheduler) continueAsNewWanted(ctx workflow.Context) bool {
	info := workflow.GetInfo(ctx)
	return info.GetContinueAsNewSuggested() || info.GetCurrentHistoryLength() >= s.cfg.MaxHistoryEvents
}

func (s *scheduler) continueAsNew(ctx workflow.Context) error {
	state := s.state
	s.logger.Info("scheduler.continued_as_new", "generation", state.Generation+1, "reconfigured", s.reconfigured,
		"historyLength", workflow.GetInfo(ctx).GetCurrentHistoryLength())
	// The next run takes this build's defaults: a release's new default
	// reaches the scheduler here, at a run's start.
	defaults := s.codeDefaults()
	return workflow.NewContinueAsNewError(ctx, WorkflowType, SchedulerInput{Config: s.set, State: &state, Defaults: &defaults})
}

// stopResult is the state a stopped run hands over.
func (s *scheduler) stopResult(ctx workflow.Context) *StopResult {
	state := s.state
	res := &StopResult{Reason: s.stopping.Reason, StoppedAt: workflow.Now(ctx).UTC(), Config: s.set, State: &state}
	s.logger.Info("scheduler.stopped", "reason", res.Reason, "pausedUntil", state.PausedUntil)
	return res
}

// startRuns starts every task the decision starts (while stopping or
// holding, only explicit requests, so that update callers are answered
// before the run ends).
func (s *scheduler) startRuns(ctx workflow.Context, now time.Time) {
	for _, d := range s.defs {
		t := s.tasks[d.name]
		var occ pacer.Occurrence
		start := false
		s.fence(t, now, func() {
			if !s.shouldStart(t, now) {
				return
			}
			if t.Cron != nil && !t.Requested {
				var ok bool
				if occ, ok = t.Cron.Take(); !ok {
					return
				}
				if occ.Live {
					at := now.UTC()
					occ.AsOf = &at
				}
			} else {
				occ = s.occurrence(t, now)
			}
			start = true
		})
		if !start {
			continue
		}
		forced := t.Requested
		t.Begin(now)
		s.changed()
		workflow.Go(ctx, func(ctx workflow.Context) {
			s.fence(t, now, func() { s.runOnce(ctx, d, t, occ, forced) })
			// Not deferred: the fence has recovered a panic by now, and a
			// coroutine the SDK ends (Goexit, when the run closes) must
			// not write state a query may be reading.
			if t.Running() { // its scheduling code panicked (fence)
				t.Finished = t.Started
				s.wake.SendAsync(struct{}{})
			}
		})
	}
}

// runOnce runs t once with occurrence occ and records its outcome.
func (s *scheduler) runOnce(ctx workflow.Context, d taskDef, t *schedule.Task, occ pacer.Occurrence, forced bool) {
	o := d.run(ctx, s, occ, forced)
	if o.Class != "" && t.Cron != nil && !occ.Manual {
		// The occurrence is owed until it succeeds (SPEC §3.4): it
		// goes back to the head of the queue, with the passed ones it
		// carries (the ledger keeps the first record of each), and
		// waits for its back-off.
		t.Cron.Queue = append([]pacer.Occurrence{occ}, t.Cron.Queue...)
		o.Backoff = max(o.Backoff, owedBackoff(t.ConsecutiveFailures+1))
	} else if o.Class != "" && t.Cron != nil && len(occ.Passed) > 0 {
		// A manual run may have failed before it wrote them to the
		// ledger: the next run carries them again (the ledger
		// keeps the first record of each).
		t.Cron.Pending = cron.Compact(append(slices.Clone(occ.Passed), t.Cron.Pending...))
	}
	s.finish(ctx, t, o)
}

// fence runs f, a piece of t's scheduling code (its decision, its cron
// arithmetic, its result's handling): a panic in it marks t broken, logs
// it, and leaves every other task to its cadence (SPEC §3.8).
func (s *scheduler) fence(t *schedule.Task, now time.Time, f func()) {
	if t.Broken != nil {
		return // fenced off until resume or the next run
	}
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		if rt := reflect.TypeOf(r); rt != nil && strings.HasPrefix(rt.PkgPath(), "go.temporal.io/") {
			panic(r) // the SDK's own (a history this code cannot replay): not the task's
		}
		msg := fmt.Sprint(r)
		t.Broken = &schedule.RunError{Class: schedule.ReasonBroken, Message: msg, At: now.UTC()}
		if s.revision >= 3 {
			// A request the fenced task can never take would keep the run
			// from ever being idle: no continue-as-new, and a stop that
			// waits for ever (issue 41.1).
			t.Requested, t.RequestedAt = false, nil
		}
		s.logger.Error("scheduler.task_broken", "task", t.Name, "panic", msg,
			"hint", "the task's scheduling code failed: the other tasks run on; resume retries it, as does the next run of a fixed build")
		s.changed()
	}()
	if s.opts.fault != nil {
		s.opts.fault(t)
	}
	f()
}

// shouldStart is whether t starts now, as the decision says.
func (s *scheduler) shouldStart(t *schedule.Task, now time.Time) bool {
	return s.view().Decide(t, now).Start
}

// view is what the decision reads: the carried state, the compiled cron
// schedules, and whether starts are stopped or held.
func (s *scheduler) view() schedule.View {
	return schedule.View{Tasks: s.state.Tasks, Pauses: s.state.Pauses, Crons: s.crons,
		Stopping: s.stopping != nil, Holding: s.holding, Isolated: s.revision >= 3, Fault: s.opts.arith}
}

// owedBackoff is how long an owed occurrence waits after its n-th failure
// in a row.
func owedBackoff(n int) time.Duration {
	d := owedRetryFirst
	for i := 1; i < n && d < owedRetryMax; i++ {
		d *= 2
	}
	return min(d, owedRetryMax)
}

// occurrence is the run key of the run of t starting at now (SPEC §3.4): its
// nominal time is when it was due, or for a refresh when it was asked for.
func (s *scheduler) occurrence(t *schedule.Task, now time.Time) pacer.Occurrence {
	nominal, manual := s.dueAt(t, now), t.Requested
	if manual && t.RequestedAt != nil {
		nominal = *t.RequestedAt
	}
	if nominal.IsZero() || nominal.After(now) {
		nominal = now // never ran, or a requested run before its due time
	}
	// The ledger keeps microseconds; one key per run needs distinct times.
	nominal = nominal.UTC().Truncate(time.Millisecond)
	if last := t.LastNominalAt; last != nil && !nominal.After(*last) {
		nominal = last.Add(time.Millisecond)
	}
	t.LastNominalAt = &nominal
	return pacer.Occurrence{Task: t.Name, NominalAt: nominal, Manual: manual}
}

// finish records a run's outcome, logs what it changed, and wakes the loop.
func (s *scheduler) finish(ctx workflow.Context, t *schedule.Task, o schedule.Outcome) {
	if s.revision >= 3 && o.Backoff > maxAhead {
		o.Backoff = maxAhead
	}
	if t.Finish(workflow.Now(ctx), o, s.cfg.breaker()) {
		s.logger.Error("scheduler.breaker_tripped", "task", t.Name, "consecutiveFailures", t.ConsecutiveFailures,
			"class", o.Class, "error", o.Message, "probeAt", t.BreakerUntil,
			"hint", "fix the cause, then resume or refresh to close it")
	}
	if o.Class != "" {
		s.logger.Warn("scheduler.task_failed", "task", t.Name, "class", o.Class, "error", o.Message,
			"consecutiveFailures", t.ConsecutiveFailures)
	}
	if o.Backoff > 0 {
		s.logger.Warn("scheduler.task_deferred", "task", t.Name, "until", t.NextRunAfter)
	}
	s.wake.SendAsync(struct{}{})
}

// wait blocks until a message arrives, a run finishes or the timer fires.
func (s *scheduler) wait(ctx workflow.Context, now time.Time) {
	sel := workflow.NewSelector(ctx)
	// A message, a run's end or an update changes what the memo shows.
	for _, sig := range s.signals() {
		sel.AddReceive(sig.ch, func(c workflow.ReceiveChannel, _ bool) { s.receive(ctx, sig); s.changed() })
	}
	sel.AddReceive(s.wake, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil); s.changed() })
	s.armWakes(ctx, now, s.wakes(now))
	for _, a := range s.armed {
		sel.AddFuture(a.f, func(workflow.Future) {
			s.armed = slices.DeleteFunc(s.armed, func(b *armedTimer) bool { return b == a })
		})
	}
	s.setDetails(ctx)
	s.upsertMemo(ctx)
	sel.Select(ctx)
}

// wakes are the instants the tasks want a timer for (schedule.View.Wakes),
// each task's decision fenced.
func (s *scheduler) wakes(now time.Time) []time.Time {
	var out []time.Time
	v := s.view()
	for _, t := range s.state.Tasks {
		s.fence(t, now, func() {
			if d := v.Decide(t, now); d.Wake && d.At.After(now) {
				out = append(out, d.At)
			} else if d.Wake {
				out = append(out, now)
			}
		})
	}
	return out
}

// armedTimer is a timer armed for the wake-up at at.
type armedTimer struct {
	at     time.Time
	f      workflow.Future
	cancel workflow.CancelFunc
}

// armWakes keeps a timer for the earliest of the wanted wake-ups, and
// every timer already armed for another wake-up that is still wanted:
// when a run's end brings a task's next run before the wake-up a timer
// waits for (the sweep's end, before tenero's next run), the earlier
// wake-up gets a timer of its own and the standing one still fires for
// its run, so no timer is armed twice for one wake-up. A timer whose
// wake-up is no longer wanted is cancelled: it would fire for nothing.
// (SPEC §3.6: one timer per wake-up that starts a run.)
func (s *scheduler) armWakes(ctx workflow.Context, now time.Time, wanted []time.Time) {
	s.armed = slices.DeleteFunc(s.armed, func(a *armedTimer) bool {
		if slices.ContainsFunc(wanted, a.at.Equal) {
			return false
		}
		a.cancel()
		return true
	})
	if len(wanted) == 0 {
		return
	}
	wake := slices.MinFunc(wanted, func(a, b time.Time) int { return a.Compare(b) })
	if slices.ContainsFunc(s.armed, func(a *armedTimer) bool { return a.at.Equal(wake) }) {
		return
	}
	tctx, cancel := workflow.WithCancel(ctx)
	f := workflow.NewTimerWithOptions(tctx, max(wake.Sub(now), time.Second),
		workflow.TimerOptions{Summary: "next wake: " + s.dueSummary(now, wake)})
	s.armed = append(s.armed, &armedTimer{at: wake, f: f, cancel: cancel})
}

// dueSummary names the tasks (or the pause) the timer wakes for. Each
// task's decision is fenced here too: a panic in it outside any fence
// would fail every workflow task (issue 41.2).
func (s *scheduler) dueSummary(now, wake time.Time) string {
	var names []string
	for _, t := range s.state.Tasks {
		s.fence(t, now, func() {
			if !t.Running() && !s.dueAt(t, wake).After(wake) {
				names = append(names, t.Name)
			}
		})
	}
	if len(names) == 0 {
		if s.state.PausedUntil != nil && s.state.PausedUntil.Equal(wake) {
			return "pause ends"
		}
		return "next due"
	}
	return strings.Join(names, ", ")
}

// dueAt is when t next starts on its own, as the decision says.
func (s *scheduler) dueAt(t *schedule.Task, now time.Time) time.Time {
	d := s.view().Decide(t, now)
	if d.Start {
		return now
	}
	return d.At
}

// classify turns an activity error into an error class and a message. The
// activities return application errors typed with the class; anything else
// is a timeout or a transport problem.
func classify(err error) (pacer.ErrorClass, string) {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return pacer.ErrorClass(appErr.Type()), appErr.Message()
	}
	var toErr *temporal.TimeoutError
	if errors.As(err, &toErr) {
		return pacer.ClassTimeout, fmt.Sprintf("activity %s timeout", toErr.TimeoutType())
	}
	return pacer.ClassTransport, err.Error()
}

// activityOptions are the same for every task: short transport retries
// only (upstream trouble is not retried: the next tick is the recovery path)
// and the config's heartbeat timeout. The activities heartbeat only when
// their progress changed, at most once per 0.8 × that timeout (the SDK's
// throttle): a run shorter than that sends none, since every heartbeat that
// reaches the server is a billed action. (Not gated: activity options are
// not part of what replay compares, and runs in flight need the longer
// timeout too, now that the activities heartbeat this sparsely.)
func (s *scheduler) activityOptions(summary string, startToClose time.Duration) workflow.ActivityOptions {
	return workflow.ActivityOptions{
		StartToCloseTimeout: startToClose,
		HeartbeatTimeout:    time.Duration(s.cfg.HeartbeatTimeout),
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    5 * time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    time.Minute,
			MaximumAttempts:    3,
		},
		Summary: summary,
	}
}

// result is a task result: a struct embedding pacer.Run.
type result[R any] interface {
	*R
	Meta() *pacer.Run
}

// runTask runs one task activity and returns its result and the outcome
// the schedule records. A run that failed as a whole still reports what it
// did, in the error's details; without details the result holds the failure
// alone.
func runTask[R any, P result[R]](ctx workflow.Context, opts workflow.ActivityOptions, activity string, input any) (*R, schedule.Outcome) {
	started := workflow.Now(ctx)
	res := new(R)
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, opts), activity, input).Get(ctx, res)
	meta := P(res).Meta()
	if err != nil {
		var appErr *temporal.ApplicationError
		if !errors.As(err, &appErr) || !appErr.HasDetails() || appErr.Details(res) != nil {
			res = new(R)
			meta = P(res).Meta()
		}
		meta.ErrorClass, meta.Error = classify(err)
		if meta.StartedAt.IsZero() {
			meta.StartedAt = started
		}
		if meta.DurationMs == 0 {
			meta.DurationMs = workflow.Now(ctx).Sub(started).Milliseconds()
		}
	}
	return res, schedule.Outcome{
		Class:   string(meta.ErrorClass),
		Message: meta.Error,
		Backoff: time.Duration(meta.RateLimitBackoffMs) * time.Millisecond,
	}
}

// runTenero refreshes prices once; its activity paces itself (SPEC §3.8).
func runTenero(ctx workflow.Context, s *scheduler, occ pacer.Occurrence, forced bool) schedule.Outcome {
	pace := s.paceInput(pacer.TaskTenero)
	res, o := runTask[pacer.TeneroResult](ctx, s.activityOptions("tenero price refresh", 10*time.Minute),
		ActivityRefreshTenero, pacer.TeneroInput{StopAtMinuteRemaining: stopAt(forced), Occurrence: occ, Pace: pace})
	s.state.LastTeneroResult = res
	s.paced(s.tasks[pacer.TaskTenero], pace, res.Pace)
	res.Pace = nil // carried in Pacing once
	return o
}

// runSweep sweeps once; its activity paces itself (SPEC §3.8).
func runSweep(ctx workflow.Context, s *scheduler, occ pacer.Occurrence, _ bool) schedule.Outcome {
	pace := s.paceInput(pacer.TaskSweep)
	res, o := runTask[pacer.SweepResult](ctx, s.activityOptions("competition swap sweep", 20*time.Minute),
		ActivitySweep, pacer.SweepInput{Occurrence: occ, Pace: pace})
	s.state.LastSweepResult = res
	s.paced(s.tasks[pacer.TaskSweep], pace, res.Pace)
	res.Pace = nil
	t := s.tasks[pacer.TaskSweep]
	// The sweep is due when its earliest agent is, never sooner than its
	// cadence: a run that failed says nothing.
	if res.ErrorClass == "" {
		t.NextDueAt = s.capDue(workflow.Now(ctx), res.NextDueAt)
	}
	return o
}

// maxAhead bounds how far an activity's answer (a due time, a back-off, a
// paced interval) can put off a task's next run: the longest wait the
// SPEC asks for is the month quota's 24-hour back-off (§3.3), and an
// answer past it is a defect that would silence the task for good.
// Revision 3 brought the bound.
const maxAhead = 24 * time.Hour

// capDue is a due time an activity returned, at most maxAhead from now.
func (s *scheduler) capDue(now time.Time, at *time.Time) *time.Time {
	if at != nil && s.revision >= 3 && at.After(now.Add(maxAhead)) {
		capped := now.Add(maxAhead)
		at = &capped
	}
	return utc(at)
}
