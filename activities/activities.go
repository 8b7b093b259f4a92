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
	"github.com/pacer-dev/pacer/internal/competition"
	"github.com/pacer-dev/pacer/internal/hiro"
	"github.com/pacer-dev/pacer/internal/metrics"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/internal/tenero"
)

// Activities holds the dependencies of every activity.
type Activities struct {
	Store   *store.Store
	Tenero  *tenero.Client
	Hiro    *hiro.Client
	Catalog *catalog.Catalog
	// Verifier is the one verify path, shared with the HTTP fast path.
	Verifier *competition.Verifier
	Logger   *zap.Logger
	// Metrics records each attempt; nil records nothing.
	Metrics *metrics.Metrics
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

// Options configure New.
type Options struct {
	Store   *store.Store
	Logger  *zap.Logger
	Metrics *metrics.Metrics

	TeneroBaseURL, TeneroAPIKey string
	HiroBaseURL, HiroAPIKey     string
	// HiroPerMinute is the per-minute budget shared by everything that calls
	// Hiro, in every process (0 = 45 without a key, 450 with one: a little
	// under Hiro's 50 and 500).
	HiroPerMinute    int
	CompetitionStart time.Time
	// Sleep replaces the upstream clients' in-attempt retry waits (tests).
	Sleep func(context.Context, time.Duration) error
}

// New wires the activities and their clients. The verifier it builds is
// the one verify path: the sweep and the HTTP fast path both use it.
func New(o Options) *Activities {
	perMinute := o.HiroPerMinute
	if perMinute <= 0 {
		perMinute = 45
		if o.HiroAPIKey != "" {
			perMinute = 450
		}
	}
	cat := catalog.Default()
	h := hiro.New(hiro.Config{
		BaseURL: o.HiroBaseURL,
		APIKey:  o.HiroAPIKey,
		Logger:  o.Logger.Named("hiro"),
		Sleep:   o.Sleep,
		Limiter: o.Store.NewBudget("hiro", perMinute),
	})
	return &Activities{
		Store:   o.Store,
		Catalog: cat,
		Logger:  o.Logger,
		Metrics: o.Metrics,
		Tenero: tenero.New(tenero.Config{
			BaseURL: o.TeneroBaseURL,
			APIKey:  o.TeneroAPIKey,
			Logger:  o.Logger.Named("tenero"),
			Sleep:   o.Sleep,
		}),
		Hiro: h,
		Verifier: &competition.Verifier{
			Ledger:           o.Store,
			Txs:              h,
			Allowlist:        cat,
			CompetitionStart: o.CompetitionStart,
		},
	}
}
