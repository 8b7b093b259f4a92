// Package activities holds the work the scheduler hands out: one method of
// Activities per task, each taking one input and returning one result.
// Errors leave an activity classified (SPEC §3): an application error whose
// type is the pacer.ErrorClass, retryable only for transport trouble.
package activities

import (
	"cmp"
	"context"
	"reflect"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	sdkworker "go.temporal.io/sdk/worker"
	"go.uber.org/zap"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/budget"
	"github.com/pacer-dev/pacer/internal/catalog"
	"github.com/pacer-dev/pacer/internal/competition"
	"github.com/pacer-dev/pacer/internal/discovery"
	"github.com/pacer-dev/pacer/internal/hiro"
	"github.com/pacer-dev/pacer/internal/ingest"
	"github.com/pacer-dev/pacer/internal/metrics"
	"github.com/pacer-dev/pacer/internal/registry"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/internal/tenero"
	"github.com/pacer-dev/pacer/internal/upstream"
	"github.com/pacer-dev/pacer/internal/wait"
	"github.com/pacer-dev/pacer/internal/webhook"
)

// Activities holds the dependencies of every activity.
type Activities struct {
	Store   *store.Store
	Tenero  *tenero.Client
	Hiro    *hiro.Client
	Catalog *catalog.Catalog
	// Verifier is the one verify path. FastVerifier runs the same gates
	// for the agents' fast path through a Hiro client on the budget's fast
	// lane, which never waits (SPEC §5.6).
	Verifier     *competition.Verifier
	FastVerifier *competition.Verifier
	// ManualHiro and ManualVerifier are the sweep's for an operator's
	// explicit refresh, on the budget's manual lane: it may spend the
	// month's reserve, paced by the minute window only (SPEC §3.1). Nil
	// runs a manual refresh on the sweep's lane.
	ManualHiro     *hiro.Client
	ManualVerifier *competition.Verifier
	// Ingest is the sweep's visit policy (SPEC §5.3).
	Ingest ingest.Config
	// Discovery is how the sweep finds swaps (SPEC §5.0).
	Discovery discovery.Config
	// Budget is the one Hiro budget every process shares (SPEC §5.4); nil
	// leaves the optimal policy without a budget to plan by.
	Budget *store.SharedBudget
	Logger *zap.Logger
	// Metrics records each attempt; nil records nothing.
	Metrics *metrics.Metrics
	// DayZone is PACER_DAY_TZ: its midnight ends a daily rollup.
	DayZone *time.Location
	// Deliveries configures the deliver task.
	Deliveries DeliveryConfig
	// Clock is the time the rollup, deliver and tenero tasks work by, and
	// the tail's traffic is observed at (time.Now); tests shift it to just
	// after a period's end, fix the instant a cut tenero batch is chosen
	// at, or follow a simulated chain's clock.
	Clock func() time.Time

	// Registry reads PACER_REGISTRY_URL (SPEC §12); nil when it is not set.
	RegistryClient *registry.Client
	// Hook is the chainhook task's configuration (SPEC §11).
	Hook ChainhookConfig
	// RegistryMaxDrop is PACER_REGISTRY_MAX_DROP: the share of the
	// registered agents one read may deregister before it is held for an
	// operator's confirmation.
	RegistryMaxDrop float64
	// Pushed rings when a push queued a transaction (push.Listen): a
	// sweep run's wait ends on it, so the run in flight verifies the push
	// at once; nil waits out each wait.
	Pushed *wait.Bell

	// plan is the optimal policy's last allocation.
	plan ingest.Allocations
	// traffic is the chain's traffic the sweep's runs observed.
	traffic discovery.Observer
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

// heartbeatShare is the share of the activity's heartbeat timeout between
// two looks at its progress: the SDK's own throttle (it sends at most one
// heartbeat per 0.8 × the timeout), so that every heartbeat the activity
// records is one the server gets. A run shorter than that records none.
const heartbeatShare = 0.8

// defaultHeartbeatEvery is the look interval when the activity has no
// heartbeat timeout (0.8 × the workflow's 2 minutes).
const defaultHeartbeatEvery = 96 * time.Second

// keepHeartbeating heartbeats progress() until the returned stop is called,
// only when it changed since the last heartbeat. Every heartbeat that
// reaches Temporal is a billed action; liveness needs one per heartbeat
// timeout, and a run that made no progress for a whole interval is stuck:
// it then times out and is retried, on this worker or another. When the
// run ends while its worker stops (the worker hands it back, cancelling its
// context), stop heartbeats its last progress, so that the attempt another
// worker takes over resumes where this one ended.
func keepHeartbeating(ctx context.Context, progress func() any) (stop func()) {
	every := defaultHeartbeatEvery
	if t := activity.GetInfo(ctx).HeartbeatTimeout; t > 0 {
		every = time.Duration(float64(t) * heartbeatShare)
	}
	stopping := activity.GetWorkerStopChannel(ctx)
	// Recorded without ctx's cancellation: the last one is sent after it.
	hb := context.WithoutCancel(ctx)
	var last any
	beat := func() {
		if p := progress(); !reflect.DeepEqual(p, last) {
			activity.RecordHeartbeat(hb, p)
			last = p
		}
	}
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				beat()
			}
		}
	}()
	return func() {
		close(done)
		<-exited
		select {
		case <-stopping:
			beat()
		default:
		}
	}
}

// recordProgress heartbeats a run's progress as it goes, once the attempt
// has run for half the SDK's throttle interval (0.4 × its heartbeat
// timeout): the SDK sends an attempt's first heartbeat at once and
// throttles only the ones after it, so heartbeating from the start would
// bill one heartbeat to every run however short, and liveness needs none
// that early. keepHeartbeating covers a run that makes no such call.
//
// ctx may be one the run derived and later cancels (a batch's errgroup):
// the SDK sends the heartbeats it held back with the context of the call
// that opened its throttle interval, and a send that fails because that
// context was cancelled cancels the attempt. The heartbeat is recorded
// without ctx's cancellation, so only the activity's own end stops it.
func recordProgress(ctx context.Context, p any) {
	info := activity.GetInfo(ctx)
	quiet := defaultHeartbeatEvery / 2
	if t := info.HeartbeatTimeout; t > 0 {
		quiet = time.Duration(float64(t) * heartbeatShare / 2)
	}
	if time.Since(info.StartedTime) >= quiet {
		activity.RecordHeartbeat(context.WithoutCancel(ctx), p)
	}
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
	// under Hiro's 50 and 500); the headers lower it when Hiro says less.
	HiroPerMinute    int
	CompetitionStart time.Time
	// Ingest is the sweep's visit policy; zero fields take the defaults.
	Ingest ingest.Config
	// Discovery is how the sweep finds swaps; zero fields take the
	// defaults (see discovery.Config.WithDefaults).
	Discovery discovery.Config
	// Sleep replaces the upstream clients' in-attempt retry waits (tests).
	Sleep func(context.Context, time.Duration) error

	// DayZone is PACER_DAY_TZ (nil = UTC).
	DayZone *time.Location
	// DeliveryLadder is PACER_DELIVERY_LADDER (nil = webhook.DefaultLadder).
	DeliveryLadder webhook.Ladder
	// DeliveryTimeout bounds each delivery attempt (0 = 10 s, SPEC §10.3;
	// tests shorten it with the ladder).
	DeliveryTimeout time.Duration
	// WebhookAllowPrivate lets deliveries reach loopback and private
	// addresses (PACER_WEBHOOK_ALLOW_PRIVATE=1; development and tests).
	WebhookAllowPrivate bool
	// DisableAfter is PACER_DISABLE_AFTER: a subscriber failing every
	// attempt for this long is disabled (0 = DefaultDisableAfter; < 0 =
	// never).
	DisableAfter time.Duration
	// Clock replaces time.Now for the rollup and deliver tasks (tests).
	Clock func() time.Time
	// RegistryURL is PACER_REGISTRY_URL: the registry's first page
	// (empty: no registry task).
	RegistryURL string
	// Chainhook configures the chainhook task; its APIKey defaults to
	// HiroAPIKey.
	Chainhook ChainhookConfig
	// RegistryMaxDrop is PACER_REGISTRY_MAX_DROP (0 = store.DefaultMaxDrop).
	RegistryMaxDrop float64
}

// DefaultRegistryPerMinute is the registry's budget until its headers
// say what it allows.
const DefaultRegistryPerMinute = 30

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
	shared := o.Store.SharedBudget(store.UpstreamHiro, budget.Config{PerMinute: int64(perMinute)})
	onErr := func(err error) { o.Logger.Warn("hiro.budget_observe_failed", zap.Error(err)) }
	hiroClient := func(lane budget.Lane, maxWait time.Duration) *hiro.Client {
		l := shared.Limiter(lane, maxWait)
		l.OnError = onErr
		return hiro.New(hiro.Config{
			BaseURL: o.HiroBaseURL,
			APIKey:  o.HiroAPIKey,
			Logger:  o.Logger.Named("hiro"),
			Sleep:   o.Sleep,
			Limiter: l,
		})
	}
	verifier := func(h *hiro.Client) *competition.Verifier {
		return &competition.Verifier{Ledger: o.Store, Txs: h, Allowlist: cat, CompetitionStart: o.CompetitionStart}
	}
	h := hiroClient(budget.LaneSweep, SweepMaxWait)
	manual := hiroClient(budget.LaneManual, SweepMaxWait)
	return &Activities{
		Store:      o.Store,
		Catalog:    cat,
		Logger:     o.Logger,
		Metrics:    o.Metrics,
		DayZone:    o.DayZone,
		Deliveries: newDeliveryConfig(o),
		Clock:      o.Clock,
		Tenero: tenero.New(tenero.Config{
			BaseURL: o.TeneroBaseURL,
			APIKey:  o.TeneroAPIKey,
			Logger:  o.Logger.Named("tenero"),
			Sleep:   o.Sleep,
		}),
		Hiro:            h,
		Verifier:        verifier(h),
		FastVerifier:    verifier(hiroClient(budget.LaneFast, 0)),
		ManualHiro:      manual,
		ManualVerifier:  verifier(manual),
		Ingest:          ingestFor(o.Ingest, o.Discovery),
		Discovery:       o.Discovery.WithDefaults(),
		Budget:          shared,
		RegistryClient:  newRegistryClient(o),
		Hook:            chainhookConfig(o),
		RegistryMaxDrop: cmp.Or(o.RegistryMaxDrop, store.DefaultMaxDrop),
	}
}

func chainhookConfig(o Options) ChainhookConfig {
	c := o.Chainhook
	if c.APIKey == "" {
		c.APIKey = o.HiroAPIKey
	}
	return c
}

// newRegistryClient is the registry's client on a budget of its own, or
// nil without PACER_REGISTRY_URL.
func newRegistryClient(o Options) *registry.Client {
	if o.RegistryURL == "" {
		return nil
	}
	l := o.Store.SharedBudget(store.UpstreamRegistry, budget.Config{PerMinute: DefaultRegistryPerMinute}).Limiter(budget.LaneSweep, time.Minute)
	l.OnError = func(err error) { o.Logger.Warn("registry.budget_observe_failed", zap.Error(err)) }
	return &registry.Client{Limiter: l,
		Conn: upstream.Conn{BaseURL: o.RegistryURL, Sleep: o.Sleep, Log: o.Logger.Named("registry")}}
}

// ingestFor is the visit policy under a discovery mode: reading the chain,
// agents are visited for their history and then on events alone.
func ingestFor(c ingest.Config, d discovery.Config) ingest.Config {
	c = c.WithDefaults()
	c.EventsOnly = d.WithDefaults().Mode == discovery.ModeTail
	return c
}
