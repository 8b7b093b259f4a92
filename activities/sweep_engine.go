package activities

import (
	"context"
	"time"

	"go.temporal.io/sdk/activity"
	"go.uber.org/zap"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/budget"
	"github.com/pacer-dev/pacer/internal/competition"
	"github.com/pacer-dev/pacer/internal/discovery"
	"github.com/pacer-dev/pacer/internal/hiro"
	"github.com/pacer-dev/pacer/internal/ingest"
	"github.com/pacer-dev/pacer/internal/metrics"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/internal/wait"
)

// SweepEngine is what a sweep run works against: for the sweep activity,
// Postgres, Hiro, the shared budget, the wall clock and the Temporal
// activity (Activities.sweepEngine). Each is an interface so that the
// run's logic (sweep.go, walk.go, visit.go, discovery.go: the state, the
// plan's steps, the walks, visits, verdicts and readers) can be driven
// in a simulated world on a virtual clock; the chain benchmark
// (internal/ingest/bench) does not do so yet: it drives the same loop and
// plan (discovery.Drive) with its own model of the steps.
type SweepEngine struct {
	Store SweepStore
	// Hiro and Verifier are the sweep lane's; ManualHiro and
	// ManualVerifier (nil: none) the manual lane's, for an operator's
	// refresh (Activities.ManualHiro).
	Hiro           SweepHiro
	Verifier       *competition.Verifier
	ManualHiro     SweepHiro
	ManualVerifier *competition.Verifier
	Catalog        SweepCatalog
	Budget         SweepBudget // nil: none (the optimal policy has no budget to plan by)
	Ingest         ingest.Config
	Discovery      discovery.Config
	Logger         *zap.Logger
	Metrics        *metrics.Metrics // nil records nothing
	Clock          SweepClock
	Pushed         *wait.Bell // nil: no push rings a wait
	Activity       SweepActivity
	// Plan is the optimal policy's last allocation and Traffic the chain's
	// traffic the runs observed: both outlive a run.
	Plan    *ingest.Allocations
	Traffic *discovery.Observer
}

// SweepStore is what a sweep run reads and writes in the database
// (store.Store).
type SweepStore interface {
	DueAgents(ctx context.Context, cfg ingest.Config, now time.Time, limit int, skip []string) ([]store.AgentIngest, error)
	HintedAgents(ctx context.Context, now time.Time, limit int, skip []string) ([]store.AgentIngest, error)
	SaveVisit(ctx context.Context, a store.AgentIngest, found int, startedAt time.Time) (saved bool, err error)
	HintAgent(ctx context.Context, stx string) (found bool, err error)
	AgentAddresses(ctx context.Context) (map[string]bool, error)
	IngestSummary(ctx context.Context, now time.Time) (map[ingest.Tier]store.TierSummary, error)
	SwapRates(ctx context.Context, now time.Time) ([]float64, error)

	DuePending(ctx context.Context, every time.Duration, limit int) ([]store.PendingTx, error)
	RecordPending(ctx context.Context, txid, sender string) error
	HoldPending(ctx context.Context, txid string, blockTime int64) error
	CheckedPending(ctx context.Context, txids []string) error
	PendingDueOf(ctx context.Context, sender string) error
	KnownRejection(ctx context.Context, txid string) (competition.Rejection, bool, error)
	LapseHolds(ctx context.Context, bound time.Duration) ([]store.LapsedHold, error)
	CompleteThrough(ctx context.Context) (*int64, error)

	DiscoveryReader(ctx context.Context, name string) (r store.Reader, found bool, err error)
	DiscoveryReaders(ctx context.Context) ([]store.Reader, error)
	SaveDiscoveryReader(ctx context.Context, r store.Reader, add store.ReaderCounts) error
	RecordGap(ctx context.Context, reader string, g discovery.Gap) error
	FillGaps(ctx context.Context, readers []string) (open int, err error)
	ReadPushState(ctx context.Context, fresh time.Duration) (st store.PushState, found bool, err error)
}

// SweepHiro is the Hiro a sweep run lists with (hiro.Client, on its
// lane's budget).
type SweepHiro interface {
	Feed(ctx context.Context, txType string, offset int) (hiro.FeedPage, error)
	ListTransactions(ctx context.Context, principal string, from hiro.PageToken) (hiro.TxPage, error)
	Sunset(e hiro.Endpoint) bool
}

// SweepCatalog is the allowlist a sweep run picks its candidates and its
// contracts' readers by (catalog.Catalog).
type SweepCatalog interface {
	competition.Allowlist
	Contracts() []string
	HasContract(contractID string) bool
}

// SweepBudget is the shared budget as a sweep run plans by it
// (store.SharedBudget).
type SweepBudget interface {
	PlanView(ctx context.Context, lane budget.Lane, now time.Time) (v discovery.Budget, minute int64, month *int64, err error)
	Snapshot(ctx context.Context) (budget.State, time.Time, error)
	Config() budget.Config
}

// SweepClock is a sweep run's time: the wall clock's, or a virtual one.
type SweepClock interface {
	Now() time.Time
	// Wait waits d, or until rung closes (true: a push rang) or ctx ends.
	Wait(ctx context.Context, d time.Duration, rung <-chan struct{}) (rang bool, err error)
}

// SweepActivity ties a run to the Temporal activity it runs in.
type SweepActivity interface {
	// Resumed is the result the last attempt heartbeated, if any.
	Resumed(ctx context.Context) (pacer.SweepResult, bool)
	// KeepHeartbeating heartbeats progress until the returned stop.
	KeepHeartbeating(ctx context.Context, progress func() any) (stop func())
	// Progress records progress as the run goes.
	Progress(ctx context.Context, p any)
	// HeartbeatTimeout is the activity's (0: none).
	HeartbeatTimeout(ctx context.Context) time.Duration
}

// sweepEngine is the sweep activity's engine: a's dependencies.
func (a *Activities) sweepEngine() *SweepEngine {
	e := &SweepEngine{Store: a.Store, Hiro: a.Hiro, Verifier: a.Verifier, Catalog: a.Catalog, Ingest: a.Ingest,
		Discovery: a.Discovery, Logger: a.Logger, Metrics: a.Metrics, Clock: activityClock{a}, Pushed: a.Pushed,
		Activity: temporalActivity{}, Plan: &a.plan, Traffic: &a.traffic}
	if a.ManualHiro != nil && a.ManualVerifier != nil {
		e.ManualHiro, e.ManualVerifier = a.ManualHiro, a.ManualVerifier
	}
	if a.Budget != nil {
		e.Budget = a.Budget
	}
	return e
}

// activityClock is the activities' clock (Activities.Clock) and a real
// wait.
type activityClock struct{ a *Activities }

func (c activityClock) Now() time.Time { return c.a.now() }

func (activityClock) Wait(ctx context.Context, d time.Duration, rung <-chan struct{}) (bool, error) {
	return wait.SleepOr(ctx, d, rung)
}

// temporalActivity is a run in a Temporal activity: heartbeats.
type temporalActivity struct{}

func (temporalActivity) Resumed(ctx context.Context) (pacer.SweepResult, bool) {
	var prog sweepProgress
	if activity.HasHeartbeatDetails(ctx) && activity.GetHeartbeatDetails(ctx, &prog) == nil {
		return prog.Result, true
	}
	return pacer.SweepResult{}, false
}

func (temporalActivity) KeepHeartbeating(ctx context.Context, progress func() any) func() {
	return keepHeartbeating(ctx, progress)
}

func (temporalActivity) Progress(ctx context.Context, p any) { recordProgress(ctx, p) }

func (temporalActivity) HeartbeatTimeout(ctx context.Context) time.Duration {
	return activity.GetInfo(ctx).HeartbeatTimeout
}

func (e *SweepEngine) now() time.Time { return e.Clock.Now() }
