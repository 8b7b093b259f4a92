package worker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.uber.org/zap"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/cli"
	"github.com/pacer-dev/pacer/worker"
	"github.com/pacer-dev/pacer/workflows"
)

// SPEC §3.5: a stop outlives Temporal's retention. A task paused for 2 h,
// pacer stop, every run of the scheduler deleted (what retention does),
// workers checking all along: nothing runs and no new scheduler appears;
// pacer start brings the pause back. Recorded either by pacer stop or, for
// a stop made without it (the temporal CLI), by the workers' check.
func TestStopOutlivesDeletedHistory(t *testing.T) {
	t.Parallel()
	for _, by := range []string{"pacer stop", "the check"} {
		t.Run(by, func(t *testing.T) {
			t.Parallel()
			stopOutlivesDeletedHistory(t, by == "pacer stop", 300*time.Millisecond, 3)
		})
	}
}

// stopOutlivesDeletedHistory runs the scenario with workers checking
// every `every`, and waits `checks` checks with every run deleted.
func stopOutlivesDeletedHistory(t *testing.T, byPacerStop bool, every time.Duration, checks int) {
	ctx := context.Background()
	s := newStack(t, workflows.Config{SweepEvery: pacer.Duration(time.Hour)})
	s.sched.Stops = s.st
	var mu sync.Mutex
	var seen []worker.Ensured
	var failed []error
	s.sched.OnCheck = func(e worker.Ensured, err error) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, e)
		if err != nil {
			failed = append(failed, err)
		}
	}
	checked := func() []worker.Ensured {
		mu.Lock()
		defer mu.Unlock()
		require.Empty(t, failed, "a check failed")
		return append([]worker.Ensured(nil), seen...)
	}
	pacerCLI := func(args ...string) string {
		t.Helper()
		code, out, errs := s.pacer(args...)
		require.Equal(t, 0, code, "pacer %v: %s", args, errs)
		require.Empty(t, errs)
		return out
	}

	s.startWithTenero(t)
	pacerCLI("pause", "--for", "2h", "--task", pacer.TaskTenero)
	paused := s.status(t).Tasks[pacer.TaskTenero].PausedUntil
	require.NotNil(t, paused)
	s.keepAliveEvery(t, zap.NewNop(), every)

	var stoppedRun string
	if byPacerStop {
		out := pacerCLI("stop", "--reason", "maintenance")
		require.Contains(t, out, "stopped at")
		_, ok, err := s.st.SchedulerStopped(ctx, s.sched.WorkflowID)
		require.NoError(t, err)
		require.True(t, ok, "pacer stop recorded it")
	} else {
		out, err := temporalCLI(t, "workflow", "update", "execute", "--workflow-id", s.sched.WorkflowID,
			"--name", workflows.UpdateStop, "--input", `{"reason":"maintenance"}`)
		require.NoError(t, err, out)
		eventually(t, 10*time.Second, "a worker's check recorded the stop", func() bool {
			_, ok, err := s.st.SchedulerStopped(ctx, s.sched.WorkflowID)
			return err == nil && ok
		})
	}
	stop, _, err := s.st.SchedulerStopped(ctx, s.sched.WorkflowID)
	require.NoError(t, err)
	stoppedRun = stop.RunID
	var res workflows.StopResult
	require.NoError(t, json.Unmarshal(stop.Result, &res))
	require.Equal(t, "maintenance", res.Reason)

	// Delete every run of the scheduler, as retention does.
	runs := runsOf(t, s)
	require.Contains(t, runs, stoppedRun)
	for _, run := range runs {
		out, err := temporalCLI(t, "workflow", "delete", "--workflow-id", s.sched.WorkflowID, "--run-id", run)
		require.NoError(t, err, out)
	}
	// The server deletes a closed run once its close is acknowledged in its
	// queue's state, which it saves every 30 s.
	deleting := time.Now()
	eventually(t, 3*time.Minute, "every run deleted", func() bool {
		for _, run := range runs {
			_, err := s.tc.DescribeWorkflowExecution(ctx, s.sched.WorkflowID, run)
			var nf *serviceerror.NotFound
			if !errors.As(err, &nf) {
				return false
			}
		}
		return len(runsOf(t, s)) == 0
	})
	t.Logf("every run deleted after %s", time.Since(deleting).Round(time.Second))
	_, err = s.tc.DescribeWorkflowExecution(ctx, s.sched.WorkflowID, "")
	var nf *serviceerror.NotFound
	require.ErrorAs(t, err, &nf)

	// Workers check `checks` times with nothing in Temporal: each leaves
	// the scheduler stopped, nothing calls an upstream.
	calls := s.sim.Stats().Total
	from := len(checked())
	deleted := time.Now()
	eventually(t, time.Duration(checks+2)*every+10*time.Second, "the workers checked", func() bool {
		return len(checked()) >= from+checks
	})
	t.Logf("%d checks in %s with no run in Temporal", checks, time.Since(deleted).Round(time.Second))
	for _, e := range checked()[from:] {
		require.False(t, e.Started, "a check started a scheduler")
		require.NotNil(t, e.Stopped, "a check that did not see it stopped")
		require.Equal(t, stoppedRun, e.RunID)
	}
	_, err = s.tc.DescribeWorkflowExecution(ctx, s.sched.WorkflowID, "")
	require.ErrorAs(t, err, &nf, "no new scheduler")
	require.Empty(t, runsOf(t, s), "no new scheduler")
	require.Equal(t, calls, s.sim.Stats().Total, "no task ran")

	// What the operator reads says stopped, from Postgres: pacer status
	// and the pacer_scheduler_stopped gauge (the API's Describe).
	view, err := worker.Describe(ctx, s.tc, s.sched)
	require.NoError(t, err)
	require.True(t, view.Stopped, "pacer_scheduler_stopped 1")
	require.NotNil(t, view.Memo)
	require.Regexp(t, `(?m)^stopped  `, pacerCLI("status"))
	var stopped workflows.Status
	require.NoError(t, json.Unmarshal([]byte(pacerCLI("status", "--json")), &stopped))
	require.NotNil(t, stopped.Stopping)
	require.Equal(t, stoppedRun, stopped.RunID)
	require.NotNil(t, stopped.Tasks[pacer.TaskTenero].PausedUntil, "the stopped state's pause")

	out := pacerCLI("start")
	require.Contains(t, out, "carrying the state of run "+stoppedRun+" (stopped)")
	var st workflows.Status
	require.NoError(t, json.Unmarshal([]byte(pacerCLI("status", "--json")), &st))
	got := st.Tasks[pacer.TaskTenero].PausedUntil
	require.NotNil(t, got, "the pause came back")
	require.True(t, paused.Equal(*got), "paused until %s, not %s", paused, got)
	_, ok, err := s.st.SchedulerStopped(ctx, s.sched.WorkflowID)
	require.NoError(t, err)
	require.False(t, ok, "pacer start cleared the stop")
}

// runsOf lists every run of the stack's scheduler that Temporal holds.
func runsOf(t *testing.T, s *stack) []string {
	t.Helper()
	var runs []string
	eventually(t, 10*time.Second, "visibility answered", func() bool {
		runs = nil
		page, err := s.tc.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{
			Query: "WorkflowId = '" + s.sched.WorkflowID + "'"})
		if err != nil {
			return false
		}
		for _, e := range page.GetExecutions() {
			runs = append(runs, e.GetExecution().GetRunId())
		}
		return true
	})
	return runs
}

// pacer runs a pacer command in-process against the stack (its scheduler,
// unless args name another workflow ID: the last flag wins).
func (s *stack) pacer(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = cli.Run(context.Background(), append([]string{"--temporal-address", temporalHostPort, "--namespace", "default",
		"--workflow-id", s.sched.WorkflowID, "--task-queue", s.sched.TaskQueue, "--database-url", s.dbURL}, args...), &out, &errb)
	return code, out.String(), errb.String()
}
