package worker

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/pacer-dev/pacer"
)

// stoppingEnv is an activity environment whose worker is stopping (or not).
func stoppingEnv(t *testing.T, stopping bool, fn func(context.Context) error) error {
	t.Helper()
	stop := make(chan struct{})
	if stopping {
		close(stop)
	}
	return stopEnv(t, stop, fn)
}

// stopEnv is an activity environment whose worker stops when stop closes.
func stopEnv(t *testing.T, stop chan struct{}, fn func(context.Context) error) error {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.SetWorkerOptions(sdkworker.Options{Interceptors: []interceptor.WorkerInterceptor{&retryOnStop{}}})
	env.SetWorkerStopChannel(stop)
	env.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: "Task"})
	_, err := env.ExecuteActivity("Task")
	return err
}

// failsWhenCancelled is an activity as pacer's are: a cancelled context ends
// it with a non-retryable timeout.
func failsWhenCancelled(ctx context.Context) error {
	<-ctx.Done()
	return temporal.NewNonRetryableApplicationError("run cancelled: "+ctx.Err().Error(), string(pacer.ClassTimeout), nil)
}

// requireHandedBack holds err to the hand-back: retryable, soon, on another
// worker.
func requireHandedBack(t *testing.T, err error) {
	t.Helper()
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, err, &appErr)
	require.Equal(t, string(pacer.ClassTransport), appErr.Type(), "retried on another worker")
	require.False(t, appErr.NonRetryable())
	require.Contains(t, appErr.Message(), "worker stopped mid-run")
	require.Equal(t, handBackRetryDelay, appErr.NextRetryDelay(), "retried at once, not after the policy's back-off")
}

// An activity running when its worker begins to stop is handed back at
// once: before issue 41.4 it ran on for 25 s first, and the deploy's
// process manager could kill the worker before it reported.
func TestActivityRunningAtTheStopIsHandedBackAtOnce(t *testing.T) {
	t.Parallel()
	stop := make(chan struct{})
	started := make(chan struct{})
	var stoppedAt time.Time
	go func() {
		<-started
		stoppedAt = time.Now()
		close(stop)
	}()
	var took time.Duration
	err := stopEnv(t, stop, func(ctx context.Context) error {
		close(started)
		err := failsWhenCancelled(ctx)
		took = time.Since(stoppedAt)
		return err
	})
	requireHandedBack(t, err)
	require.Less(t, took, time.Second, "cancelled as the stop began")
}

// Whichever cancellation reaches the activity first while its worker
// stops (the SDK's at StopTimeout, a heartbeat's, a context of its own),
// its failure is the hand-back: before issue 41.4 an attempt could end on
// "context canceled" and be retried as a plain failure.
func TestAnyFailureWhileTheWorkerStopsIsTheHandBack(t *testing.T) {
	t.Parallel()
	for _, give := range []error{
		errors.New("read the due agents: context canceled"),
		temporal.NewNonRetryableApplicationError("sweep cancelled: context canceled", string(pacer.ClassTimeout), nil),
	} {
		requireHandedBack(t, stoppingEnv(t, true, func(context.Context) error { return give }))
	}
}

func TestActivityEndingWellWhileTheWorkerStopsKeepsItsOutcome(t *testing.T) {
	t.Parallel()
	require.NoError(t, stoppingEnv(t, true, func(context.Context) error { return nil }))
	err := stoppingEnv(t, false, func(context.Context) error {
		return temporal.NewNonRetryableApplicationError("quota exhausted", string(pacer.ClassRateLimit), nil)
	})
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, err, &appErr)
	require.Equal(t, string(pacer.ClassRateLimit), appErr.Type(), "no stop: the activity's own failure")
	require.True(t, appErr.NonRetryable())
}

func TestActivityIsNotCutShortWithoutAStop(t *testing.T) {
	t.Parallel()
	err := stoppingEnv(t, false, func(ctx context.Context) error {
		select {
		case <-ctx.Done():
			return errors.New("cut short")
		case <-time.After(200 * time.Millisecond):
			return nil
		}
	})
	require.NoError(t, err)
}
