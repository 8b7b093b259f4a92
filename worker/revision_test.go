package worker_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/worker"
	"github.com/pacer-dev/pacer/workflows"
)

// belowFloor is a scheduler from before this build's floor: it records
// the revision under the floor, then waits.
func belowFloor(ctx workflow.Context, _ workflows.SchedulerInput) error {
	workflow.GetVersion(ctx, workflows.ChangeID, workflow.DefaultVersion, workflows.RevisionFloor-1)
	workflow.GetSignalChannel(ctx, "never").Receive(ctx, nil)
	return nil
}

// SPEC §3.7: pacer deploy check reads the revision of the open run from
// its history and fails when it is below this build's floor.
func TestDeployCheckReadsTheRunningRevision(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStack(t, workflows.Config{SweepEvery: pacer.Duration(time.Hour)})
	type check struct {
		Open     bool   `json:"open"`
		RunID    string `json:"runId"`
		Revision *int   `json:"revision"`
		Floor    int    `json:"floor"`
	}
	deployCheck := func(id string) (int, check, string) {
		code, out, errs := s.pacer("deploy", "check", "--json", "--workflow-id", id)
		var c check
		require.NoError(t, json.Unmarshal([]byte(out), &c), out+errs)
		return code, c, errs
	}

	code, c, _ := deployCheck(s.sched.WorkflowID)
	require.Equal(t, 0, code)
	require.False(t, c.Open, "no run yet")

	s.startWorker(t)
	runID, err := worker.EnsureRunning(ctx, s.tc, s.sched)
	require.NoError(t, err)
	eventually(t, 30*time.Second, "the run recorded its revision", func() bool {
		r, err := worker.RunningRevision(ctx, s.tc, s.sched)
		return err == nil && r.Revision != workflow.DefaultVersion
	})
	code, c, errs := deployCheck(s.sched.WorkflowID)
	require.Equal(t, 0, code, errs)
	require.True(t, c.Open)
	require.Equal(t, runID, c.RunID)
	require.NotNil(t, c.Revision)
	require.Equal(t, int(workflows.RevisionCurrent), *c.Revision, "a new run records the current revision")

	// A run from before the floor: check fails, naming it.
	old := uniqueID("below-floor")
	w := sdkworker.New(s.tc, old, sdkworker.Options{})
	w.RegisterWorkflowWithOptions(belowFloor, workflow.RegisterOptions{Name: workflows.WorkflowType})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	_, err = s.tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: old, TaskQueue: old}, workflows.WorkflowType, workflows.SchedulerInput{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.tc.TerminateWorkflow(context.Background(), old, "", "test over") })
	eventually(t, 30*time.Second, "the old run recorded its revision", func() bool {
		r, err := worker.RunningRevision(ctx, s.tc, worker.Scheduler{WorkflowID: old})
		return err == nil && r.Revision != workflow.DefaultVersion
	})
	code, c, errs = deployCheck(old)
	require.Equal(t, 1, code)
	require.Equal(t, int(workflows.RevisionFloor)-1, *c.Revision)
	require.Contains(t, errs, "below this build's floor")
}
