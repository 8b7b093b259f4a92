// Package activities holds the work the scheduler hands out: one method of
// Activities per task, each taking one input and returning one result.
// Errors leave an activity classified (SPEC §3): an application error whose
// type is the pacer.ErrorClass, retryable only for transport trouble.
package activities

import (
	"context"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	sdkworker "go.temporal.io/sdk/worker"
	"go.uber.org/zap"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/catalog"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/internal/tenero"
)

// Activities holds the dependencies of every activity.
type Activities struct {
	Store   *store.Store
	Tenero  *tenero.Client
	Catalog *catalog.Catalog
	Logger  *zap.Logger
}

// Register registers every activity method under its method name (the
// workflow calls them by those names).
func Register(r sdkworker.ActivityRegistry, a *Activities) {
	r.RegisterActivity(a)
}

// runError ends a run that failed as a whole. Upstream trouble is not
// retried by Temporal (the next tick is the recovery path); transport
// trouble is. The partial result rides along as details so the workflow can
// still report what the run did.
func runError(class pacer.ErrorClass, msg string, result any) error {
	return temporal.NewApplicationErrorWithOptions(msg, string(class), temporal.ApplicationErrorOptions{
		NonRetryable: class != pacer.ClassTransport,
		Details:      []any{result},
	})
}

// heartbeatEvery is how often a running activity reports liveness. The
// workflow's heartbeat timeout is a few times this, so a killed worker's
// attempt is retried elsewhere within seconds, while a long in-attempt retry
// (a Retry-After of 30 s) does not look like a dead worker.
const heartbeatEvery = 5 * time.Second

// keepHeartbeating heartbeats progress() until the returned stop is called.
func keepHeartbeating(ctx context.Context, progress func() any) (stop func()) {
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(heartbeatEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx, progress())
			}
		}
	}()
	return func() { close(done) }
}
