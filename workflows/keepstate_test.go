package workflows

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/cron"
	"github.com/pacer-dev/pacer/internal/schedule"
)

// update sends an update at virtual time d and records its outcome.
type updateOutcome struct {
	rejected error
	result   any
	err      error
	done     bool
}

func (h *harness) update(d time.Duration, name, payload string) *updateOutcome {
	out := &updateOutcome{}
	h.at(d, func() {
		var args []any
		if payload != "" {
			args = append(args, json.RawMessage(payload))
		}
		h.env.UpdateWorkflow(name, name+d.String()+payload, &testsuite.TestUpdateCallback{
			OnReject:   func(err error) { out.rejected, out.done = err, true },
			OnAccept:   func() {},
			OnComplete: func(v any, err error) { out.result, out.err, out.done = v, err, true },
		}, args...)
	})
	return out
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		give    Config
		wantErr string
	}{
		{name: "defaults", give: Config{}},
		{name: "one second cadences", give: Config{TeneroEvery: pacer.Duration(time.Second), SweepEvery: pacer.Duration(time.Second)}},
		{name: "sub-second cadence", give: Config{TeneroEvery: pacer.Duration(500 * time.Millisecond)}, wantErr: "teneroEvery 500ms: want 0 (the default) or 1s to"},
		{name: "negative cadence", give: Config{SweepEvery: pacer.Duration(-time.Minute)}, wantErr: "sweepEvery -1m0s"},
		{name: "tiny history", give: Config{MaxHistoryEvents: 10}, wantErr: "maxHistoryEvents 10"},
		{name: "huge history", give: Config{MaxHistoryEvents: 50_000}, wantErr: "maxHistoryEvents 50000"},
		{name: "largest history", give: Config{MaxHistoryEvents: maxHistoryEvents}},
		// The start hold (twice it, 40,002) would fire too close to the
		// server's limit of 51,200 events.
		{name: "history past the bound", give: Config{MaxHistoryEvents: maxHistoryEvents + 1}, wantErr: "maxHistoryEvents 20001"},
		{name: "breaker off", give: Config{BreakerThreshold: -1}},
		{name: "breaker below off", give: Config{BreakerThreshold: -2}, wantErr: "breakerThreshold -2"},
		{name: "every error at once", give: Config{TeneroEvery: 1, MaxHistoryEvents: 10}, wantErr: "maxHistoryEvents 10"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.give.Validate()
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrInvalidConfig)
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
}

// A config the scheduler cannot run fails the run with the reason, once,
// instead of panicking in a loop of failed workflow tasks.
func TestInvalidConfigFailsTheRunClearly(t *testing.T) {
	t.Parallel()
	for _, cfg := range []Config{{MaxHistoryEvents: 3}, {TeneroEvery: pacer.Duration(time.Millisecond)}} {
		h := newHarness(t)
		h.env.ExecuteWorkflow(WorkflowType, SchedulerInput{Config: cfg})
		require.True(t, h.env.IsWorkflowCompleted())
		var appErr *temporal.ApplicationError
		require.True(t, errors.As(h.env.GetWorkflowError(), &appErr), "got %v", h.env.GetWorkflowError())
		require.Equal(t, errTypeInvalidConfig, appErr.Type())
		require.True(t, appErr.NonRetryable())
		require.Zero(t, h.tenero.calls.Load())
	}
}

func TestInputDurationsAreText(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal(SchedulerInput{Config: Config{TeneroEvery: pacer.Duration(5 * time.Minute)}})
	require.NoError(t, err)
	require.JSONEq(t, `{"config":{"teneroEvery":"5m0s"}}`, string(b))
	// Inputs recorded before durations were text still decode.
	var old SchedulerInput
	require.NoError(t, json.Unmarshal([]byte(`{"config":{"teneroEvery":2000000000,"sweepEvery":3000000000},
		"state":{"tasks":[{"name":"tenero","every":2000000000,"started":3,"finished":3}],"generation":0}}`), &old))
	require.Equal(t, pacer.Duration(2*time.Second), old.Config.TeneroEvery)
	require.Equal(t, pacer.Duration(2*time.Second), old.State.Tasks[0].Every)
}

func TestStopCompletesWithStateAsResult(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.at(time.Minute, func() { h.signal(SignalPause, `{"for":"2h"}`) })
	bad := h.update(2*time.Minute, UpdateStop, `{"reason":"`+strings.Repeat("x", 600)+`"}`)
	stop := h.update(3*time.Minute, UpdateStop, `{"reason":"maintenance"}`)
	h.env.ExecuteWorkflow(WorkflowType, SchedulerInput{Config: Config{TeneroEvery: pacer.Duration(2 * time.Minute)}})
	require.True(t, h.env.IsWorkflowCompleted())
	require.NoError(t, h.env.GetWorkflowError())
	var res StopResult
	require.NoError(t, h.env.GetWorkflowResult(&res))
	require.Equal(t, "maintenance", res.Reason)
	require.Equal(t, t0.Add(3*time.Minute), res.StoppedAt)
	require.Equal(t, pacer.Duration(2*time.Minute), res.Config.TeneroEvery)
	require.Equal(t, t0.Add(time.Minute+2*time.Hour), *res.State.PausedUntil, "the pause travels in the result")
	require.EqualValues(t, 1, res.State.Tasks[0].Started)

	require.ErrorContains(t, bad.rejected, "at most 500")
	require.NoError(t, stop.err)
	require.Equal(t, "maintenance", stop.result.(*StopResult).Reason)
}

// Once a stop began, nothing may change the state it hands over.
func TestStoppingRejectsChanges(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.tenero.set(func(int32) (pacer.TeneroResult, error) {
		time.Sleep(50 * time.Millisecond) // real time: the stop arrives while it runs
		return pacer.TeneroResult{Succeeded: 1}, nil
	})
	stop := h.update(5*time.Minute, UpdateStop, ``)
	again := h.update(5*time.Minute, UpdateStop, `{"reason":"twice"}`)
	pause := h.update(5*time.Minute, UpdatePause, `{"for":"1h"}`)
	refresh := h.update(5*time.Minute, UpdateRefreshNow, `{"task":"all"}`)
	h.env.ExecuteWorkflow(WorkflowType, SchedulerInput{})
	require.NoError(t, h.env.GetWorkflowError())
	require.True(t, stop.done)
	require.ErrorIs(t, pause.rejected, errStopping)
	require.ErrorIs(t, refresh.rejected, errStopping)
	require.ErrorContains(t, again.rejected, "already stopping")
}

func TestUpdatesAnswerOrReject(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.tenero.set(func(int32) (pacer.TeneroResult, error) {
		return pacer.TeneroResult{}, temporal.NewNonRetryableApplicationError("410", string(pacer.ClassPermanent), nil)
	})
	pause := h.update(time.Minute, UpdatePause, `{"for":"30m"}`)
	pastPause := h.update(time.Minute, UpdatePause, `{"until":"2001-01-01T00:00:00Z"}`)
	tune := h.update(2*time.Minute, UpdateTune, `{"task":"all","batch":20}`)
	sweepBatch := h.update(2*time.Minute, UpdateTune, `{"task":"sweep","batch":20}`)
	badTune := h.update(2*time.Minute, UpdateTune, `{"task":"nope","batch":20}`)
	resume := h.update(20*time.Minute, UpdateResume, ``)
	h.runFor(t, 21*time.Minute, SchedulerInput{Config: Config{BreakerThreshold: 1}})

	require.NoError(t, pause.err)
	require.Equal(t, PauseResult{PausedUntil: t0.Add(31 * time.Minute)}, pause.result)
	require.ErrorContains(t, pastPause.rejected, "not in the future")
	require.NoError(t, tune.err)
	require.Equal(t, Pace{Batch: 20, Interval: pacer.Duration(DefaultTeneroEvery)}, tune.result.(TuneResult).Tasks[pacer.TaskTenero])
	require.Equal(t, Pace{Interval: pacer.Duration(time.Minute)}, tune.result.(TuneResult).Tasks[pacer.TaskSweep], "the sweep has no batch")
	require.ErrorIs(t, sweepBatch.rejected, ErrSweepBatch)
	require.ErrorContains(t, badTune.rejected, `unknown task "nope"`)
	require.NoError(t, resume.err)
	require.Equal(t, ResumeResult{WasPaused: true, BreakersClosed: []string{pacer.TaskTenero}}, resume.result)
}

func TestReconfigureInPlace(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	var starts []time.Time
	var mu sync.Mutex
	h.tenero.set(func(int32) (pacer.TeneroResult, error) {
		mu.Lock()
		defer mu.Unlock()
		starts = append(starts, h.env.Now().UTC())
		return pacer.TeneroResult{Succeeded: 1}, nil
	})
	rejected := map[string]*updateOutcome{}
	for give, want := range map[string]string{
		`{"schedules":{"deliver":{"every":"1m"}}}`:    "deliver has no schedule",
		`{"schedules":{"rollup":{"cron":"5 * * *"}}}`: "schedules",
		`{"teneroEvery":"500ms"}`:                     "teneroEvery 500ms",
		`{"teneroEvery":"soon"}`:                      `"teneroEvery" must be a positive Go duration`,
		`{}`:                                          `give "teneroEvery"`,
		`{"teneroEvery":"2m","extra":1}`:              "invalid JSON",
	} {
		rejected[want] = h.update(time.Minute, UpdateReconfigure, give)
	}
	ok := h.update(6*time.Minute, UpdateReconfigure, `{"teneroEvery":"2m"}`)
	h.env.ExecuteWorkflow(WorkflowType, SchedulerInput{Config: Config{SweepEvery: pacer.Duration(time.Hour)}})

	for want, u := range rejected {
		require.ErrorContains(t, u.rejected, want)
	}
	require.NoError(t, ok.err)
	require.Equal(t, pacer.Duration(2*time.Minute), ok.result.(ReconfigureResult).Config.TeneroEvery)
	// The run continued as new at once (nothing was in flight) with the new
	// config and the state.
	var can *workflow.ContinueAsNewError
	require.True(t, errors.As(h.env.GetWorkflowError(), &can), "got %v", h.env.GetWorkflowError())
	var next SchedulerInput
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	require.Equal(t, pacer.Duration(2*time.Minute), next.Config.TeneroEvery)
	require.Equal(t, pacer.Duration(time.Hour), next.Config.SweepEvery)
	require.Equal(t, pacer.Duration(2*time.Minute), next.State.Tasks[0].Every, "the controller follows the new cadence")
	require.Equal(t, []time.Time{t0, t0.Add(5 * time.Minute)}, starts)
}

// Each run carries its run key: a scheduled run the time it was due, a
// refresh the time it was asked for, marked manual.
func TestRunsCarryTheirOccurrence(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	var occs []pacer.Occurrence
	var mu sync.Mutex
	h.tenero.set(func(int32) (pacer.TeneroResult, error) {
		mu.Lock()
		defer mu.Unlock()
		occs = append(occs, h.tenero.last.Load().Occurrence)
		return pacer.TeneroResult{Succeeded: 1}, nil
	})
	h.at(7*time.Minute+30*time.Second, func() { h.signal(SignalRefresh, `{"task":"tenero"}`) })
	h.runFor(t, 11*time.Minute, SchedulerInput{})
	require.Equal(t, []pacer.Occurrence{
		{Task: pacer.TaskTenero, NominalAt: t0},
		{Task: pacer.TaskTenero, NominalAt: t0.Add(5 * time.Minute)},
		{Task: pacer.TaskTenero, NominalAt: t0.Add(7*time.Minute + 30*time.Second), Manual: true},
	}, occs, "the next is due 5 minutes after the refresh started, past the end")
}

// Status says why a task waits, in one word and a time.
func TestStatusSaysWhyATaskWaits(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.tenero.set(func(call int32) (pacer.TeneroResult, error) {
		if call == 2 {
			return pacer.TeneroResult{}, temporal.NewNonRetryableApplicationError("quota", string(pacer.ClassRateLimit), nil,
				pacer.TeneroResult{Run: pacer.Run{RateLimited: true, RateLimitBackoffMs: (20 * time.Minute).Milliseconds()}})
		}
		return pacer.TeneroResult{Succeeded: 1}, nil
	})
	h.at(time.Minute, func() {
		tk := h.status(t).Tasks[pacer.TaskTenero]
		require.Equal(t, "cadence", tk.Waiting)
		require.Equal(t, t0.Add(5*time.Minute), *tk.NextDueAt)
	})
	h.at(6*time.Minute, func() {
		tk := h.status(t).Tasks[pacer.TaskTenero]
		require.Equal(t, "backoff", tk.Waiting)
		require.Equal(t, t0.Add(25*time.Minute), *tk.NextDueAt)
		h.signal(SignalPause, `{"for":"1h"}`)
	})
	h.at(7*time.Minute, func() {
		tk := h.status(t).Tasks[pacer.TaskTenero]
		require.Equal(t, "paused", tk.Waiting)
		require.Equal(t, t0.Add(66*time.Minute), *tk.NextDueAt)
	})
	h.runFor(t, 8*time.Minute, SchedulerInput{Config: Config{SweepEvery: pacer.Duration(time.Hour)}})
}

// One timer per wake-up: a run's end does not re-arm the timer when the
// task's next due time did not change.
func TestOneTimerPerWakeUp(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	var timers int
	h.env.SetOnTimerScheduledListener(func(string, time.Duration) { timers++ })
	h.runFor(t, 60*time.Minute+30*time.Second, SchedulerInput{})
	// Sweeps every minute from 0 to 60, tenero every 5 with them: the
	// wake-ups are the 60 minutes after the start.
	require.EqualValues(t, 61, h.sweep.calls.Load())
	require.EqualValues(t, 13, h.tenero.calls.Load())
	// Also rollup's 13:05: armed while runs were in flight (then the
	// earliest wake-up), it stands until it fires.
	require.Equal(t, 62, timers, "60 wake-ups, the timer armed for minute 61 and rollup's 13:05")
}

// The memo carries what metrics and a restart need, and is written only
// when something happened: a run's start or end, an operator's message.
func TestMemoFollowsTheState(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	var memos []Memo
	h.env.OnUpsertMemo(mock.Anything).Run(func(args mock.Arguments) {
		memos = append(memos, args.Get(0).(map[string]any)[MemoKey].(Memo))
	}).Return(nil)
	h.at(90*time.Second, func() { h.signal(SignalPause, `{"for":"1h"}`) })
	h.runFor(t, 10*time.Minute, SchedulerInput{Config: Config{SweepEvery: pacer.Duration(time.Hour)}})
	// The first runs' start, their ends (tenero, sweep, deliver,
	// finalize), the pause; then nothing happens in 8 minutes paused, and
	// nothing is written.
	require.LessOrEqual(t, len(memos), 6, "%+v", memos)
	require.Nil(t, memos[0].PausedUntil)
	last := memos[len(memos)-1]
	require.Equal(t, t0.Add(90*time.Second+time.Hour), *last.PausedUntil)
	require.Equal(t, t0.Add(90*time.Second), last.At)
}

// The largest valid maxHistoryEvents leaves the start hold (holdStarts,
// at twice it) a fifth of the server's history limit below it.
func TestHistoryBoundsStayBelowTheServersLimit(t *testing.T) {
	t.Parallel()
	// The Temporal server's default history length limit
	// (limit.historyCount.error): a run past it is terminated.
	const serverHistoryLimit = 51_200
	require.Less(t, 2*maxHistoryEvents, serverHistoryLimit*4/5)
	require.Less(t, 2*DefaultMaxHistoryEvents, serverHistoryLimit*4/5)
}

// The stop update answers only once the refreshes delivered before it
// have run (SPEC §3.1: their callers were promised a run). The loop is held
// until the stop begins, so the refresh is still queued in its channel when
// the stop's handler runs: the handler itself must take it (a stop that
// answered at once would answer with the sweep never started, and the run
// would start the refresh only afterwards).
func TestStopDrainsQueuedRefreshes(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.env.RegisterWorkflowWithOptions(func(ctx workflow.Context, in SchedulerInput) (*StopResult, error) {
		s := newScheduler(ctx, in, runOptions{})
		if err := s.registerHandlers(ctx); err != nil {
			return nil, err
		}
		// The loop starts once the stop began: until then a signal stays
		// in its channel.
		if err := workflow.Await(ctx, func() bool { return s.stopping != nil }); err != nil {
			return nil, err
		}
		return s.loop(ctx)
	}, workflow.RegisterOptions{Name: "heldScheduler"})
	stop := &updateOutcome{}
	h.at(2*time.Minute, func() {
		h.signal(SignalRefresh, `{"task":"sweep"}`)
		h.env.UpdateWorkflow(UpdateStop, "stop", &testsuite.TestUpdateCallback{
			OnReject: func(err error) { stop.rejected, stop.done = err, true },
			OnAccept: func() {},
			OnComplete: func(v any, err error) {
				// The answer as its caller gets it, when it is given: the
				// result shares the run's tasks, which later runs change.
				var res StopResult
				b, merr := json.Marshal(v)
				require.NoError(t, merr)
				require.NoError(t, json.Unmarshal(b, &res))
				stop.result, stop.err, stop.done = &res, err, true
			},
		}, json.RawMessage(`{"reason":"drain"}`))
	})
	// Nothing is due at the stop but the refresh: each task ran at the start.
	ran := t0
	carried := &State{Tasks: []*schedule.Task{{Name: pacer.TaskTenero, LastRunAt: &ran}, {Name: pacer.TaskSweep, LastRunAt: &ran},
		{Name: pacer.TaskRollup, Cron: &cron.State{Last: ran}}, {Name: pacer.TaskDeliver, Dormant: true}}}
	h.env.ExecuteWorkflow("heldScheduler", SchedulerInput{Config: Config{TeneroEvery: pacer.Duration(time.Hour),
		SweepEvery: pacer.Duration(time.Hour)}, State: carried})
	require.NoError(t, h.env.GetWorkflowError())
	require.True(t, stop.done)
	require.NoError(t, stop.err)
	require.NoError(t, stop.rejected)
	require.EqualValues(t, 1, h.sweep.calls.Load(), "the refresh ran")
	res := stop.result.(*StopResult)
	i := slices.IndexFunc(res.State.Tasks, func(t *schedule.Task) bool { return t.Name == pacer.TaskSweep })
	require.EqualValues(t, 1, res.State.Tasks[i].Started, "the stop answered after the refresh's run")
	require.EqualValues(t, 1, res.State.Tasks[i].Finished)
	require.False(t, res.State.Tasks[i].Requested)
}

// A panic in one task's scheduling code fences that task off (SPEC §3.8):
// it shows broken with the panic, the others keep their cadence, and
// resume gives it another try.
func TestAPanicFencesOneTask(t *testing.T) {
	t.Parallel()
	var faulty atomic.Bool
	faulty.Store(true)
	h := newHarnessOpts(t, nil, &runOptions{fault: func(tk *schedule.Task) {
		if tk.Name == pacer.TaskRollup && faulty.Load() {
			panic("cron arithmetic went wrong")
		}
	}})
	var resumed *updateOutcome
	h.at(32*time.Minute+30*time.Second, func() {
		st := h.status(t)
		ro := st.Tasks[pacer.TaskRollup]
		require.Equal(t, schedule.ReasonBroken, ro.Waiting)
		require.NotNil(t, ro.Broken)
		require.Contains(t, ro.Broken.Message, "cron arithmetic went wrong")
		require.Equal(t, schedule.ReasonCadence, st.Tasks[pacer.TaskTenero].Waiting)
		require.Empty(t, h.rollup.runs(), "the broken task does not run")
		// Tenero every 5 minutes from 0, the sweep every minute: on time.
		require.EqualValues(t, 7, h.tenero.calls.Load())
		require.EqualValues(t, 33, h.sweep.calls.Load())
		faulty.Store(false) // the operator fixed the cause
	})
	resumed = h.update(32*time.Minute+31*time.Second, UpdateResume, ``)
	h.at(70*time.Minute, func() {
		st := h.status(t)
		require.Nil(t, st.Tasks[pacer.TaskRollup].Broken)
		require.NotEqual(t, schedule.ReasonBroken, st.Tasks[pacer.TaskRollup].Waiting)
		require.NotEmpty(t, h.rollup.runs(), "back on its schedule after resume")
	})
	h.runFor(t, 71*time.Minute, SchedulerInput{})
	require.NoError(t, resumed.err)
	require.Equal(t, []string{pacer.TaskRollup}, resumed.result.(ResumeResult).Repaired)

	// A fixed build's next run (a continue-as-new, a restart) tries the
	// broken task again: the fence is not carried.
	h2 := newHarness(t)
	h2.at(time.Minute, func() {
		require.Nil(t, h2.status(t).Tasks[pacer.TaskRollup].Broken)
		require.NotEqual(t, schedule.ReasonBroken, h2.status(t).Tasks[pacer.TaskRollup].Waiting)
	})
	broken := &schedule.RunError{Class: schedule.ReasonBroken, Message: "cron arithmetic went wrong", At: t0}
	h2.runFor(t, 2*time.Minute, SchedulerInput{State: &State{Tasks: []*schedule.Task{{Name: pacer.TaskRollup, Broken: broken}}}})
}

// The defaults in force are fixed for a run (SPEC §3.5): a release that
// changes one reaches a running scheduler at its next continue-as-new,
// never in the middle of its history.
func TestDefaultsAreFixedPerRun(t *testing.T) {
	t.Parallel()
	var released atomic.Bool // a new build, whose breaker default is 3
	build := func() Config {
		d := CodeDefaults()
		if released.Load() {
			d.BreakerThreshold = 3
		}
		return d
	}
	h := newHarnessOpts(t, nil, &runOptions{defaults: build})
	h.at(time.Minute, func() { released.Store(true) })
	h.at(2*time.Minute, func() {
		st := h.status(t)
		require.Equal(t, DefaultBreakerThreshold, st.Tasks[pacer.TaskTenero].Breaker.Threshold, "the run keeps the defaults it started with")
		require.Equal(t, DefaultBreakerThreshold, st.Config.BreakerThreshold)
	})
	h.update(3*time.Minute, UpdateReconfigure, `{"sweepEvery":"2m"}`)
	h.env.ExecuteWorkflow(WorkflowType, SchedulerInput{})
	var can *workflow.ContinueAsNewError
	require.True(t, errors.As(h.env.GetWorkflowError(), &can), "got %v", h.env.GetWorkflowError())
	var next SchedulerInput
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	require.Equal(t, Config{SweepEvery: pacer.Duration(2 * time.Minute)}, next.Config, "only what the operator set")
	require.NotNil(t, next.Defaults)
	require.Equal(t, 3, next.Defaults.BreakerThreshold, "the next run takes the release's default")

	// The next run, on the same build, keeps it.
	h2 := newHarnessOpts(t, nil, &runOptions{defaults: CodeDefaults})
	h2.at(time.Minute, func() {
		st := h2.status(t)
		require.Equal(t, 3, st.Tasks[pacer.TaskTenero].Breaker.Threshold)
		require.Equal(t, pacer.Duration(2*time.Minute), st.Config.SweepEvery)
	})
	h2.runFor(t, 2*time.Minute, next)
}
