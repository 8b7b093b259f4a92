//go:build catchup

package worker_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/activities"
	"github.com/pacer-dev/pacer/internal/schedule"
	"github.com/pacer-dev/pacer/worker"
	"github.com/pacer-dev/pacer/workflows"
)

// Issue 41.1 on the real stack: a panic planted in rollup's decision,
// firing as a refresh asks for it, then `pacer refresh rollup` (the
// refreshNow update) and `pacer deliveries redeliver`'s refresh signal:
// the update answers with the panic, `pacer stop` returns within a
// minute, and tenero keeps its paced cadence meanwhile.
func TestABrokenTaskAndARefreshOnTheRealStack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStack(t, workflows.Config{TeneroEvery: pacer.Duration(2 * time.Second), SweepEvery: pacer.Duration(time.Hour)})
	var armed atomic.Bool
	w := sdkworker.New(s.tc, s.sched.TaskQueue, sdkworker.Options{})
	w.RegisterWorkflowWithOptions(workflows.SchedulerWorkflowWithFault(func(tk *schedule.Task) {
		if tk.Name == pacer.TaskRollup && tk.Requested && armed.Load() {
			panic("planted: rollup's decision on a refresh")
		}
	}), workflow.RegisterOptions{Name: workflows.WorkflowType})
	activities.Register(w, s.activities())
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	_, err := worker.EnsureRunning(ctx, s.tc, s.sched)
	require.NoError(t, err)
	eventually(t, 30*time.Second, "tenero ran twice", func() bool {
		st, err := statusOrErr(s)
		return err == nil && st.Tasks[pacer.TaskTenero].Runs >= 2
	})

	armed.Store(true)
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	_, err = worker.RefreshNow(rctx, s.tc, s.sched.WorkflowID, pacer.TaskRollup)
	require.ErrorContains(t, err, "planted: rollup's decision on a refresh", "the refresh answers with the panic")
	// The signal of `pacer deliveries redeliver`: dropped with a log line.
	require.NoError(t, worker.Signal(ctx, s.tc, s.sched.WorkflowID, workflows.SignalRefresh, workflows.RefreshInput{Task: pacer.TaskRollup}))
	_, err = worker.RefreshNow(rctx, s.tc, s.sched.WorkflowID, pacer.TaskRollup)
	require.ErrorContains(t, err, "is broken", "a refresh of a broken task is refused")

	before := s.status(t)
	require.NotNil(t, before.Tasks[pacer.TaskRollup].Broken)
	require.False(t, before.Tasks[pacer.TaskRollup].Requested)
	eventually(t, 30*time.Second, "tenero on its cadence after the break", func() bool {
		st, err := statusOrErr(s)
		return err == nil && st.Tasks[pacer.TaskTenero].Runs >= before.Tasks[pacer.TaskTenero].Runs+3
	})
	after := s.status(t)
	gap := after.LastTeneroRunAt.Sub(*before.LastTeneroRunAt) / time.Duration(after.Tasks[pacer.TaskTenero].Runs-before.Tasks[pacer.TaskTenero].Runs)

	start := time.Now()
	sctx, scancel := context.WithTimeout(ctx, time.Minute)
	defer scancel()
	_, res, err := worker.Stop(sctx, s.tc, s.sched.WorkflowID, workflows.StopInput{Reason: "fence check"})
	took := time.Since(start)
	require.NoError(t, err, "pacer stop returns within a minute")
	require.NotNil(t, res.State)
	// Tenero's cadence is what its pacing chose (the simulator's quota
	// moves it past the configured 2 s floor): the status's every.
	every, err := time.ParseDuration(after.Tasks[pacer.TaskTenero].Every)
	require.NoError(t, err)
	t.Logf("figures: refresh of a broken task answered with its panic; tenero's mean gap after the break %s (its paced interval %s); pacer stop returned in %s",
		gap.Round(10*time.Millisecond), every, took.Round(10*time.Millisecond))
	require.LessOrEqual(t, gap, every+time.Second, "tenero keeps its cadence")
}
