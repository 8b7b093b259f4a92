package worker_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/worker"
	"github.com/pacer-dev/pacer/workflows"
)

// A handoff whose stop the old version's workers do not take in time ends
// the run only once that version no longer polls: a slow worker's run is
// never cut short (issue 25). The wait for the stop is shortened to
// nothing, as if the old workers were slow.
func TestHandoffNeverEndsARunWhileItsVersionPolls(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStack(t, workflows.Config{SweepEvery: pacer.Duration(time.Hour)})
	name := strings.ReplaceAll(s.sched.TaskQueue, "_", "-")
	a, b := worker.Deployment{Name: name, BuildID: "a1"}, worker.Deployment{Name: name, BuildID: "b1"}
	startVersion := func(d worker.Deployment) (stop func()) {
		w := worker.NewVersioned(s.tc, s.sched.TaskQueue, s.activities(), &d)
		require.NoError(t, w.Start())
		t.Cleanup(w.Stop)
		eventually(t, 30*time.Second, "promote "+d.Version(), func() bool {
			_, err := worker.Promote(ctx, s.tc, d.Name, d.BuildID)
			return err == nil
		})
		return w.Stop
	}
	inspect := func() worker.Ensured {
		e, err := worker.Ensure(ctx, s.tc, s.sched, worker.Inspect)
		require.NoError(t, err)
		return e
	}
	stopA := startVersion(a)
	runID, err := worker.EnsureRunning(ctx, s.tc, s.sched)
	require.NoError(t, err)
	eventually(t, 30*time.Second, "the scheduler runs on a1", func() bool { return inspect().Task.Version == a.Version() })
	startVersion(b)

	eventually(t, 30*time.Second, "a1 is listed polling", func() bool {
		polls, err := worker.VersionPolls(ctx, s.tc, s.sched.TaskQueue, a.Version(), time.Minute)
		return err == nil && polls
	})

	sched := s.sched
	// An idle poll lasts up to a minute: the real freshness window.
	sched.Deployment = worker.WithHandoffWaits(b, time.Nanosecond, 0)
	core, logs := observer.New(zapcore.InfoLevel)
	moved, err := worker.HandOff(ctx, s.tc, sched, zap.New(core))
	require.NoError(t, err)
	require.False(t, moved, "a1 polls: its run is not ended")
	require.Equal(t, 1, logs.FilterMessage("deploy.handoff_waits").Len())
	require.Zero(t, logs.FilterMessage("deploy.handoff_terminates").Len())
	d, err := s.tc.DescribeWorkflowExecution(ctx, s.sched.WorkflowID, runID)
	require.NoError(t, err)
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, d.GetWorkflowExecutionInfo().GetStatus())

	// a1's workers stop: once it no longer polls, a handoff ends the run
	// and starts it again on b1. (A window of 3 s rather than the real
	// 75 s: a stopped worker's last poll is no later than its stop.)
	stopA()
	sched.Deployment = worker.WithHandoffWaits(b, time.Nanosecond, 3*time.Second)
	eventually(t, 30*time.Second, "a handoff moved the scheduler once a1 stopped polling", func() bool {
		moved, err := worker.HandOff(ctx, s.tc, sched, zap.New(core))
		return err == nil && moved
	})
	require.Equal(t, 1, logs.FilterMessage("deploy.handoff_terminates").Len())
	d, err = s.tc.DescribeWorkflowExecution(ctx, s.sched.WorkflowID, runID)
	require.NoError(t, err)
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED, d.GetWorkflowExecutionInfo().GetStatus())
	eventually(t, 30*time.Second, "the scheduler runs on b1", func() bool {
		e := inspect()
		return e.RunID != runID && e.Task.Version == b.Version()
	})
}
