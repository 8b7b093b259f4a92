package worker_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/pacer-dev/pacer/internal/metrics"
	"github.com/pacer-dev/pacer/internal/page"
	"github.com/pacer-dev/pacer/worker"
	"github.com/pacer-dev/pacer/workflows"
)

// A scheduler whose workflow tasks fail on purpose (a build whose
// SchedulerWorkflow panics on every task, as a nondeterminism error
// would) is reported by the workers' keep-alive check: a log line, the
// pacer_scheduler_workflow_task_failing gauge, and the view the operator's
// page reads. Temporal retries the task every few seconds and records no
// failure in history after the first, so only a description shows it;
// the keep-alive describes the run at every check (each minute), so it is
// reported within two.
func TestFailingWorkflowTaskIsReported(t *testing.T) {
	t.Parallel()
	s := newStack(t, workflows.Config{})
	w := sdkworker.New(s.tc, s.sched.TaskQueue, sdkworker.Options{})
	w.RegisterWorkflowWithOptions(func(workflow.Context, workflows.SchedulerInput) error {
		panic("this build cannot run the scheduler")
	}, workflow.RegisterOptions{Name: workflows.WorkflowType})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)

	core, logs := observer.New(zapcore.InfoLevel)
	sched := s.sched
	sched.KeepAliveEvery = 200 * time.Millisecond
	checks := make(chan worker.Ensured, 100)
	sched.OnCheck = func(e worker.Ensured, err error) {
		if err == nil {
			select {
			case checks <- e:
			default:
			}
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go worker.KeepRunning(ctx, s.tc, sched, zap.New(core))

	eventually(t, time.Minute, "a keep-alive check sees the failing task", func() bool {
		return logs.FilterMessage("scheduler.workflow_task_failing").Len() > 0
	})
	entry := logs.FilterMessage("scheduler.workflow_task_failing").All()[0]
	require.Equal(t, zapcore.ErrorLevel, entry.Level)
	require.GreaterOrEqual(t, entry.ContextMap()["attempt"], int32(worker.FailingAttempt))

	// The metric and the page's view come from the same description.
	m := metrics.New()
	view := func(ctx context.Context) (metrics.SchedulerView, error) { return worker.Describe(ctx, s.tc, s.sched) }
	require.NoError(t, m.WatchScheduler(view, nil, time.Millisecond))
	eventually(t, 30*time.Second, "the gauge says failing", func() bool {
		mfs, err := m.Registry().Gather()
		require.NoError(t, err)
		for _, mf := range mfs {
			if mf.GetName() == "pacer_scheduler_workflow_task_failing" {
				return mf.GetMetric()[0].GetGauge().GetValue() == 1
			}
		}
		return false
	})
	v, err := worker.Describe(ctx, s.tc, s.sched)
	require.NoError(t, err)
	require.True(t, v.WorkflowTaskFailing)
	require.GreaterOrEqual(t, v.WorkflowTaskAttempt, worker.FailingAttempt)
	require.NotNil(t, v.FailingSince)
	// The operator's page shows it, from the same description.
	pg := page.New(page.Options{Store: s.st, SchedulerHealth: func(ctx context.Context) (page.SchedulerHealth, error) {
		return worker.PageHealth(ctx, s.tc, s.sched)
	}})
	require.Contains(t, pg.View(ctx).Operations.Tasks, "FAILING: attempt ")

	// A healthy scheduler is not reported: the same checks against a
	// worker that runs the real workflow.
	healthy := newStack(t, workflows.Config{})
	healthy.startWorker(t)
	hs := healthy.sched
	hs.KeepAliveEvery = 200 * time.Millisecond
	var hchecks atomic.Int64
	hs.OnCheck = func(worker.Ensured, error) { hchecks.Add(1) }
	hcore, hlogs := observer.New(zapcore.InfoLevel)
	go worker.KeepRunning(ctx, healthy.tc, hs, zap.New(hcore))
	eventually(t, time.Minute, "the healthy scheduler answers its status", func() bool {
		_, err := worker.Status(ctx, healthy.tc, hs.WorkflowID)
		return err == nil
	})
	from := hchecks.Load()
	eventually(t, time.Minute, "several checks of the answering scheduler", func() bool { return hchecks.Load() >= from+5 })
	require.Zero(t, hlogs.FilterMessage("scheduler.workflow_task_failing").Len())
	hv, err := worker.Describe(ctx, healthy.tc, hs)
	require.NoError(t, err)
	require.False(t, hv.WorkflowTaskFailing)
}
