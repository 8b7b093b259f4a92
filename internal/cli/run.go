package cli

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"

	"github.com/pacer-dev/pacer/internal/admin"
	"github.com/pacer-dev/pacer/internal/api"
	"github.com/pacer-dev/pacer/internal/catalog"
	"github.com/pacer-dev/pacer/internal/competition"
	"github.com/pacer-dev/pacer/internal/metrics"
	"github.com/pacer-dev/pacer/internal/operate"
	"github.com/pacer-dev/pacer/internal/page"
	"github.com/pacer-dev/pacer/internal/push"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/internal/wait"
	"github.com/pacer-dev/pacer/worker"
	"github.com/pacer-dev/pacer/workflows"
)

// Command builds pacer's command tree without running it, so that a check
// outside this package (deploy's compose test) can hold deployment command
// lines to the real commands and flags.
func Command() *cobra.Command { return newRoot() }

func newWorkerCmd(c *config) *cobra.Command {
	var migrate bool
	var metricsAddr string
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Run the Temporal worker, keep the scheduler running, and serve the HTTP API",
		Args:  wrapArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return c.runStack(cmd.Context(), stackOptions{worker: true, http: c.httpAddr, metrics: metricsAddr, migrate: migrate,
				admin: c.adminAddr, adminSet: adminFlagSet(cmd)})
		},
	}
	cmd.Flags().BoolVar(&migrate, "migrate", true, "apply database migrations at start")
	cmd.Flags().StringVar(&c.httpAddr, "http", env("PACER_HTTP_ADDR", "127.0.0.1:8080"), `HTTP API address, "" for none [PACER_HTTP_ADDR]`)
	bindAdmin(cmd, c)
	bindMetricsAddr(cmd, &metricsAddr)
	return cmd
}

// bindMetricsAddr is the listener Prometheus scrapes: every family, the
// operators' included (the public /metrics serves only the families named
// public), without the operator's page or the admin API.
func bindMetricsAddr(cmd *cobra.Command, addr *string) {
	cmd.Flags().StringVar(addr, "metrics-addr", env("PACER_METRICS_ADDR", ""),
		`serve every metric family and /healthz alone on this address, for Prometheus [PACER_METRICS_ADDR]`)
}

func newServeCmd(c *config) *cobra.Command {
	var metricsAddr string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the HTTP API alone",
		Args:  wrapArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if c.httpAddr == "" {
				return usagef("--http must not be empty for serve")
			}
			return c.runStack(cmd.Context(), stackOptions{http: c.httpAddr, metrics: metricsAddr, admin: c.adminAddr, adminSet: adminFlagSet(cmd)})
		},
	}
	cmd.Flags().StringVar(&c.httpAddr, "http", env("PACER_HTTP_ADDR", "127.0.0.1:8080"), "HTTP API address [PACER_HTTP_ADDR]")
	bindAdmin(cmd, c)
	bindMetricsAddr(cmd, &metricsAddr)
	return cmd
}

func newMigrateCmd(c *config) *cobra.Command {
	return &cobra.Command{
		Use:   "migrate",
		Short: "Apply database migrations",
		Args:  wrapArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := c.openStore(cmd.Context())
			if err != nil {
				return err
			}
			defer st.Close()
			if err := st.Migrate(cmd.Context()); err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), "migrations applied")
			return nil
		},
	}
}

type stackOptions struct {
	worker  bool
	migrate bool
	http    string
	// metrics is an address serving /metrics without the API.
	metrics string
	// admin is the operator listener's address (with the API only);
	// adminSet says the operator chose it, so failing to listen there is
	// fatal rather than logged.
	admin    string
	adminSet bool
	// dev is pacer dev: one build at a time, whatever its build ID.
	dev bool
	// onReady, when set, is called once everything is up.
	onReady func()
}

// runStack runs a worker and/or the HTTP API until ctx ends.
func (c *config) runStack(ctx context.Context, o stackOptions) error {
	log, err := c.logger()
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()
	if err := c.upstreamKeys(log); err != nil {
		return err
	}
	if o.worker && !o.dev {
		if err := c.operating.namesBuild(); err != nil {
			return err
		}
	}
	st, err := c.openStore(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	if o.migrate {
		if err := st.Migrate(ctx); err != nil {
			return err
		}
		log.Info("store.migrated")
	}
	// One registry per process: the SDK's series (through the client's
	// handler) and pacer's land in it, and /metrics serves it.
	m := metrics.New()
	sdkMetrics, err := m.TemporalHandler()
	if err != nil {
		return err
	}
	// A worker is no use without Temporal and says so at once; the API alone
	// reads Postgres, so it starts whatever Temporal does and connects when
	// a status query first needs it.
	dial := func() (client.Client, error) { return c.dial(ctx, log, sdkMetrics) }
	if !o.worker {
		dial = func() (client.Client, error) { return c.dialLazy(log, sdkMetrics) }
	}
	tc, err := dial()
	if err != nil {
		return err
	}
	defer tc.Close()

	acts := c.activities(st, log, m)
	g, ctx := errgroup.WithContext(ctx)
	if o.worker {
		s := c.scheduler()
		s.Stops = st // a stop outlives Temporal's retention
		if acts.Discovery.Push {
			// A push wakes the sweep run in flight in any worker, not only
			// through the scheduler's hint (which waits for the run to end).
			acts.Pushed = &wait.Bell{}
			g.Go(func() error { return push.Listen(ctx, st, acts.Pushed, log.Named("push")) })
			g.Go(func() error { return push.Hold(ctx, c.pushOptions(st, tc, log)) })
		}
		g.Go(func() error { return worker.Run(ctx, tc, s, acts, log) })
	}
	if o.http != "" {
		// The gauges read from the database and from the scheduler's memo
		// go with the API: they describe what all processes share, so the
		// API's scrape is the one place to read them. None is a status
		// query (a billed action): a description and the run ledger.
		if err := m.WatchStore(st, catalog.Default(), acts.Budget); err != nil {
			return err
		}
		if err := m.WatchPush(func(ctx context.Context) (store.PushState, bool, error) {
			return st.ReadPushState(ctx, push.Silence)
		}); err != nil {
			return err
		}
		sched := c.scheduler()
		sched.Stops = st // stopped, after retention deleted the run
		view := func(ctx context.Context) (metrics.SchedulerView, error) { return worker.Describe(ctx, tc, sched) }
		if err := m.WatchScheduler(view, st.LatestRuns, metricsEvery); err != nil {
			return err
		}
		readsURL, readsVar := c.publicDatabaseURL, "PACER_PUBLIC_DATABASE_URL"
		if readsURL == "" {
			readsURL, readsVar = c.databaseURL, "DATABASE_URL"
		}
		reads, err := store.OpenPublicReads(ctx, readsURL)
		if err != nil {
			return fmt.Errorf("postgres (%s): %w", readsVar, err)
		}
		defer reads.Close()
		h := c.apiHandler(st, reads, tc, acts.FastVerifier, acts.Budget, m, log)
		g.Go(func() error { return api.Serve(ctx, o.http, h, log) })
		if err := c.serveOperator(ctx, g, o, h, log); err != nil {
			return err
		}
	}
	if o.metrics != "" {
		g.Go(func() error { return api.Serve(ctx, o.metrics, m.ServeMux(), log.Named("metrics")) })
	}
	if o.onReady != nil {
		o.onReady()
	}
	return g.Wait()
}

func (c *config) apiHandler(st, reads *store.Store, tc client.Client, v *competition.Verifier, hb *store.SharedBudget, m *metrics.Metrics, log *zap.Logger) *api.Server {
	return api.New(api.Options{
		Store:     st,
		ReadStore: reads,
		Gatherer:  m.Registry(),
		// PACER_OPERATOR_TOKEN, PACER_TRUSTED_PROXIES (SPEC §5.6, §7).
		OperatorTokens: c.operatorTokens,
		TrustedProxies: c.trustedProxies,
		CORSOrigins:    c.corsOrigins,
		AdminHosts:     append(api.AddrHosts(c.adminAddr), c.adminHosts...),
		Verifier:       v,
		// The fast path's verifier takes from the Hiro budget's fast lane.
		FastPathPerMinute: c.fastPathPerMinute,
		Catalog:           catalog.Default(),
		Logger:            log.Named("api"),
		Metrics:           m.Handler(),
		Registerer:        m.Registry(),
		Status:            c.status(tc),
		HiroBudget:        hb,
		ChainhookSecret:   c.chainhookSecret,
		ChainhookMaxBytes: c.hook.maxBytes,
		HintEvery:         c.hotEvery,
		// The admin API (SPEC §7) on the operator listener: the same
		// operations the CLI runs (internal/operate), as the token's name.
		Admin: admin.New(admin.Options{Logger: log.Named("admin"), Operate: &operate.Service{
			Store: st, Temporal: tc, WorkflowID: c.workflowID,
			SecretOverlap: c.operating.secretOverlap, AllowPrivate: c.webhookAllowPrivate, Logger: log.Named("operate"),
			RoundGrace: c.roundGrace}}),
		SchedulerHealth: func(ctx context.Context) (page.SchedulerHealth, error) {
			return worker.PageHealth(ctx, tc, c.scheduler())
		},
		// A hint that passed the per-agent debounce wakes the sweep.
		Waker: c.wake(tc),
		TemporalHealth: func(ctx context.Context) error {
			_, err := tc.CheckHealth(ctx, &client.CheckHealthRequest{})
			return err
		},
	})
}

// pushOptions holds Hiro's WebSocket for the deployment (SPEC §5.0
// "Push"): a socket per allowlisted contract; a push of an allowlisted
// call wakes the sweep as a hint does.
func (c *config) pushOptions(st *store.Store, tc client.Client, log *zap.Logger) push.HoldOptions {
	cat := catalog.Default()
	host, _ := os.Hostname()
	return push.HoldOptions{
		Reader: push.Config{BaseURL: c.hiroBaseURL, APIKey: c.hiroAPIKey, Contracts: cat.Contracts()},
		Store:  st, Holder: fmt.Sprintf("%s:%d", host, os.Getpid()), Allowed: cat.Allowed,
		Wake:   c.wake(tc),
		Logger: log.Named("push"),
	}
}

// wake signals the scheduler's hint: the sweep is due now, the agent named
// only when the hint's check takes it (workflows.HintName), so a valid
// address the check is narrower than never gets the wake rejected.
func (c *config) wake(tc client.Client) func(ctx context.Context, agent string) error {
	return func(ctx context.Context, agent string) error {
		return worker.Signal(ctx, tc, c.workflowID, workflows.SignalHint, workflows.HintInput{Agent: workflows.HintName(agent)})
	}
}

// metricsEvery is how long the scheduler gauges reuse a read: less than a
// scrape interval, so every scrape sees a fresh one.
const metricsEvery = 10 * time.Second

// status reads the scheduler's status from its memo (a description, not
// a billed query; SPEC §7), or queries a scheduler that keeps none there.
func (c *config) status(tc client.Client) func(context.Context) (workflows.Status, error) {
	return func(ctx context.Context) (workflows.Status, error) {
		return worker.StatusShared(ctx, tc, c.workflowID)
	}
}
