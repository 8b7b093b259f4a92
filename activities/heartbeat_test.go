package activities

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"golang.org/x/sync/errgroup"

	"github.com/pacer-dev/pacer/internal/testenv"
)

// A run's progress recorded from a context derived from the activity's
// (a batch of visits' errgroup context, cancelled once the batch ends) must
// not end the run. The SDK sends the heartbeats it held back during its
// throttle interval with the context of the call that opened the interval;
// a send that fails because that context is cancelled counts as a failed
// heartbeat and cancels the attempt. Found in make bench-tail: a first
// start's sweep ended "sweep cancelled: context canceled" 131 s in.
func TestProgressFromAnEndedBatchKeepsTheRunGoing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv, err := testenv.StartTemporal(ctx)
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	c, err := client.Dial(client.Options{HostPort: srv.HostPort, Namespace: "default"})
	require.NoError(t, err)
	t.Cleanup(c.Close)

	const queue = "progress-heartbeats"
	w := worker.New(c, queue, worker.Options{})
	// For 6 s, batches of one goroutine each record the run's progress and
	// end, as the sweep's visits do; the heartbeat timeout is 2 s, so the
	// SDK holds heartbeats back for 1.6 s at a time.
	w.RegisterActivityWithOptions(func(ctx context.Context) (int, error) {
		batches := 0
		for end := time.Now().Add(6 * time.Second); time.Now().Before(end); batches++ {
			g, gctx := errgroup.WithContext(ctx)
			g.Go(func() error {
				recordProgress(gctx, batches)
				return nil
			})
			_ = g.Wait()
			if err := ctx.Err(); err != nil {
				return batches, err
			}
			time.Sleep(100 * time.Millisecond)
		}
		return batches, nil
	}, activity.RegisterOptions{Name: "Progress"})
	w.RegisterWorkflowWithOptions(func(ctx workflow.Context) (int, error) {
		ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			StartToCloseTimeout: time.Minute,
			HeartbeatTimeout:    2 * time.Second,
			RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
		})
		var batches int
		err := workflow.ExecuteActivity(ctx, "Progress").Get(ctx, &batches)
		return batches, err
	}, workflow.RegisterOptions{Name: "ProgressWorkflow"})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)

	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: queue}, "ProgressWorkflow")
	require.NoError(t, err)
	var batches int
	require.NoError(t, run.Get(ctx, &batches), "the run goes on to its end")
	require.Greater(t, batches, 20)
}

// A run that ends while its worker stops heartbeats the progress it ended
// with, so the attempt another worker takes over resumes from there. Before
// issue 41.4 the one heartbeat of a stop was sent as the stop began, with
// the progress of that moment, or not at all when the run's cancelled
// context won the race.
func TestARunEndingAsItsWorkerStopsHeartbeatsWhereItEnded(t *testing.T) {
	t.Parallel()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	stop := make(chan struct{})
	close(stop)
	env.SetWorkerStopChannel(stop)
	var last atomic.Int64
	last.Store(-1)
	env.SetOnActivityHeartbeatListener(func(_ *activity.Info, details converter.EncodedValues) {
		var n int64
		require.NoError(t, details.Get(&n))
		last.Store(n)
	})
	env.RegisterActivityWithOptions(func(ctx context.Context) error {
		var visited atomic.Int64
		defer keepHeartbeating(ctx, func() any { return visited.Load() })()
		for range 3 {
			visited.Add(1)
		}
		return errors.New("handed back")
	}, activity.RegisterOptions{Name: "Run"})
	_, err := env.ExecuteActivity("Run")
	require.Error(t, err)
	require.Equal(t, int64(3), last.Load(), "the last heartbeat carries where the run ended")
}
