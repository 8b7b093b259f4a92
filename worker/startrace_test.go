package worker_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/worker"
	"github.com/pacer-dev/pacer/workflows"
)

// racingStops is the store with a stop recorded by someone else just
// before pacer start clears the one it started from.
type racingStops struct {
	*store.Store
	concurrent func()
}

func (r racingStops) ClearStopOf(ctx context.Context, workflowID, runID string) error {
	r.concurrent()
	return r.Store.ClearStopOf(ctx, workflowID, runID)
}

// pacer start clears the stop it started from, not a stop recorded since
// (issue 41.5: it cleared the stop row unconditionally, so a pacer stop of
// the run it had just started could be erased, and the next worker's
// check started a stopped scheduler again).
func TestStartKeepsAConcurrentStop(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStack(t, workflows.Config{SweepEvery: pacer.Duration(time.Hour)})
	s.sched.Stops = s.st
	s.startWorker(t)
	first, err := worker.EnsureRunning(ctx, s.tc, s.sched)
	require.NoError(t, err)
	_, err = worker.Update[workflows.StopResult](ctx, s.tc, s.sched.WorkflowID, workflows.UpdateStop, workflows.StopInput{Reason: "maintenance"})
	require.NoError(t, err)
	eventually(t, 30*time.Second, "the stop is recorded", func() bool {
		e, err := worker.Ensure(ctx, s.tc, s.sched, worker.KeepAlive)
		_, ok, _ := s.st.SchedulerStopped(ctx, s.sched.WorkflowID)
		return err == nil && e.Stopped != nil && ok
	})

	// pacer start; an operator's stop of the run it started lands in
	// between its start and its clearing of the old stop.
	concurrent := store.SchedulerStop{RunID: "the-run-pacer-start-started", StoppedAt: time.Now().UTC(),
		Result: json.RawMessage(`{"reason":"stopped again"}`)}
	started := s.sched
	started.Stops = racingStops{Store: s.st, concurrent: func() {
		require.NoError(t, s.st.RecordStop(ctx, s.sched.WorkflowID, concurrent))
	}}
	e, err := worker.Ensure(ctx, s.tc, started, worker.Start)
	require.NoError(t, err)
	require.NotEqual(t, first, e.RunID)
	kept, ok, err := s.st.SchedulerStopped(ctx, s.sched.WorkflowID)
	require.NoError(t, err)
	require.True(t, ok, "the concurrent stop is kept")
	require.Equal(t, concurrent.RunID, kept.RunID)

	// Without a concurrent stop, pacer start clears the one it started from.
	require.NoError(t, s.st.ClearStopOf(ctx, s.sched.WorkflowID, concurrent.RunID))
	_, ok, err = s.st.SchedulerStopped(ctx, s.sched.WorkflowID)
	require.NoError(t, err)
	require.False(t, ok)
}
