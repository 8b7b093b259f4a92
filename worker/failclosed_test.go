package worker_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/pacer-dev/pacer/worker"
	"github.com/pacer-dev/pacer/workflows"
)

// Issue 41.5: only a stop completes the scheduler, so a completed run
// whose result carries no state is a stop whose state was lost (a build
// that wrote another shape, a defect). A worker's check leaves it stopped
// and says why, rather than start a scheduler with no state (pause,
// breakers, pacing and cursors gone); `pacer start` is the operator's word.
func TestACompletedRunWithoutStateIsLeftStopped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStack(t, workflows.Config{})
	w := sdkworker.New(s.tc, s.sched.TaskQueue, sdkworker.Options{})
	w.RegisterWorkflowWithOptions(func(workflow.Context, workflows.SchedulerInput) (*workflows.StopResult, error) {
		return &workflows.StopResult{Reason: "a result without its state"}, nil
	}, workflow.RegisterOptions{Name: workflows.WorkflowType})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	run, err := s.tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: s.sched.WorkflowID, TaskQueue: s.sched.TaskQueue},
		workflows.WorkflowType, workflows.SchedulerInput{})
	require.NoError(t, err)
	require.NoError(t, run.Get(ctx, nil))

	_, err = worker.Ensure(ctx, s.tc, s.sched, worker.KeepAlive)
	require.ErrorContains(t, err, "without its state")
	d, err := s.tc.DescribeWorkflowExecution(ctx, s.sched.WorkflowID, "")
	require.NoError(t, err)
	require.Equal(t, run.GetRunID(), d.GetWorkflowExecutionInfo().GetExecution().GetRunId(), "no run started")
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, d.GetWorkflowExecutionInfo().GetStatus())
}
