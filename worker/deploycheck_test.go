//go:build deploycheck

package worker_test

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/testenv"
	"github.com/pacer-dev/pacer/worker"
	"github.com/pacer-dev/pacer/workflows"
)

// buildB builds cmd/pacer with the deploy check's gated workflow change
// (worker/probe.go): the release after A.
func buildB(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "pacer-b")
	cmd := exec.Command("go", "build", "-ldflags", "-X github.com/pacer-dev/pacer/worker.deployCheckChange=on", "-o", out, "./cmd/pacer")
	cmd.Dir = ".."
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, string(b))
	return out
}

// promote runs `pacer deploy promote` as an operator would, until the
// build is known to the server (its workers poll), and returns its output.
func (s *stack) promote(t *testing.T, bin, deployment, build string) string {
	t.Helper()
	var out []byte
	eventually(t, 2*time.Minute, "pacer deploy promote "+build, func() bool {
		cmd := exec.Command(bin, "deploy", "promote", "--build-id", build, "--deployment-name", deployment,
			"--temporal-address", temporalHostPort, "--task-queue", s.sched.TaskQueue, "--workflow-id", s.sched.WorkflowID,
			"--database-url", s.dbURL)
		cmd.Env = []string{"PATH=/usr/bin:/bin"}
		var err error
		out, err = cmd.CombinedOutput()
		return err == nil
	})
	return string(out)
}

// TestDeploySequence is make deploy-check (SPEC §3.5, issue 21) on the real
// stack: real `pacer worker` processes of two builds against a Temporal dev
// server, Postgres and the simulator. Build B is A plus a gated workflow
// change (worker/probe.go: each run starts with a timer behind a
// GetVersion marker, which A's code would never start). Build A runs the scheduler; B is deployed beside it and
// promoted, and the scheduler moves to B at a run boundary; A is stopped;
// A is started again and promoted (a rollback), and the scheduler moves
// back; A and B then run side by side. Throughout, no run of the
// scheduler records a workflow task failure or timeout, and tenero keeps
// its cadence: the figures are printed for docs/reliability.md.
func TestDeploySequence(t *testing.T) {
	bins := map[string]string{"A": testenv.PacerBinary(t), "B": buildB(t)}
	const every = 2 * time.Second
	// Each build runs this long between steps: long enough for tenero's
	// pacing (about 30 s between runs against the simulator) to show
	// whether a handoff moved its cadence.
	const dwell = 45 * time.Second
	s := newStack(t, workflows.Config{TeneroEvery: pacer.Duration(every), SweepEvery: pacer.Duration(time.Minute)})
	deployment := strings.ReplaceAll(s.sched.TaskQueue, "_", "-")
	ctx := context.Background()
	start := func(build string) *exec.Cmd {
		cmd, out := s.startProcess(t, bins[build], "--build-id", build, "--deployment-name", deployment,
			"--tenero-every", every.String(), "--sweep-every", "1m", "--hiro-base-url", s.simU)
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("worker %s output:\n%s", build, out.String())
			}
		})
		return cmd
	}
	onVersion := func(build string) func() bool {
		return func() bool {
			e, err := worker.Ensure(ctx, s.tc, s.sched, worker.Inspect)
			return err == nil && e.Task.Version == deployment+"."+build && !e.Task.Failing()
		}
	}
	type step struct {
		name string
		took time.Duration
	}
	var steps []step
	timed := func(name string, f func()) {
		t0 := time.Now()
		f()
		steps = append(steps, step{name, time.Since(t0)})
	}
	began := time.Now()

	a := start("A")
	timed("A starts the scheduler (first version: made current by its worker)", func() {
		eventually(t, time.Minute, "v1 runs on A", onVersion("A"))
	})
	time.Sleep(dwell)

	b := start("B")
	timed("B deployed beside A; pacer deploy promote B moves v1 to B", func() {
		out := s.promote(t, bins["B"], deployment, "B")
		require.Contains(t, out, "the scheduler now runs on "+deployment+".B")
		// Its first workflow task records the version it runs on.
		eventually(t, 30*time.Second, "v1 runs on B", onVersion("B"))
	})
	time.Sleep(dwell)

	timed("A stopped (SIGTERM); B alone", func() {
		require.NoError(t, a.Process.Signal(syscall.SIGTERM))
		_ = a.Wait()
	})
	time.Sleep(dwell)

	start("A")
	timed("A started again; pacer deploy promote A (rollback) moves v1 to A", func() {
		out := s.promote(t, bins["A"], deployment, "A")
		require.Contains(t, out, "the scheduler now runs on "+deployment+".A")
		// Its first workflow task records the version it runs on.
		eventually(t, 30*time.Second, "v1 runs on A", onVersion("A"))
	})
	timed("A and B side by side, A current", func() { time.Sleep(dwell) })
	require.True(t, onVersion("A")(), "still on A with B running beside it")
	_ = b
	ended := time.Now()

	// No run of v1 failed or timed out a workflow task.
	resp, err := s.tc.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
		Query: fmt.Sprintf("WorkflowId = '%s'", s.sched.WorkflowID),
	})
	require.NoError(t, err)
	runs, failed, timedOut, events := 0, 0, 0, 0
	var chain []string // each execution's builds, oldest first
	for _, e := range resp.GetExecutions() {
		runs++
		builds := map[string]bool{}
		it := s.tc.GetWorkflowHistory(ctx, s.sched.WorkflowID, e.GetExecution().GetRunId(), false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			ev, err := it.Next()
			require.NoError(t, err)
			events++
			switch ev.GetEventType() {
			case enumspb.EVENT_TYPE_WORKFLOW_TASK_FAILED:
				failed++
			case enumspb.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT:
				timedOut++
			case enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
				builds[ev.GetWorkflowTaskCompletedEventAttributes().GetDeploymentVersion().GetBuildId()] = true
			}
		}
		var bs []string
		for b := range builds {
			bs = append(bs, b)
		}
		sort.Strings(bs)
		require.Len(t, bs, 1, "one execution's workflow tasks completed by one build only: %v", bs)
		chain = append([]string{bs[0]}, chain...) // ListWorkflow answers newest first
	}
	require.Equal(t, []string{"A", "B", "A"}, chain, "v1 ran on A, then B, then A again")

	// tenero's cadence, from the ledger of runs every worker writes.
	rows, err := s.st.Pool().Query(ctx, `select started_at from task_runs where task = 'tenero' and started_at between $1 and $2 order by started_at`, began, ended)
	require.NoError(t, err)
	var starts []time.Time
	for rows.Next() {
		var at time.Time
		require.NoError(t, rows.Scan(&at))
		starts = append(starts, at)
	}
	require.NoError(t, rows.Err())
	require.NotEmpty(t, starts)
	var gaps []time.Duration
	for i := 1; i < len(starts); i++ {
		gaps = append(gaps, starts[i].Sub(starts[i-1]))
	}
	sort.Slice(gaps, func(i, j int) bool { return gaps[i] < gaps[j] })
	pct := func(p float64) time.Duration { return gaps[int(p*float64(len(gaps)-1))] }

	t.Logf("figures: deploy sequence on the real stack (tenero every %s, %s in all)", every, ended.Sub(began).Round(time.Second))
	for _, st := range steps {
		t.Logf("figures:   %-70s %s", st.name, st.took.Round(100*time.Millisecond))
	}
	t.Logf("figures: v1 executions %d (builds %s), history events %d, workflow task failures %d, timeouts %d",
		runs, strings.Join(chain, " → "), events, failed, timedOut)
	t.Logf("figures: tenero runs %d; gap between starts p50 %s, p90 %s, max %s (configured floor %s; pacing sets the interval)",
		len(starts), pct(0.5).Round(10*time.Millisecond), pct(0.9).Round(10*time.Millisecond),
		gaps[len(gaps)-1].Round(10*time.Millisecond), every)
	require.Zero(t, failed, "no workflow task failure in any step")
	require.Zero(t, timedOut, "no workflow task timeout in any step")
	// tenero's own pacing sets its interval (the configured cadence is
	// its floor). A handoff's stop waits for the runs in flight, as any
	// stop does (a sweep reading the tail takes up to a minute), and no
	// scheduled run starts meanwhile: a gap of the cadence plus the
	// handoff's window is the handoff, anything longer a lost cadence.
	var window time.Duration
	for _, st := range steps {
		if strings.Contains(st.name, "moves v1") {
			window = max(window, st.took)
		}
	}
	t.Logf("figures: bound on tenero's gap: 1.5 × p50 %s + the longest handoff window %s = %s", pct(0.5).Round(10*time.Millisecond),
		window.Round(100*time.Millisecond), (pct(0.5)*3/2 + window).Round(100*time.Millisecond))
	require.Less(t, gaps[len(gaps)-1], pct(0.5)*3/2+window, "every handoff kept tenero on its cadence, but for the handoff's window")
}

// TestDeployWithoutVersioningFails is the control: the same two builds
// unversioned on one task queue (the shape before Worker Versioning), and
// a rollback from B to A. Build A meets B's gated change in the history it
// replays and fails every workflow task of the run: the wedge the
// versioned sequence never has.
func TestDeployWithoutVersioningFails(t *testing.T) {
	bins := map[string]string{"A": testenv.PacerBinary(t), "B": buildB(t)}
	s := newStack(t, workflows.Config{TeneroEvery: pacer.Duration(2 * time.Second), SweepEvery: pacer.Duration(time.Minute)})
	start := func(build string) *exec.Cmd {
		cmd, _ := s.startProcess(t, bins[build], "--versioning=false", "--tenero-every", "2s", "--sweep-every", "1m", "--hiro-base-url", s.simU)
		return cmd
	}
	// B starts the run, so its history has the change; then the rollback:
	// A starts, B stops, and A takes the run's workflow tasks.
	b := start("B")
	time.Sleep(5 * time.Second)
	start("A")
	require.NoError(t, b.Process.Signal(syscall.SIGTERM))
	_ = b.Wait()
	ctx := context.Background()
	var attempt int32
	eventually(t, 2*time.Minute, "A fails a workflow task of B's run", func() bool {
		e, err := worker.Ensure(ctx, s.tc, s.sched, worker.Inspect)
		require.NoError(t, err)
		attempt = max(attempt, e.Task.Attempt)
		return e.Task.Failing()
	})
	t.Logf("figures: unversioned control: a workflow task of v1 failed (attempt %d): build A replayed B's gated change", attempt)
}

// TestPromoteAfterTheOldBuildStopped: the old build's workers were stopped
// before the new build was promoted (or pacer dev restarted on a new
// build). Nothing can take the pinned run's stop; once the old version no
// longer polls (no poll in 75 s: a stopped worker cannot be told from an
// idle one sooner), the new build's worker ends the run and starts it again
// on the new version with the state it began with and its memo's; no
// workflow task fails.
func TestPromoteAfterTheOldBuildStopped(t *testing.T) {
	bins := map[string]string{"A": testenv.PacerBinary(t), "B": buildB(t)}
	s := newStack(t, workflows.Config{TeneroEvery: pacer.Duration(2 * time.Second), SweepEvery: pacer.Duration(time.Minute)})
	deployment := s.sched.TaskQueue
	ctx := context.Background()
	start := func(build string) *exec.Cmd {
		cmd, _ := s.startProcess(t, bins[build], "--build-id", build, "--deployment-name", deployment,
			"--tenero-every", "2s", "--sweep-every", "1m", "--hiro-base-url", s.simU)
		return cmd
	}
	onVersion := func(build string) func() bool {
		return func() bool {
			e, err := worker.Ensure(ctx, s.tc, s.sched, worker.Inspect)
			return err == nil && e.Task.Version == deployment+"."+build && !e.Task.Failing()
		}
	}
	a := start("A")
	eventually(t, time.Minute, "v1 runs on A", onVersion("A"))
	require.NoError(t, a.Process.Signal(syscall.SIGTERM))
	_ = a.Wait()
	start("B")
	t0 := time.Now()
	s.promote(t, bins["B"], deployment, "B")
	// The command moves it only if A's last poll is already 75 s old;
	// else B's keep-alive check does, once it is.
	eventually(t, 3*time.Minute, "v1 runs on B", onVersion("B"))
	t.Logf("figures: promote after the old build stopped: v1 on B after %s (%s for the old build to take the stop, ended once A had not polled for %s, at a keep-alive check)",
		time.Since(t0).Round(100*time.Millisecond), 30*time.Second, 75*time.Second)
	eventually(t, time.Minute, "B runs tenero", func() bool {
		var n int
		require.NoError(t, s.st.Pool().QueryRow(ctx, `select count(*) from task_runs where task = 'tenero' and started_at > $1`, t0).Scan(&n))
		return n > 0
	})
}
