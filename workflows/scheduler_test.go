package workflows

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/fault"
)

var t0 = time.Date(2026, 5, 14, 12, 0, 0, 0, time.UTC)

// fakeTenero stands in for the tenero activity: it counts calls and answers
// with whatever the test sets.
type fakeTenero struct {
	calls  atomic.Int32
	answer atomic.Pointer[func(call int32) (pacer.TeneroResult, error)]
	last   atomic.Pointer[pacer.TeneroInput]
}

func (f *fakeTenero) run(ctx context.Context, in pacer.TeneroInput) (pacer.TeneroResult, error) {
	f.last.Store(&in)
	n := f.calls.Add(1)
	if a := f.answer.Load(); a != nil {
		return (*a)(n)
	}
	return pacer.TeneroResult{Run: pacer.Run{StartedAt: activity.GetInfo(ctx).StartedTime}, TokensAttempted: 3, Succeeded: 3}, nil
}

func (f *fakeTenero) set(a func(call int32) (pacer.TeneroResult, error)) { f.answer.Store(&a) }

// fakeSweep counts sweep runs and answers with a fixed tally; next, when
// set before the run starts, says when its next agent is due.
type fakeSweep struct {
	calls atomic.Int32
	next  func() time.Time
}

func (f *fakeSweep) run(context.Context, pacer.SweepInput) (pacer.SweepResult, error) {
	f.calls.Add(1)
	res := pacer.SweepResult{Scanned: 2, Found: 1, Inserted: 1}
	if f.next != nil {
		at := f.next()
		res.NextDueAt = &at
	}
	return res, nil
}

// fakeRollup records the occurrences it was run for.
type fakeRollup struct {
	mu   sync.Mutex
	occs []pacer.Occurrence
}

func (f *fakeRollup) run(_ context.Context, in pacer.RollupInput) (pacer.RollupResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.occs = append(f.occs, in.Occurrence)
	return pacer.RollupResult{Rows: 1}, nil
}

func (f *fakeRollup) runs() []pacer.Occurrence {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.occs)
}

// fakeDeliver counts deliver runs; answer, when set, says what each
// returns (by default: nothing pending).
type fakeDeliver struct {
	calls  atomic.Int32
	answer atomic.Pointer[func(call int32) (pacer.DeliverResult, error)]
}

func (f *fakeDeliver) run(context.Context, pacer.DeliverInput) (pacer.DeliverResult, error) {
	n := f.calls.Add(1)
	if a := f.answer.Load(); a != nil {
		return (*a)(n)
	}
	return pacer.DeliverResult{}, nil
}

func (f *fakeDeliver) set(a func(call int32) (pacer.DeliverResult, error)) { f.answer.Store(&a) }

// fakeFinalize stands in for the finalize activity (SPEC §13): by
// default no round waits (nothing to finalize, dormant).
type fakeFinalize struct {
	calls  atomic.Int32
	answer atomic.Pointer[func(call int32) (pacer.FinalizeResult, error)]
}

func (f *fakeFinalize) run(context.Context, pacer.FinalizeInput) (pacer.FinalizeResult, error) {
	n := f.calls.Add(1)
	if a := f.answer.Load(); a != nil {
		return (*a)(n)
	}
	return pacer.FinalizeResult{}, nil
}

func (f *fakeFinalize) set(a func(call int32) (pacer.FinalizeResult, error)) { f.answer.Store(&a) }

// fakeChainhook counts chainhook runs: the hook is as it should be.
type fakeChainhook struct{ calls atomic.Int32 }

func (f *fakeChainhook) run(context.Context, pacer.ChainhookInput) (pacer.ChainhookResult, error) {
	f.calls.Add(1)
	return pacer.ChainhookResult{Action: "none", HookStatus: "streaming"}, nil
}

type harness struct {
	env       *testsuite.TestWorkflowEnvironment
	tenero    *fakeTenero
	sweep     *fakeSweep
	rollup    *fakeRollup
	deliver   *fakeDeliver
	finalize  *fakeFinalize
	chainhook *fakeChainhook
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	return newHarnessWith(t, nil)
}

// newHarnessWith is newHarness with rollup, when not nil, run as the
// Rollup activity in place of the fake.
func newHarnessWith(t *testing.T, rollup func(context.Context, pacer.RollupInput) (pacer.RollupResult, error)) *harness {
	t.Helper()
	return newHarnessOpts(t, rollup, nil)
}

// newHarnessOpts is newHarnessWith running the scheduler with opts (a
// fault, a build's defaults) when not nil.
func newHarnessOpts(t *testing.T, rollup func(context.Context, pacer.RollupInput) (pacer.RollupResult, error), opts *runOptions) *harness {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.SetStartTime(t0)
	env.SetTestTimeout(30 * time.Second)
	if opts == nil {
		Register(env)
	} else {
		env.RegisterWorkflowWithOptions(func(ctx workflow.Context, in SchedulerInput) (*StopResult, error) {
			return schedulerWorkflow(ctx, in, *opts)
		}, workflow.RegisterOptions{Name: WorkflowType})
	}
	h := &harness{env: env, tenero: &fakeTenero{}, sweep: &fakeSweep{}, rollup: &fakeRollup{}, deliver: &fakeDeliver{},
		finalize: &fakeFinalize{}, chainhook: &fakeChainhook{}}
	env.RegisterActivityWithOptions(h.tenero.run, activity.RegisterOptions{Name: ActivityRefreshTenero})
	env.RegisterActivityWithOptions(h.sweep.run, activity.RegisterOptions{Name: ActivitySweep})
	if rollup == nil {
		rollup = h.rollup.run
	}
	env.RegisterActivityWithOptions(rollup, activity.RegisterOptions{Name: ActivityRollup})
	env.RegisterActivityWithOptions(h.deliver.run, activity.RegisterOptions{Name: ActivityDeliver})
	env.RegisterActivityWithOptions(h.finalize.run, activity.RegisterOptions{Name: ActivityFinalize})
	env.RegisterActivityWithOptions(h.chainhook.run, activity.RegisterOptions{Name: ActivityChainhook})
	return h
}

// at runs f at virtual time t0+d.
func (h *harness) at(d time.Duration, f func()) { h.env.RegisterDelayedCallback(f, d) }

func (h *harness) status(t *testing.T) Status {
	t.Helper()
	v, err := h.env.QueryWorkflow(QueryStatus)
	require.NoError(t, err)
	var st Status
	require.NoError(t, v.Get(&st))
	return st
}

func (h *harness) signal(name string, payload string) {
	if payload == "" {
		h.env.SignalWorkflow(name, nil)
		return
	}
	h.env.SignalWorkflow(name, json.RawMessage(payload))
}

// runFor executes the workflow and cancels it at t0+d.
func (h *harness) runFor(t *testing.T, d time.Duration, in SchedulerInput) {
	t.Helper()
	h.at(d, h.env.CancelWorkflow)
	h.env.ExecuteWorkflow(WorkflowType, in)
	require.True(t, h.env.IsWorkflowCompleted())
	require.True(t, temporal.IsCanceledError(h.env.GetWorkflowError()), "workflow ended with %v", h.env.GetWorkflowError())
}

func TestSchedulerRunsOnCadence(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.at(time.Minute, func() {
		st := h.status(t)
		require.Equal(t, DefaultWorkflowID, st.WorkflowID)
		require.NotNil(t, st.LastTeneroResult)
		require.Equal(t, 3, st.LastTeneroResult.Succeeded)
		require.Equal(t, t0, *st.LastTeneroRunAt)
		require.Equal(t, t0.Add(5*time.Minute), *st.NextWakeAt)
		require.Equal(t, "5m0s", st.Tasks[pacer.TaskTenero].Every)
		require.Zero(t, st.ConsecutiveFailures[pacer.TaskTenero])
	})
	h.env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: DefaultWorkflowID})
	h.runFor(t, 61*time.Minute, SchedulerInput{Config: Config{SweepEvery: pacer.Duration(15 * time.Minute)}})
	// Runs at 0, 5, …, 60 minutes, and the sweep at 0, 15, 30, 45, 60.
	require.EqualValues(t, 13, h.tenero.calls.Load())
	require.EqualValues(t, 5, h.sweep.calls.Load())
}

func TestSchedulerPauseAndResume(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.at(time.Minute, func() { h.signal(SignalPause, `{"for":"30m"}`) })
	h.at(2*time.Minute, func() {
		st := h.status(t)
		require.Equal(t, t0.Add(31*time.Minute), *st.PausedUntil)
	})
	h.at(20*time.Minute, func() {
		require.EqualValues(t, 1, h.tenero.calls.Load(), "no run while paused")
		h.signal(SignalResume, "")
	})
	h.at(21*time.Minute, func() {
		require.EqualValues(t, 2, h.tenero.calls.Load(), "resume runs the overdue task at once")
		require.Nil(t, h.status(t).PausedUntil)
	})
	h.runFor(t, 22*time.Minute, SchedulerInput{})
}

func TestSchedulerPauseExpires(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.at(time.Minute, func() { h.signal(SignalPause, `{"until":"`+t0.Add(12*time.Minute).Format(time.RFC3339)+`"}`) })
	h.at(11*time.Minute, func() { require.EqualValues(t, 1, h.tenero.calls.Load()) })
	h.at(12*time.Minute+time.Second, func() {
		require.EqualValues(t, 2, h.tenero.calls.Load(), "the overdue run starts when the pause ends")
		require.Nil(t, h.status(t).PausedUntil)
	})
	h.runFor(t, 13*time.Minute, SchedulerInput{})
}

func TestSchedulerRefreshIgnoresPause(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.at(time.Minute, func() { h.signal(SignalPause, `{"for":"1h"}`) })
	h.at(2*time.Minute, func() { h.signal(SignalRefresh, `{"task":"tenero"}`) })
	h.at(3*time.Minute, func() {
		require.EqualValues(t, 2, h.tenero.calls.Load())
		require.NotNil(t, h.status(t).PausedUntil, "a refresh does not lift the pause")
	})
	h.runFor(t, 4*time.Minute, SchedulerInput{})
}

func TestSchedulerRefreshNowUpdate(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.tenero.set(func(call int32) (pacer.TeneroResult, error) {
		return pacer.TeneroResult{TokensAttempted: int(call), Succeeded: int(call)}, nil
	})
	var got RefreshNowResult
	var rejected error
	h.at(time.Minute, func() {
		h.env.UpdateWorkflow(UpdateRefreshNow, "u1", &testsuite.TestUpdateCallback{
			OnReject:   func(err error) { require.Fail(t, "rejected", err) },
			OnAccept:   func() {},
			OnComplete: func(v any, err error) { require.NoError(t, err); got = v.(RefreshNowResult) },
		}, json.RawMessage(`{"task":"all"}`))
		h.env.UpdateWorkflow(UpdateRefreshNow, "u2", &testsuite.TestUpdateCallback{
			OnReject:   func(err error) { rejected = err },
			OnAccept:   func() { require.Fail(t, "accepted an unknown task") },
			OnComplete: func(any, error) {},
		}, json.RawMessage(`{"task":"nope"}`))
	})
	h.runFor(t, 2*time.Minute, SchedulerInput{Config: Config{SweepEvery: pacer.Duration(15 * time.Minute)}})
	require.NotNil(t, got.Tenero)
	require.Equal(t, 2, got.Tenero.Succeeded, "the update answers with the run it caused")
	require.NotNil(t, got.Sweep)
	require.Equal(t, 1, got.Sweep.Inserted)
	require.EqualValues(t, 2, h.sweep.calls.Load())
	require.ErrorContains(t, rejected, `unknown task "nope"`)
	require.EqualValues(t, 2, h.tenero.calls.Load())
}

func TestSchedulerSurvivesMalformedMessages(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	bad := []struct{ name, payload string }{
		{SignalPause, `{"for":5}`},
		{SignalPause, `{"for":"-3m"}`},
		{SignalPause, `{"until":"2001-01-01T00:00:00Z"}`},
		{SignalPause, `{"until":"2999-01-01T00:00:00Z"}`},
		{SignalPause, `{"for":"1m","until":"2999-01-01T00:00:00Z"}`},
		{SignalPause, `{"fro":"1m"}`},
		{SignalPause, `"1m"`},
		{SignalPause, `[]`},
		{SignalPause, ``},
		{SignalRefresh, `{"task":"nope"}`},
		{SignalRefresh, `{"task":7}`},
		{SignalRefresh, `null`},
		{SignalResume, `{"unexpected":true}`},
	}
	h.at(time.Minute, func() {
		for _, b := range bad {
			h.signal(b.name, b.payload)
		}
	})
	h.at(2*time.Minute, func() { require.Nil(t, h.status(t).PausedUntil) })
	h.runFor(t, 11*time.Minute, SchedulerInput{})
	require.EqualValues(t, 3, h.tenero.calls.Load(), "the cadence went on: runs at 0, 5 and 10 minutes")
}

func TestSchedulerRateLimitDefers(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.tenero.set(func(call int32) (pacer.TeneroResult, error) {
		if call == 1 {
			return pacer.TeneroResult{}, temporal.NewNonRetryableApplicationError("month quota exhausted",
				string(pacer.ClassRateLimit), nil,
				pacer.TeneroResult{TokensAttempted: 5, Succeeded: 2,
					Run: pacer.Run{RateLimited: true, RateLimitBackoffMs: fault.MonthQuotaBackoff.Milliseconds()}})
		}
		return pacer.TeneroResult{Succeeded: 1}, nil
	})
	h.at(time.Hour, func() {
		st := h.status(t)
		require.EqualValues(t, 1, h.tenero.calls.Load())
		require.Equal(t, 1, st.ConsecutiveFailures[pacer.TaskTenero])
		require.Equal(t, t0.Add(24*time.Hour), *st.NextRunAfter[pacer.TaskTenero])
		require.Equal(t, string(pacer.ClassRateLimit), st.Tasks[pacer.TaskTenero].LastError.Class)
		require.Equal(t, 2, st.LastTeneroResult.Succeeded, "the partial result travels in the error details")
		require.True(t, st.LastTeneroResult.RateLimited)
	})
	h.at(24*time.Hour+time.Minute, func() {
		require.EqualValues(t, 2, h.tenero.calls.Load())
		require.Zero(t, h.status(t).ConsecutiveFailures[pacer.TaskTenero], "success resets the count")
	})
	// Only tenero is looked at: a sweep every hour, not every minute, spares
	// the day some 1,400 runs of the fake sweep (28 s to 2 s alone under
	// -race; 80 s in make test).
	h.runFor(t, 24*time.Hour+2*time.Minute, SchedulerInput{Config: Config{SweepEvery: pacer.Duration(time.Hour)}})
}

func TestSchedulerCountsFailures(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.tenero.set(func(int32) (pacer.TeneroResult, error) {
		return pacer.TeneroResult{}, temporal.NewApplicationError("connection refused", string(pacer.ClassTransport))
	})
	h.at(16*time.Minute, func() {
		st := h.status(t)
		require.Equal(t, 4, st.ConsecutiveFailures[pacer.TaskTenero])
		require.Equal(t, pacer.ClassTransport, st.LastTeneroResult.ErrorClass)
	})
	h.runFor(t, 17*time.Minute, SchedulerInput{})
	// Each run is three attempts of the retry policy.
	require.EqualValues(t, 12, h.tenero.calls.Load())
}

func TestSchedulerContinuesAsNewWithState(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.at(7*time.Minute, func() {
		h.env.SetContinueAsNewSuggested(true)
		// Both arrive while the run is handing over: neither may be dropped.
		h.signal(SignalRefresh, `{"task":"tenero"}`)
		h.signal(SignalPause, `{"for":"2h"}`)
	})
	h.env.ExecuteWorkflow(WorkflowType, SchedulerInput{Config: Config{TeneroEvery: pacer.Duration(3 * time.Minute)}})
	err := h.env.GetWorkflowError()
	var can *workflow.ContinueAsNewError
	require.True(t, errors.As(err, &can), "want continue-as-new, got %v", err)
	require.Equal(t, WorkflowType, can.WorkflowType.Name)
	var next SchedulerInput
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	require.Equal(t, pacer.Duration(3*time.Minute), next.Config.TeneroEvery)
	require.NotNil(t, next.State)
	require.Equal(t, t0.Add(7*time.Minute+2*time.Hour), *next.State.PausedUntil)
	require.Len(t, next.State.Tasks, 5) // tenero, sweep, rollup, deliver, finalize
	tk := next.State.Tasks[0]
	require.Equal(t, pacer.TaskTenero, tk.Name)
	// Runs at 0, 3 and 6 minutes, then the refresh drained at 7 ran before
	// the hand-over: no signal was lost.
	require.Equal(t, t0.Add(7*time.Minute), *tk.LastRunAt)
	require.EqualValues(t, 4, tk.Started)
	require.False(t, tk.Requested)
	require.EqualValues(t, 4, h.tenero.calls.Load())
	require.NotNil(t, next.State.LastTeneroResult)
}

// A task that keeps failing, or is deferred for a day, never delays another.
func TestTasksAreIsolated(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.tenero.set(func(int32) (pacer.TeneroResult, error) {
		return pacer.TeneroResult{}, temporal.NewApplicationErrorWithOptions("429 storm", string(pacer.ClassRateLimit),
			temporal.ApplicationErrorOptions{NonRetryable: true, Details: []any{pacer.TeneroResult{
				Run: pacer.Run{RateLimited: true, RateLimitBackoffMs: fault.MinuteQuotaBackoff.Milliseconds()}}}})
	})
	h.at(61*time.Minute, func() {
		st := h.status(t)
		require.Equal(t, 0, st.ConsecutiveFailures[pacer.TaskSweep])
		require.Equal(t, 1, st.LastSweepResult.Inserted)
		require.Equal(t, t0.Add(60*time.Minute), *st.LastSweepRunAt)
		require.Positive(t, st.ConsecutiveFailures[pacer.TaskTenero])
	})
	h.runFor(t, 62*time.Minute, SchedulerInput{Config: Config{SweepEvery: pacer.Duration(15 * time.Minute)}})
	require.EqualValues(t, 5, h.sweep.calls.Load(), "the sweep kept its 15-minute cadence")
}

func TestBreakerTripsAndResets(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	failing := atomic.Bool{}
	failing.Store(true)
	h.tenero.set(func(int32) (pacer.TeneroResult, error) {
		if failing.Load() {
			return pacer.TeneroResult{}, temporal.NewNonRetryableApplicationError("410 gone", string(pacer.ClassPermanent), nil)
		}
		return pacer.TeneroResult{Succeeded: 1}, nil
	})
	// Failures at 0, 5 and 10 minutes trip it; it then waits an hour.
	h.at(11*time.Minute, func() {
		st := h.status(t)
		b := st.Tasks[pacer.TaskTenero].Breaker
		require.True(t, b.Open)
		require.Equal(t, 1, b.Trips)
		require.Equal(t, t0.Add(70*time.Minute), *b.ProbeAt)
		require.Equal(t, t0.Add(70*time.Minute), *st.Tasks[pacer.TaskTenero].NextDueAt)
	})
	h.at(50*time.Minute, func() {
		require.EqualValues(t, 3, h.tenero.calls.Load(), "no runs while the breaker is open")
		failing.Store(false)
		h.signal(SignalResume, "")
	})
	h.at(51*time.Minute, func() {
		st := h.status(t)
		require.False(t, st.Tasks[pacer.TaskTenero].Breaker.Open, "resume closes the breaker")
		require.EqualValues(t, 4, h.tenero.calls.Load(), "and the overdue task runs at once")
		require.Zero(t, st.ConsecutiveFailures[pacer.TaskTenero])
	})
	h.runFor(t, 52*time.Minute, SchedulerInput{Config: Config{BreakerThreshold: 3, BreakerCooldown: pacer.Duration(time.Hour)}})
}

func TestBreakerProbesAndRefreshCloses(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.tenero.set(func(int32) (pacer.TeneroResult, error) {
		return pacer.TeneroResult{}, temporal.NewNonRetryableApplicationError("502", string(pacer.ClassServerError), nil)
	})
	// Trips at 10 min (third failure), probes at 70 and 130 minutes.
	h.at(131*time.Minute, func() {
		require.EqualValues(t, 5, h.tenero.calls.Load())
		require.True(t, h.status(t).Tasks[pacer.TaskTenero].Breaker.Open)
		h.signal(SignalRefresh, `{"task":"tenero"}`)
	})
	h.at(132*time.Minute, func() {
		require.EqualValues(t, 6, h.tenero.calls.Load(), "a refresh runs at once")
		// It failed again: three failures in a row are needed to trip anew.
		st := h.status(t)
		require.True(t, st.Tasks[pacer.TaskTenero].Breaker.Open, "still failing, so it re-opened")
	})
	h.runFor(t, 133*time.Minute, SchedulerInput{Config: Config{BreakerThreshold: 3, BreakerCooldown: pacer.Duration(time.Hour)}})
}

// Pacing is the activity's (SPEC §3.8): the workflow hands each run the
// state the last one returned, with an operator's tune, and starts the
// next run no sooner than the interval the run chose, never faster than
// the configured cadence.
func TestPacingIsTheActivitys(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	pace := func(state string, every time.Duration) *pacer.Pace {
		return &pacer.Pace{State: json.RawMessage(state), Cadence: pacer.Duration(5 * time.Minute), Every: pacer.Duration(every),
			Status: pacer.PaceStatus{Zone: "backoff", Batch: 32, Interval: every.String()}}
	}
	h.tenero.set(func(call int32) (pacer.TeneroResult, error) {
		if call == 3 { // a failed run reports its pace too
			res := pacer.TeneroResult{Pace: pace(`{"n":3}`, 2*time.Minute)}
			return res, temporal.NewNonRetryableApplicationError("502", string(pacer.ClassServerError), nil, res)
		}
		return pacer.TeneroResult{Succeeded: 1, Pace: pace(fmt.Sprintf(`{"n":%d}`, call), 7*time.Minute+30*time.Second)}, nil
	})
	h.at(time.Minute, func() {
		st := h.status(t)
		require.Equal(t, "7m30s", st.Tasks[pacer.TaskTenero].Every)
		require.Equal(t, "backoff", string(st.Tasks[pacer.TaskTenero].Pacing.Zone))
		require.Equal(t, 32, st.Tasks[pacer.TaskTenero].Pacing.Batch)
		h.signal(SignalTune, `{"task":"tenero","batch":20,"interval":"10m"}`)
		h.signal(SignalTune, `{"task":"nope","reset":true}`)
	})
	h.at(2*time.Minute, func() {
		require.Equal(t, "10m0s", h.status(t).Tasks[pacer.TaskTenero].Every, "a tuned interval applies to the next start")
	})
	h.at(11*time.Minute, func() {
		in := h.tenero.last.Load()
		require.EqualValues(t, 2, h.tenero.calls.Load(), "the second run 10 minutes after the first")
		require.Equal(t, `{"n":1}`, string(in.Pace.State), "the state the last run returned")
		require.Equal(t, pacer.Duration(5*time.Minute), in.Pace.Cadence)
		require.Equal(t, &pacer.PaceTune{Batch: 20, Interval: pacer.Duration(10 * time.Minute)}, in.Pace.Tune)
	})
	h.at(20*time.Minute, func() {
		in := h.tenero.last.Load()
		require.EqualValues(t, 3, h.tenero.calls.Load())
		require.Nil(t, in.Pace.Tune, "applied once")
		require.Equal(t, `{"n":2}`, string(in.Pace.State))
		st := h.status(t)
		require.Equal(t, "5m0s", st.Tasks[pacer.TaskTenero].Every, "never faster than the configured cadence")
		h.signal(SignalTune, `{"task":"tenero","reset":true}`)
	})
	h.at(26*time.Minute, func() {
		in := h.tenero.last.Load()
		require.Equal(t, `{"n":3}`, string(in.Pace.State), "the failed run's pace")
		require.True(t, in.Pace.Tune.Reset)
	})
	h.runFor(t, 27*time.Minute, SchedulerInput{Config: Config{SweepEvery: pacer.Duration(time.Hour)}})
}

func TestParseTune(t *testing.T) {
	t.Parallel()
	tasks := []string{pacer.TaskTenero, pacer.TaskSweep}
	tests := []struct {
		give      string
		wantTasks []string
		wantErr   string
	}{
		{give: `{"task":"tenero","batch":5}`, wantTasks: []string{"tenero"}},
		{give: `{"task":"all","interval":"90s"}`, wantTasks: tasks},
		{give: `{"task":"sweep","reset":true}`, wantTasks: []string{"sweep"}},
		{give: `{"task":"sweep"}`, wantErr: `give "batch"`},
		{give: `{"task":"sweep","batch":0}`, wantErr: "must be positive"},
		{give: `{"task":"sweep","interval":"soon"}`, wantErr: "positive Go duration"},
		{give: `{"task":"sweep","interval":"-1m"}`, wantErr: "positive Go duration"},
		{give: `{"task":"sweep","reset":true,"interval":"1m"}`, wantErr: "cannot be combined"},
		{give: `{"task":"x","reset":true}`, wantErr: "unknown task"},
		{give: `{"task":"tenero","batch":"5"}`, wantErr: "invalid JSON"},
		{give: ``, wantErr: "empty input"},
	}
	require.ErrorIs(t, CheckTune(json.RawMessage(`{"task":"sweep","batch":5}`), tasks), ErrSweepBatch)
	require.NoError(t, CheckTune(json.RawMessage(`{"task":"all","batch":5}`), tasks))
	require.NoError(t, CheckTune(json.RawMessage(`{"task":"sweep","interval":"2m"}`), tasks))
	for _, tt := range tests {
		_, names, err := ParseTune(json.RawMessage(tt.give), tasks)
		if tt.wantErr != "" {
			require.ErrorContains(t, err, tt.wantErr, tt.give)
			continue
		}
		require.NoError(t, err, tt.give)
		require.Equal(t, tt.wantTasks, names)
	}
}

// A signal whose payload cannot be decoded at all (a foreign encoding) is
// rejected and the loop goes on; it once blocked the scheduler.
func TestUndecodableSignalDoesNotStall(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.at(time.Minute, func() {
		// A proto message travels as json/protobuf, which no JSON handler reads.
		h.env.SignalWorkflow(SignalPause, &commonpb.Payload{Data: []byte("x")})
		h.env.SignalWorkflow(SignalRefresh, &commonpb.Payload{Data: []byte("y")})
		h.env.SignalWorkflow(SignalTune, &commonpb.Payload{})
	})
	h.at(2*time.Minute, func() {
		h.signal(SignalRefresh, `{"task":"tenero"}`)
	})
	h.at(3*time.Minute, func() {
		require.EqualValues(t, 2, h.tenero.calls.Load(), "a later refresh still runs")
		require.Nil(t, h.status(t).PausedUntil)
	})
	h.runFor(t, 11*time.Minute, SchedulerInput{})
	require.EqualValues(t, 3, h.tenero.calls.Load(), "and the cadence goes on: runs at 0, 2 (the refresh) and 7")
}

// Deliver runs at start, then sleeps (no timer of its own) until a rollup
// run makes it due; while its result says deliveries are pending it runs
// again then, and sleeps once nothing is.
func TestDeliverWakesAfterRollupsAndSleepsWhenIdle(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	var mu sync.Mutex
	var at []time.Time
	h.deliver.set(func(n int32) (pacer.DeliverResult, error) {
		mu.Lock()
		defer mu.Unlock()
		now := h.env.Now().UTC()
		at = append(at, now)
		if n == 2 { // a retry pending four minutes from now
			next := now.Add(4 * time.Minute)
			return pacer.DeliverResult{Retrying: 1, NextDueAt: &next}, nil
		}
		return pacer.DeliverResult{}, nil
	})
	h.at(30*time.Minute, func() {
		st := h.status(t)
		d := st.Tasks[pacer.TaskDeliver]
		require.Equal(t, "idle", d.Waiting)
		require.Nil(t, d.NextDueAt)
		require.Nil(t, d.Schedule, "deliver has no schedule")
		r := st.Tasks[pacer.TaskRollup]
		require.Equal(t, "5 * * * *", r.Schedule.Cron)
		require.Equal(t, t0.Add(65*time.Minute), *r.NextDueAt)
		require.NotNil(t, st.Deliveries)
		require.Zero(t, st.Deliveries.Retrying)
	})
	h.runFor(t, 70*time.Minute, SchedulerInput{})
	var nominal []time.Time
	for _, o := range h.rollup.runs() {
		nominal = append(nominal, o.NominalAt)
	}
	require.Equal(t, []time.Time{t0.Add(5 * time.Minute), t0.Add(65 * time.Minute)}, nominal)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []time.Time{t0, t0.Add(5 * time.Minute), t0.Add(9 * time.Minute), t0.Add(65 * time.Minute)}, at)
}
