package cli

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/client"
	"go.uber.org/zap"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/activities"
	"github.com/pacer-dev/pacer/internal/logging"
	"github.com/pacer-dev/pacer/internal/metrics"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/worker"
	"github.com/pacer-dev/pacer/workflows"
)

func (c *config) logger() (*zap.Logger, error) {
	l, err := logging.New(logging.Options{Level: c.logLevel, Format: c.logFormat})
	if err != nil {
		return nil, &UsageError{Err: err}
	}
	return l, nil
}

// upstreamKeys settles the API keys of the processes that call upstreams:
// each from its flag, environment variable or file, and none sent in
// cleartext to a host that is not loopback unless the operator allowed it.
func (c *config) upstreamKeys(log *zap.Logger) error {
	var err error
	if c.teneroAPIKey, err = apiKey(c.teneroAPIKey, c.teneroKeyFile, "TENERO_API_KEY", "TENERO_API_KEY_FILE"); err != nil {
		return err
	}
	if c.hiroAPIKey, err = apiKey(c.hiroAPIKey, c.hiroKeyFile, "HIRO_API_KEY", "HIRO_API_KEY_FILE"); err != nil {
		return err
	}
	if err := keyTransport("tenero-base-url", "TENERO_API_KEY", c.teneroBaseURL, c.teneroAPIKey, c.allowPlaintextKeys, log); err != nil {
		return err
	}
	return keyTransport("hiro-base-url", "HIRO_API_KEY", c.hiroBaseURL, c.hiroAPIKey, c.allowPlaintextKeys, log)
}

func (c *config) openStore(ctx context.Context) (*store.Store, error) {
	s, err := store.Open(ctx, c.databaseURL)
	if err != nil {
		return nil, fmt.Errorf("postgres (DATABASE_URL): %w", err)
	}
	return s, nil
}

// dial connects to Temporal; mh receives the SDK's metrics (nil drops them).
func (c *config) dial(ctx context.Context, log *zap.Logger, mh client.MetricsHandler) (client.Client, error) {
	return worker.Dial(ctx, worker.DialOptions{Address: c.temporalAddress, Namespace: c.namespace, Logger: log, MetricsHandler: mh})
}

// dialLazy builds a client that connects on first use (worker.DialLazy).
func (c *config) dialLazy(log *zap.Logger, mh client.MetricsHandler) (client.Client, error) {
	return worker.DialLazy(worker.DialOptions{Address: c.temporalAddress, Namespace: c.namespace, Logger: log, MetricsHandler: mh})
}

// dialQuiet dials for one-shot operator commands, whose output must not be
// interleaved with SDK log lines.
func (c *config) dialQuiet(ctx context.Context) (client.Client, error) {
	return c.dial(ctx, zap.NewNop(), nil)
}

func (c *config) scheduler() worker.Scheduler {
	return worker.Scheduler{
		WorkflowID: c.workflowID,
		TaskQueue:  c.taskQueue,
		Config: workflows.Config{TeneroEvery: pacer.Duration(c.teneroEvery), SweepEvery: pacer.Duration(c.sweepEvery),
			Schedules: c.schedules, RegistryEvery: c.registryCadence(), ChainhookEvery: c.chainhookCadence()},
		Deployment: c.operating.deployment(),
	}
}

func (c *config) activities(st *store.Store, log *zap.Logger, m *metrics.Metrics) *activities.Activities {
	ingestCfg, _ := c.ingest()       // validated before any command runs
	discoveryCfg, _ := c.discovery() // so is this
	return activities.New(activities.Options{
		Store:            st,
		Logger:           log,
		Metrics:          m,
		TeneroBaseURL:    c.teneroBaseURL,
		TeneroAPIKey:     c.teneroAPIKey,
		HiroBaseURL:      c.hiroBaseURL,
		HiroAPIKey:       c.hiroAPIKey,
		HiroPerMinute:    c.hiroPerMinute,
		CompetitionStart: time.Unix(c.competitionStart, 0),
		Ingest:           ingestCfg,
		Discovery:        discoveryCfg,
		DayZone:          c.rollups.zone,
		DeliveryLadder:   c.rollups.steps,
		// Webhooks go to private addresses only when the operator says so.
		WebhookAllowPrivate: c.webhookAllowPrivate,
		DisableAfter:        c.operating.disableAfter,
		RegistryURL:         c.registryURL,
		Chainhook:           c.chainhookActivities(),
		RegistryMaxDrop:     c.registryMaxDrop,
	})
}

// registryCadence is PACER_REGISTRY_EVERY with PACER_REGISTRY_URL set;
// without it there is no registry task.
func (c *config) registryCadence() pacer.Duration {
	if c.registryURL == "" {
		return 0
	}
	return pacer.Duration(c.registryEvery)
}

// chainhookCadence is PACER_CHAINHOOK_EVERY with PACER_CHAINHOOK_MANAGE=1;
// without it there is no chainhook task.
func (c *config) chainhookCadence() pacer.Duration {
	if !c.chainhookManage {
		return 0
	}
	return pacer.Duration(c.chainhookEvery)
}
