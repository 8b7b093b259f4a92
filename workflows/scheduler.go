package workflows

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/pacing"
	"github.com/pacer-dev/pacer/internal/schedule"
)

// Config is fixed for the life of a run and carried across continue-as-new.
// Zero fields take their defaults.
type Config struct {
	TeneroEvery time.Duration `json:"teneroEvery,omitempty"`
	SweepEvery  time.Duration `json:"sweepEvery,omitempty"`
	// SweepPageSize is how many agents one sweep run walks (0 = 100).
	SweepPageSize int `json:"sweepPageSize,omitempty"`
	// MaxHistoryEvents is the history length at which a run continues as new
	// even if the server has not suggested it yet.
	MaxHistoryEvents int `json:"maxHistoryEvents,omitempty"`
	// BreakerThreshold is how many failed runs in a row open a task's circuit
	// breaker (0 = the default, -1 = off); an open breaker probes once per
	// BreakerCooldown until a run succeeds, resume or a refresh closes it.
	BreakerThreshold int           `json:"breakerThreshold,omitempty"`
	BreakerCooldown  time.Duration `json:"breakerCooldown,omitempty"`
}

func (c Config) breaker() schedule.Breaker {
	if c.BreakerThreshold < 0 {
		return schedule.Breaker{}
	}
	return schedule.Breaker{Threshold: c.BreakerThreshold, Cooldown: c.BreakerCooldown}
}

func (c Config) withDefaults() Config {
	if c.TeneroEvery <= 0 {
		c.TeneroEvery = DefaultTeneroEvery
	}
	if c.SweepEvery <= 0 {
		c.SweepEvery = DefaultSweepEvery
	}
	if c.MaxHistoryEvents <= 0 {
		c.MaxHistoryEvents = DefaultMaxHistoryEvents
	}
	if c.BreakerThreshold == 0 {
		c.BreakerThreshold = DefaultBreakerThreshold
	}
	if c.BreakerCooldown <= 0 {
		c.BreakerCooldown = DefaultBreakerCooldown
	}
	return c
}

// State is everything the scheduler knows, carried across continue-as-new.
type State struct {
	PausedUntil *time.Time       `json:"pausedUntil,omitempty"`
	Tasks       []*schedule.Task `json:"tasks"`
	// LastTeneroResult is the last finished tenero run's report.
	LastTeneroResult *pacer.TeneroResult `json:"lastTeneroResult,omitempty"`
	LastSweepResult  *pacer.SweepResult  `json:"lastSweepResult,omitempty"`
	// Generation counts the runs of this workflow ID (continue-as-new chain).
	Generation int `json:"generation"`
	// Pacing is each task's adaptive controller; Budgets each upstream's
	// budget. Looked up by name only, never ranged over.
	Pacing  map[string]*Pacing        `json:"pacing,omitempty"`
	Budgets map[string]*pacing.Budget `json:"budgets,omitempty"`
}

// SchedulerInput starts a run; State is nil on the very first start.
type SchedulerInput struct {
	Config Config `json:"config"`
	State  *State `json:"state,omitempty"`
}

// SchedulerWorkflow is the one durable loop that runs pacer's periodic tasks.
// It sleeps on a single timer set to the earliest moment any task is due,
// wakes early for messages and finished runs, and continues as new before
// its history grows large.
func SchedulerWorkflow(ctx workflow.Context, in SchedulerInput) error {
	s := newScheduler(ctx, in)
	if err := s.registerHandlers(ctx); err != nil {
		return err
	}
	return s.loop(ctx)
}

// taskDef is how the workflow runs one task: its activity and how the
// activity's answer becomes a scheduling outcome.
type taskDef struct {
	name  string
	every func(Config) time.Duration
	// run runs the task once; forced is true for an operator's refresh.
	run func(ctx workflow.Context, s *scheduler, forced bool) schedule.Outcome
}

// taskDefs lists the tasks in a fixed order: the order of starts, of the
// status document and of refresh "all".
var taskDefs = []taskDef{
	{name: pacer.TaskTenero, every: func(c Config) time.Duration { return c.TeneroEvery }, run: runTenero},
	{name: pacer.TaskSweep, every: func(c Config) time.Duration { return c.SweepEvery }, run: runSweep},
}

// registeredTasks returns the tasks this run schedules, gating each task
// added after the first release behind its change ID.
func registeredTasks(ctx workflow.Context) []taskDef {
	defs := []taskDef{taskDefs[0]}
	if workflow.GetVersion(ctx, changeSweepTask, workflow.DefaultVersion, 1) >= 1 {
		defs = append(defs, taskDefs[1])
	}
	return defs
}

type scheduler struct {
	defs   []taskDef
	paced  bool
	cfg    Config
	state  State
	tasks  map[string]*schedule.Task
	logger log.Logger

	pauseCh, resumeCh, refreshCh, tuneCh workflow.ReceiveChannel
	// wake is how finished runs and update handlers get the loop's attention.
	wake workflow.Channel

	timer       workflow.Future
	timerAt     time.Time
	cancelTimer workflow.CancelFunc
}

func newScheduler(ctx workflow.Context, in SchedulerInput) *scheduler {
	s := &scheduler{
		defs:   registeredTasks(ctx),
		cfg:    in.Config.withDefaults(),
		logger: workflow.GetLogger(ctx),
		pauseCh: signalChannel(ctx, SignalPause,
			`no scheduled run starts until then (refreshes still run); {"for":"30m"} or {"until":"<RFC3339>"}, at most 30 days`),
		resumeCh: signalChannel(ctx, SignalResume, "clear a pause and close every open circuit breaker; no input"),
		refreshCh: signalChannel(ctx, SignalRefresh,
			`run tasks as soon as possible, ignoring pause and due checks; {"task":"tenero"|"sweep"|"all"}`),
		tuneCh: signalChannel(ctx, SignalTune,
			`set a task's pacing within its bounds: {"task":…,"batch":20,"interval":"10m"}, or {"task":…,"reset":true}`),
		wake:  workflow.NewBufferedChannel(ctx, 1),
		tasks: map[string]*schedule.Task{},
	}
	if in.State != nil {
		s.state = *in.State
		s.state.Generation++
	}
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
		t.Every = d.every(s.cfg)
		t.Finished = t.Started // runs do not cross continue-as-new
		s.state.Tasks = append(s.state.Tasks, t)
		s.tasks[d.name] = t
	}
	if s.paced = pacingOn(ctx); s.paced {
		s.setupPacing()
	}
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

func (s *scheduler) registerHandlers(ctx workflow.Context) error {
	if err := workflow.SetQueryHandlerWithOptions(ctx, QueryStatus, func() (Status, error) {
		return s.status(ctx), nil
	}, workflow.QueryHandlerOptions{Description: "the scheduler's status document: pause, tasks, last results, pacing"}); err != nil {
		return err
	}
	return workflow.SetUpdateHandlerWithOptions(ctx, UpdateRefreshNow, s.refreshNow, workflow.UpdateHandlerOptions{
		Validator: func(ctx workflow.Context, raw json.RawMessage) error {
			_, err := ParseRefresh(raw, s.taskNames())
			return err
		},
		Description: `run tasks now and return their results; {"task":"tenero"|"sweep"|"all"}`,
	})
}

// refreshNow asks for a run of each selected task and waits for those runs.
func (s *scheduler) refreshNow(ctx workflow.Context, raw json.RawMessage) (RefreshNowResult, error) {
	names, err := ParseRefresh(raw, s.taskNames())
	if err != nil {
		return RefreshNowResult{}, err
	}
	want := make(map[string]int64, len(names))
	for _, name := range names {
		want[name] = s.tasks[name].Started + 1
	}
	s.request(names)
	s.logger.Info("scheduler.refresh_requested", "tasks", names, "via", "update")
	s.wake.SendAsync(struct{}{})
	if err := workflow.Await(ctx, func() bool {
		for _, name := range names {
			if s.tasks[name].Finished < want[name] {
				return false
			}
		}
		return true
	}); err != nil {
		return RefreshNowResult{}, err
	}
	var res RefreshNowResult
	for _, name := range names {
		switch name {
		case pacer.TaskTenero:
			res.Tenero = s.state.LastTeneroResult
		case pacer.TaskSweep:
			res.Sweep = s.state.LastSweepResult
		}
	}
	return res, nil
}

func (s *scheduler) loop(ctx workflow.Context) error {
	draining := false
	for {
		if err := ctx.Err(); err != nil {
			return err // cancelled by an operator
		}
		now := workflow.Now(ctx)
		s.expirePause(now)
		s.startRuns(ctx, now, draining)
		if !draining && s.continueAsNewWanted(ctx) {
			draining = true
			s.logger.Info("scheduler.continue_as_new_wanted", "historyLength", workflow.GetInfo(ctx).GetCurrentHistoryLength())
		}
		if draining && s.idle() {
			if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) || !s.idle() }); err != nil {
				return err
			}
			if s.idle() {
				s.drainSignals(ctx)
				if s.idle() {
					return s.continueAsNew(ctx)
				}
			}
			continue
		}
		s.wait(ctx, now, draining)
	}
}

// idle reports whether no run is in flight and none is requested.
func (s *scheduler) idle() bool {
	for _, t := range s.state.Tasks {
		if t.Running() || t.Requested {
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
	if s.cancelTimer != nil {
		s.cancelTimer()
	}
	state := s.state
	s.logger.Info("scheduler.continued_as_new", "generation", state.Generation+1)
	return workflow.NewContinueAsNewError(ctx, WorkflowType, SchedulerInput{Config: s.cfg, State: &state})
}

// startRuns starts every task that should start. While draining for
// continue-as-new only explicit requests start, so that update callers are
// answered before the run ends.
func (s *scheduler) startRuns(ctx workflow.Context, now time.Time, draining bool) {
	for _, d := range s.defs {
		t := s.tasks[d.name]
		if !t.ShouldStart(now, s.state.PausedUntil) || (draining && !t.Requested) {
			continue
		}
		forced := t.Requested
		t.Begin(now)
		workflow.Go(ctx, func(ctx workflow.Context) {
			o := d.run(ctx, s, forced)
			if t.Finish(workflow.Now(ctx), o, s.cfg.breaker()) {
				s.logger.Error("scheduler.breaker_tripped", "task", d.name, "consecutiveFailures", t.ConsecutiveFailures,
					"class", o.Class, "error", o.Message, "probeAt", t.BreakerUntil,
					"hint", "fix the cause, then signal resume or refresh to close it")
			}
			if o.Class != "" {
				s.logger.Warn("scheduler.task_failed", "task", d.name, "class", o.Class, "error", o.Message,
					"consecutiveFailures", t.ConsecutiveFailures)
			}
			if o.Backoff > 0 {
				s.logger.Warn("scheduler.task_deferred", "task", d.name, "until", t.NextRunAfter)
			}
			s.wake.SendAsync(struct{}{})
		})
	}
}

// wait blocks until a message arrives, a run finishes or the timer fires.
func (s *scheduler) wait(ctx workflow.Context, now time.Time, draining bool) {
	sel := workflow.NewSelector(ctx)
	for _, sig := range s.signals() {
		sel.AddReceive(sig.ch, func(c workflow.ReceiveChannel, _ bool) { s.receive(ctx, sig) })
	}
	sel.AddReceive(s.wake, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil) })
	if wake, ok := schedule.NextWake(now, s.state.PausedUntil, s.state.Tasks); ok && !draining {
		s.armTimer(ctx, now, wake)
	}
	if s.timer != nil {
		sel.AddFuture(s.timer, func(workflow.Future) { s.timer, s.cancelTimer = nil, nil })
	}
	s.setDetails(ctx)
	sel.Select(ctx)
}

// armTimer keeps one durable timer pointed at the next wake. An unchanged
// wake time reuses the running timer: every timer is a billed action and two
// history events.
func (s *scheduler) armTimer(ctx workflow.Context, now, wake time.Time) {
	if s.timer != nil && s.timerAt.Equal(wake) {
		return
	}
	if s.cancelTimer != nil {
		s.cancelTimer()
	}
	d := wake.Sub(now)
	if d < time.Second {
		d = time.Second
	}
	tctx, cancel := workflow.WithCancel(ctx)
	s.timer = workflow.NewTimerWithOptions(tctx, d, workflow.TimerOptions{Summary: "next wake: " + s.dueSummary(wake)})
	s.timerAt, s.cancelTimer = wake, cancel
}

// dueSummary names the tasks (or the pause) the timer wakes for.
func (s *scheduler) dueSummary(wake time.Time) string {
	var names []string
	for _, t := range s.state.Tasks {
		if !t.Running() && !t.DueAt().After(wake) {
			names = append(names, t.Name)
		}
	}
	if schedule.Paused(wake.Add(-time.Nanosecond), s.state.PausedUntil) && s.state.PausedUntil.Equal(wake) {
		return "pause ends"
	}
	if len(names) == 0 {
		return "pause ends"
	}
	return strings.Join(names, ", ")
}

func (s *scheduler) expirePause(now time.Time) {
	if s.state.PausedUntil != nil && !schedule.Paused(now, s.state.PausedUntil) {
		s.logger.Info("scheduler.resumed", "reason", "pause expired", "pausedUntil", *s.state.PausedUntil)
		s.state.PausedUntil = nil
	}
}

func (s *scheduler) onPause(ctx workflow.Context, raw json.RawMessage) {
	until, err := ParsePause(raw, workflow.Now(ctx))
	if err != nil {
		s.logger.Warn("scheduler.message_rejected", "message", SignalPause, "reason", clip([]byte(err.Error())), "input", clip(raw))
		return
	}
	s.state.PausedUntil = &until
	s.logger.Info("scheduler.paused", "until", until)
}

func (s *scheduler) onResume() {
	for _, t := range s.state.Tasks {
		if t.BreakerOpen() {
			t.ResetBreaker()
			s.logger.Info("scheduler.breaker_reset", "task", t.Name, "via", "resume")
		}
	}
	if s.state.PausedUntil == nil {
		s.logger.Info("scheduler.resumed", "reason", "resume signal (was not paused)")
		return
	}
	s.state.PausedUntil = nil
	s.logger.Info("scheduler.resumed", "reason", "resume signal")
}

func (s *scheduler) onRefresh(raw json.RawMessage) {
	names, err := ParseRefresh(raw, s.taskNames())
	if err != nil {
		s.logger.Warn("scheduler.message_rejected", "message", SignalRefresh, "reason", clip([]byte(err.Error())), "input", clip(raw))
		return
	}
	s.request(names)
	s.logger.Info("scheduler.refresh_requested", "tasks", names, "via", "signal")
}

func (s *scheduler) onTune(ctx workflow.Context, raw json.RawMessage) {
	in, names, err := ParseTune(raw, s.taskNames())
	if err == nil && !s.paced {
		err = errors.New("pacing is off in this run (it began before adaptive pacing existed; it turns on at the next continue-as-new)")
	}
	if err != nil {
		s.logger.Warn("scheduler.message_rejected", "message", SignalTune, "reason", clip([]byte(err.Error())), "input", clip(raw))
		return
	}
	s.tune(in, names, workflow.Now(ctx))
}

// request asks for a run of each task as soon as possible. An explicit
// refresh is an operator's word that the cause is fixed: it closes an open
// breaker too.
func (s *scheduler) request(names []string) {
	for _, name := range names {
		t := s.tasks[name]
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
	// noInput signals ignore their payload, so it is never decoded.
	noInput bool
}

func (s *scheduler) signals() []signal {
	return []signal{
		{SignalPause, s.pauseCh, s.onPause, false},
		// resume takes no input: whatever payload it carries is ignored.
		{SignalResume, s.resumeCh, func(workflow.Context, json.RawMessage) { s.onResume() }, true},
		{SignalRefresh, s.refreshCh, func(_ workflow.Context, raw json.RawMessage) { s.onRefresh(raw) }, false},
		{SignalTune, s.tuneCh, s.onTune, false},
	}
}

// receive takes one pending signal off its channel, if any, and applies it.
// The payload is taken raw, so one that cannot be decoded (a wrong encoding)
// is rejected here with a reason: a decoding Receive would drop it silently
// and then block until the next signal of that name.
func (s *scheduler) receive(ctx workflow.Context, sig signal) bool {
	var rv converter.RawValue
	if !sig.ch.ReceiveAsync(&rv) {
		return false
	}
	var raw json.RawMessage
	if p := rv.Payload(); p != nil && !sig.noInput {
		if err := converter.GetDefaultDataConverter().FromPayload(p, &raw); err != nil {
			s.logger.Warn("scheduler.message_rejected", "message", sig.name, "reason", clip([]byte("undecodable payload: "+err.Error())))
			return true
		}
	}
	sig.handle(ctx, raw)
	return true
}

// drainSignals applies every signal already delivered, so none is lost when
// the run continues as new: their effects travel in the carried state.
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
// and a heartbeat timeout a few times the activities' 5 s heartbeat, so a
// killed worker's attempt moves to another worker within seconds.
func activityOptions(summary string, startToClose time.Duration) workflow.ActivityOptions {
	return workflow.ActivityOptions{
		StartToCloseTimeout: startToClose,
		HeartbeatTimeout:    20 * time.Second,
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

func runTenero(ctx workflow.Context, s *scheduler, forced bool) schedule.Outcome {
	in := pacer.TeneroInput{
		MaxTokens:             s.batch(pacer.TaskTenero, workflow.Now(ctx), forced),
		StopAtMinuteRemaining: s.stopAt(pacer.TaskTenero),
	}
	p := s.state.Pacing[pacer.TaskTenero]
	if p != nil {
		in.TailFrom = p.TailFrom
	}
	res, o := runTask[pacer.TeneroResult](ctx, activityOptions("tenero price refresh", 10*time.Minute),
		ActivityRefreshTenero, in)
	s.state.LastTeneroResult = res
	if p != nil && res.ErrorClass == "" {
		p.TailFrom = res.NextTailFrom
	}
	// Pegs cost no request; not_found and parse_error are item problems
	// the upstream answered, so they count as its successes.
	successes := res.Succeeded - res.Pegged + res.Failed - res.UpstreamFailed
	s.observe(s.tasks[pacer.TaskTenero], &res.Run, successes, workflow.Now(ctx))
	return o
}

func runSweep(ctx workflow.Context, s *scheduler, forced bool) schedule.Outcome {
	page := s.cfg.SweepPageSize
	if s.paced {
		page = s.batch(pacer.TaskSweep, workflow.Now(ctx), forced)
	}
	res, o := runTask[pacer.SweepResult](ctx, activityOptions("competition swap sweep", 20*time.Minute),
		ActivitySweep, pacer.SweepInput{PageSize: page})
	s.state.LastSweepResult = res
	s.observe(s.tasks[pacer.TaskSweep], &res.Run, res.Scanned, workflow.Now(ctx))
	return o
}
