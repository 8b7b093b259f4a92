package worker_test

import (
	"context"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/sim"
	"github.com/pacer-dev/pacer/internal/testenv"
	"github.com/pacer-dev/pacer/worker"
	"github.com/pacer-dev/pacer/workflows"
)

func freeHostPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// The Temporal server restarts (its state on disk) while a run is in flight:
// the same workflow run carries on, with no manual step, once it is back.
func TestSchedulerSurvivesTemporalRestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hostPort, db := freeHostPort(t), filepath.Join(t.TempDir(), "temporal.db")
	srv, err := testenv.StartPersistentTemporal(ctx, hostPort, db)
	require.NoError(t, err)
	t.Cleanup(func() { srv.Stop() })

	s := newStackOn(t, hostPort, workflows.Config{})
	s.startWorker(t)
	// Slow Tenero answers keep a run in flight across the restart.
	require.NoError(t, s.sim.SetFaults(sim.Faults{PathPrefix: "/v1/", Slow: 1, SlowDelay: sim.Duration(500 * time.Millisecond)}))
	runID, err := worker.EnsureRunning(ctx, s.tc, s.sched)
	require.NoError(t, err)
	eventually(t, 30*time.Second, "a tenero run is in flight", func() bool {
		st, err := statusOrErr(s)
		return err == nil && st.Tasks[pacer.TaskTenero].Running
	})

	srv.Stop()
	srv, err = testenv.StartPersistentTemporal(ctx, hostPort, db)
	require.NoError(t, err)
	require.NoError(t, s.sim.SetFaults(sim.Faults{}))

	eventually(t, 90*time.Second, "the run in flight finished after the restart", func() bool {
		st, err := statusOrErr(s)
		return err == nil && st.LastTeneroResult != nil && !st.Tasks[pacer.TaskTenero].Running
	})
	res, err := worker.RefreshNow(ctx, s.tc, s.sched.WorkflowID, pacer.TaskAll)
	require.NoError(t, err)
	require.Empty(t, res.Tenero.ErrorClass, res.Tenero.Error)
	require.Empty(t, res.Sweep.ErrorClass, res.Sweep.Error)
	st := s.status(t)
	require.Equal(t, runID, st.RunID, "the same run carried on")
	require.NotNil(t, st.NextWakeAt)
}
