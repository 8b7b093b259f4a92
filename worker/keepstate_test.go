package worker_test

import (
	"context"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/sim"
	"github.com/pacer-dev/pacer/worker"
	"github.com/pacer-dev/pacer/workflows"
)

// keepAlive runs a worker's keep-alive loop, checking every 100 ms, until
// the returned stop is called (a worker process that stops).
func (s *stack) keepAlive(t *testing.T, log *zap.Logger) (stop func()) {
	t.Helper()
	return s.keepAliveEvery(t, log, 100*time.Millisecond)
}

// keepAliveEvery is keepAlive checking every `every`.
func (s *stack) keepAliveEvery(t *testing.T, log *zap.Logger, every time.Duration) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	sched := s.sched
	sched.KeepAliveEvery = every
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); worker.KeepRunning(ctx, s.tc, sched, log) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	t.Cleanup(stop)
	return stop
}

// startWithTenero starts a worker and the scheduler, and waits for the
// first tenero run to finish.
func (s *stack) startWithTenero(t *testing.T) {
	t.Helper()
	s.startWorker(t)
	_, err := worker.EnsureRunning(context.Background(), s.tc, s.sched)
	require.NoError(t, err)
	eventually(t, 30*time.Second, "the first tenero run finished", func() bool {
		st, err := statusOrErr(s)
		return err == nil && st.LastTeneroResult != nil && !st.Tasks[pacer.TaskTenero].Running
	})
}

// SPEC §3.5: a terminated scheduler comes back, started by a worker, still
// paused and with its breaker still open, and the worker says so.
func TestTerminatedSchedulerComesBackWithItsState(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStack(t, workflows.Config{BreakerThreshold: 1, SweepEvery: pacer.Duration(time.Hour)})
	// Tenero fails with 5xx: its first run opens the breaker.
	require.NoError(t, s.sim.SetFaults(sim.Faults{PathPrefix: "/v1/", ServerError: 1}))
	s.startWorker(t)
	_, err := worker.EnsureRunning(ctx, s.tc, s.sched)
	require.NoError(t, err)
	eventually(t, 30*time.Second, "the breaker opened", func() bool {
		st, err := statusOrErr(s)
		return err == nil && st.Tasks[pacer.TaskTenero].Breaker.Open
	})
	paused, err := worker.Update[workflows.PauseResult](ctx, s.tc, s.sched.WorkflowID, workflows.UpdatePause, workflows.PauseInput{For: "2h"})
	require.NoError(t, err)
	before := s.status(t)
	require.True(t, before.Tasks[pacer.TaskTenero].Breaker.Open)

	// The operator's terminate, from the temporal CLI.
	out, err := temporalCLI(t, "workflow", "terminate", "--workflow-id", s.sched.WorkflowID, "--reason", "test")
	require.NoError(t, err, out)

	core, logs := observer.New(zapcore.InfoLevel)
	s.keepAlive(t, zap.New(core))
	eventually(t, 10*time.Second, "a worker restarted it", func() bool {
		st, err := statusOrErr(s)
		return err == nil && st.RunID != before.RunID
	})
	after := s.status(t)
	require.NotNil(t, after.PausedUntil, "still paused")
	require.True(t, paused.PausedUntil.Equal(*after.PausedUntil))
	require.True(t, after.Tasks[pacer.TaskTenero].Breaker.Open, "the breaker is still open")
	require.Equal(t, before.Tasks[pacer.TaskTenero].Breaker.ProbeAt, after.Tasks[pacer.TaskTenero].Breaker.ProbeAt)
	// The first run began with an empty state: pacing and run counts start
	// afresh; the pause holds scheduled runs back.
	require.False(t, after.Tasks[pacer.TaskTenero].Running, "no run: paused")
	require.Equal(t, before.Generation+1, after.Generation)

	restarted := logs.FilterMessage("scheduler.restarted").All()
	require.Len(t, restarted, 1)
	fields := restarted[0].ContextMap()
	require.Equal(t, "terminated", fields["after"])
	require.Equal(t, before.RunID, fields["previousRunId"])
	require.Contains(t, fields, "stateFrom")
	require.Contains(t, fields, "pauseAndBreakersFrom")
}

// A stop is respected: workers that come and go leave the scheduler
// stopped; pacer start brings it back with the state it stopped with.
func TestStopStaysStoppedUntilStart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStack(t, workflows.Config{SweepEvery: pacer.Duration(time.Hour)})
	s.startWithTenero(t)
	_, err := worker.Update[workflows.PauseResult](ctx, s.tc, s.sched.WorkflowID, workflows.UpdatePause, workflows.PauseInput{For: "3h"})
	require.NoError(t, err)
	before := s.status(t)

	res, err := worker.Update[*workflows.StopResult](ctx, s.tc, s.sched.WorkflowID, workflows.UpdateStop, workflows.StopInput{Reason: "maintenance"})
	require.NoError(t, err)
	require.Equal(t, "maintenance", res.Reason)
	require.NotNil(t, res.State.PausedUntil)
	desc, err := s.tc.DescribeWorkflowExecution(ctx, s.sched.WorkflowID, "")
	require.NoError(t, err)
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, desc.GetWorkflowExecutionInfo().GetStatus())

	// Workers restart again and again, each checking every 100 ms: the
	// scheduler stays stopped (a minute-long keep-alive, shortened).
	core, logs := observer.New(zapcore.InfoLevel)
	var checks atomic.Int64
	s.sched.OnCheck = func(worker.Ensured, error) { checks.Add(1) }
	for range 5 {
		from := checks.Load()
		stop := s.keepAlive(t, zap.New(core))
		eventually(t, 5*time.Second, "the keep-alive looked", func() bool { return logs.FilterMessage("scheduler.left_stopped").Len() > 0 })
		// It looks a few more times: it must do nothing.
		eventually(t, 5*time.Second, "the keep-alive looked four times", func() bool { return checks.Load() >= from+4 })
		stop()
	}
	desc, err = s.tc.DescribeWorkflowExecution(ctx, s.sched.WorkflowID, "")
	require.NoError(t, err)
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, desc.GetWorkflowExecutionInfo().GetStatus(), "still stopped")
	require.Equal(t, before.RunID, desc.GetWorkflowExecutionInfo().GetExecution().GetRunId())
	view, err := worker.Describe(ctx, s.tc, s.sched)
	require.NoError(t, err)
	require.True(t, view.Stopped)
	require.False(t, view.Running)

	// pacer start: the new run carries the stopped run's state.
	e, err := worker.Ensure(ctx, s.tc, s.sched, worker.Start)
	require.NoError(t, err)
	require.True(t, e.Started)
	require.Equal(t, "stopped", e.Restart.After)
	require.Equal(t, before.RunID, e.Restart.RunID)
	after := s.status(t)
	require.Equal(t, e.RunID, after.RunID)
	require.NotNil(t, after.PausedUntil, "the pause carried over")
	require.True(t, before.PausedUntil.Equal(*after.PausedUntil))
	require.Equal(t, before.Tasks[pacer.TaskTenero].Runs, after.Tasks[pacer.TaskTenero].Runs)
	require.Equal(t, before.LastTeneroResult.StartedAt, after.LastTeneroResult.StartedAt)
}

// reconfigure changes the cadence in place: no terminate, the same chain,
// and the new config carried on.
func TestReconfigureTakesEffectWithoutTerminate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStack(t, workflows.Config{TeneroEvery: pacer.Duration(time.Hour), SweepEvery: pacer.Duration(time.Hour)})
	// A month budget far from binding: pacing does not hold the short cadence.
	s.sim = sim.New(sim.Config{Seed: 7, Tenero: sim.TeneroConfig{Anonymous: sim.Limits{PerMinute: 1000, PerMonth: 100_000_000}}})
	hs := httptest.NewServer(s.sim)
	t.Cleanup(hs.Close)
	s.simU = hs.URL
	s.startWorker(t)
	_, err := worker.EnsureRunning(ctx, s.tc, s.sched)
	require.NoError(t, err)
	eventually(t, 30*time.Second, "the first runs finished", func() bool {
		st, err := statusOrErr(s)
		return err == nil && st.Tasks[pacer.TaskTenero].Runs == 1 && !st.Tasks[pacer.TaskTenero].Running
	})

	_, err = worker.Update[workflows.ReconfigureResult](ctx, s.tc, s.sched.WorkflowID, workflows.UpdateReconfigure,
		map[string]any{"schedules": map[string]any{"deliver": map[string]string{"every": "1m"}}})
	require.ErrorContains(t, err, "deliver has no schedule")
	_, err = worker.Update[workflows.ReconfigureResult](ctx, s.tc, s.sched.WorkflowID, workflows.UpdateReconfigure,
		map[string]string{"teneroEvery": "100ms"})
	require.ErrorContains(t, err, "teneroEvery 100ms")

	res, err := worker.Update[workflows.ReconfigureResult](ctx, s.tc, s.sched.WorkflowID, workflows.UpdateReconfigure,
		map[string]any{"teneroEvery": "2s", "schedules": map[string]any{
			"rollup": map[string]string{"cron": "30 * * * *", "tz": "Europe/London", "catchup": "coalesce"}}})
	require.NoError(t, err)
	require.Equal(t, pacer.Duration(2*time.Second), res.Config.TeneroEvery)
	require.Contains(t, worker.CostNote(res.Config), "tenero every 2s")
	eventually(t, 20*time.Second, "tenero runs at its new cadence", func() bool {
		st, err := statusOrErr(s)
		return err == nil && st.Tasks[pacer.TaskTenero].Runs >= 3
	})
	st := s.status(t)
	require.Equal(t, "2s", st.Tasks[pacer.TaskTenero].Every)
	require.Equal(t, pacer.Duration(2*time.Second), st.Config.TeneroEvery)
	require.Equal(t, pacer.Duration(time.Hour), st.Config.SweepEvery, "what was not given is kept")
	rollup := st.Tasks[pacer.TaskRollup]
	require.Equal(t, "30 * * * *", rollup.Schedule.Cron)
	require.Equal(t, "Europe/London", rollup.Schedule.TZ)
	require.NotNil(t, rollup.Occurrences)
	require.Equal(t, 30, rollup.Occurrences.NextAt.Minute())
	eventually(t, 30*time.Second, "continued as new with the new config", func() bool {
		st, err := statusOrErr(s)
		return err == nil && st.Generation >= 1
	})

	// Nothing was terminated: every closed run of the chain continued as new.
	out, err := temporalCLI(t, "workflow", "list", "--query", "WorkflowId='"+s.sched.WorkflowID+"'")
	require.NoError(t, err, out)
	require.NotContains(t, out, "Terminated")
	require.Contains(t, out, "ContinuedAsNew")
}

// pause, resume and tune are both signals and updates under one name: the
// temporal CLI sends either, and the update's caller sees a rejection.
func TestSignalsAndUpdatesShareNames(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStack(t, workflows.Config{})
	s.startWorker(t)
	_, err := worker.EnsureRunning(ctx, s.tc, s.sched)
	require.NoError(t, err)
	id := s.sched.WorkflowID
	eventually(t, 30*time.Second, "the scheduler answers", func() bool { _, err := statusOrErr(s); return err == nil })

	out, err := temporalCLI(t, "workflow", "update", "execute", "--workflow-id", id, "--name", workflows.UpdatePause, "--input", `{"for":"30m"}`)
	require.NoError(t, err, out)
	require.Contains(t, out, "pausedUntil")
	out, err = temporalCLI(t, "workflow", "update", "execute", "--workflow-id", id, "--name", workflows.UpdatePause, "--input", `{"for":"-30m"}`)
	require.Error(t, err)
	require.Contains(t, out, "must be positive")
	out, err = temporalCLI(t, "workflow", "signal", "--workflow-id", id, "--name", workflows.SignalResume)
	require.NoError(t, err, out)
	eventually(t, 10*time.Second, "the resume signal lifted the pause", func() bool { return s.status(t).PausedUntil == nil })
	out, err = temporalCLI(t, "workflow", "signal", "--workflow-id", id, "--name", workflows.SignalPause, "--input", `{"for":"30m"}`)
	require.NoError(t, err, out)
	eventually(t, 10*time.Second, "the pause signal paused it", func() bool { return s.status(t).PausedUntil != nil })
	out, err = temporalCLI(t, "workflow", "update", "execute", "--workflow-id", id, "--name", workflows.UpdateResume)
	require.NoError(t, err, out)
	require.Contains(t, out, "wasPaused")
	out, err = temporalCLI(t, "workflow", "update", "execute", "--workflow-id", id, "--name", workflows.UpdateTune, "--input", `{"task":"tenero","batch":10}`)
	require.NoError(t, err, out)
	require.Contains(t, out, "batch:10")
	require.Nil(t, s.status(t).PausedUntil)
}
