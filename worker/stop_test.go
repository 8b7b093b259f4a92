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

// stoppingEnv is an activity environment whose worker is stopping (or not)
// and which hands activities back after grace.
func stoppingEnv(t *testing.T, stopping bool, grace time.Duration, fn func(context.Context) error) error {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.SetWorkerOptions(sdkworker.Options{Interceptors: []interceptor.WorkerInterceptor{&retryOnStop{grace: grace}}})
	stop := make(chan struct{})
	if stopping {
		close(stop)
	}
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

func TestActivityOutlastingTheStopIsHandedBack(t *testing.T) {
	t.Parallel()
	err := stoppingEnv(t, true, 50*time.Millisecond, failsWhenCancelled)
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, err, &appErr)
	require.Equal(t, string(pacer.ClassTransport), appErr.Type(), "retried on another worker")
	require.False(t, appErr.NonRetryable())
	require.Contains(t, appErr.Message(), "worker stopped mid-run")
}

func TestActivityEndingWithinTheGraceKeepsItsOutcome(t *testing.T) {
	t.Parallel()
	quick := func(ctx context.Context) error {
		return temporal.NewNonRetryableApplicationError("quota exhausted", string(pacer.ClassRateLimit), nil)
	}
	err := stoppingEnv(t, true, time.Minute, quick)
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, err, &appErr)
	require.Equal(t, string(pacer.ClassRateLimit), appErr.Type())
	require.True(t, appErr.NonRetryable())

	require.NoError(t, stoppingEnv(t, true, time.Minute, func(context.Context) error { return nil }))
}

func TestActivityIsNotCutShortWithoutAStop(t *testing.T) {
	t.Parallel()
	err := stoppingEnv(t, false, 10*time.Millisecond, func(ctx context.Context) error {
		select {
		case <-ctx.Done():
			return errors.New("cut short")
		case <-time.After(200 * time.Millisecond):
			return nil
		}
	})
	require.NoError(t, err)
}
