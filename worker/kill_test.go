package worker_test

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/sim"
	"github.com/pacer-dev/pacer/internal/testenv"
	"github.com/pacer-dev/pacer/worker"
	"github.com/pacer-dev/pacer/workflows"
)

// syncBuffer collects a child process's output safely.
type syncBuffer = testenv.Buffer

// startProcess runs `pacer worker` as a real process against the stack.
// noLinger is a PACER_TAIL_EVERY that leaves a sweep run no linger at the
// default PACER_SWEEP_EVERY (1m): a run reads the tail on for the sweep
// interval less half the tail's (55 s at the defaults) before it reports
// (internal/cli's discovery config), so a test that waits for a sweep's
// result at the defaults waits that out each time, for nothing it checks.
// With it a run ends when its work is done, and the tail reads once a run.
const (
	noLinger    = "2m"
	noLingerEnv = "PACER_TAIL_EVERY=" + noLinger
)

func (s *stack) startProcess(t *testing.T, bin string, extra ...string) (*exec.Cmd, *syncBuffer) {
	t.Helper()
	args := append([]string{"worker", "--http", "", "--migrate=false",
		"--temporal-address", temporalHostPort, "--task-queue", s.sched.TaskQueue, "--workflow-id", s.sched.WorkflowID,
		"--database-url", s.dbURL, "--tenero-base-url", s.simU, "--log-level", "warn",
		"--push", "off"}, extra...) // push only where a test asks for it (--push ws comes later and wins)
	cmd := exec.Command(bin, args...)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = []string{"PATH=/usr/bin:/bin"} // nothing inherited: the flags say it all
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd, out
}

func TestKilledWorkerIsReplacedWithoutManualStep(t *testing.T) {
	t.Parallel()
	bin := testenv.PacerBinary(t)
	// A short heartbeat timeout (the default is 2 minutes) lets the killed
	// attempt move to the new worker within seconds. The test starts the
	// scheduler itself so that this configuration is the one kept.
	s := newStack(t, workflows.Config{HeartbeatTimeout: pacer.Duration(5 * time.Second)})
	_, err := worker.EnsureRunning(context.Background(), s.tc, s.sched)
	require.NoError(t, err)
	// Slow Tenero answers keep the first run in flight long enough to kill it.
	require.NoError(t, s.sim.SetFaults(sim.Faults{PathPrefix: "/v1/", Slow: 1, SlowDelay: sim.Duration(time.Second)}))

	first, out := s.startProcess(t, bin)
	eventually(t, 30*time.Second, "the first worker started the scheduler and a run", func() bool {
		st, err := statusOrErr(s)
		return err == nil && st.Tasks[pacer.TaskTenero].Running
	})
	runID := s.status(t).RunID
	require.NoError(t, first.Process.Kill()) // kill -9, mid-run
	_ = first.Wait()

	require.NoError(t, s.sim.SetFaults(sim.Faults{}))
	s.startProcess(t, bin)
	// The killed attempt stops heartbeating; Temporal retries it on the new
	// worker, and the schedule goes on. Nobody touches the workflow.
	eventually(t, 90*time.Second, "the run finished on the new worker", func() bool {
		st, err := statusOrErr(s)
		return err == nil && st.LastTeneroResult != nil && !st.Tasks[pacer.TaskTenero].Running
	})
	st := s.status(t)
	require.Equal(t, runID, st.RunID, "the same workflow run carried on")
	require.Empty(t, st.LastTeneroResult.ErrorClass, "worker output:\n%s", out.String())
	require.Zero(t, st.ConsecutiveFailures[pacer.TaskTenero])
	require.NotNil(t, st.NextWakeAt, "the next tick is scheduled")
}
