// Package cli builds pacer's cobra commands. Each command is built by a
// function; output goes to the writers given to Run; exit codes are decided
// in one place: 0 ok, 1 failure, 2 bad usage.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/pacer-dev/pacer/internal/api"
	"github.com/pacer-dev/pacer/internal/cron"
	"github.com/pacer-dev/pacer/internal/discovery"
	"github.com/pacer-dev/pacer/internal/ingest"
	"github.com/pacer-dev/pacer/internal/push"
	"github.com/pacer-dev/pacer/internal/round"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/workflows"
)

// UsageError is a problem with the command line: exit code 2.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

func usagef(format string, args ...any) error {
	return &UsageError{Err: fmt.Errorf(format, args...)}
}

// Run executes pacer with args and returns the process exit code.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRoot()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	msg := strings.ReplaceAll(err.Error(), "\n", " ")
	fmt.Fprintf(stderr, "pacer: %s\n", msg)
	var ue *UsageError
	if errors.As(err, &ue) || strings.HasPrefix(msg, "unknown command ") {
		return 2
	}
	return 1
}

// config is every setting, each from a flag whose default comes from the
// environment (SPEC §2).
type config struct {
	temporalAddress string
	namespace       string
	taskQueue       string
	workflowID      string
	databaseURL     string
	// publicDatabaseURL is the public reads' pool's (empty: databaseURL).
	publicDatabaseURL string
	httpAddr          string
	teneroBaseURL     string
	teneroAPIKey      string
	teneroKeyFile     string
	hiroBaseURL       string
	registryURL       string
	registryEvery     time.Duration
	// roundGrace is PACER_ROUND_GRACE (SPEC §13).
	roundGrace      time.Duration
	registryMaxDrop float64
	hiroAPIKey      string
	hiroKeyFile     string
	// allowPlaintextKeys lets a key go over http:// to a non-loopback host.
	allowPlaintextKeys bool
	competitionStart   int64
	hiroPerMinute      int
	teneroEvery        time.Duration
	sweepEvery         time.Duration
	// The sweep's visit policy (SPEC §5.3) and the fast path's per-client
	// limit (SPEC §5.6).
	sweepPolicy       string
	hotEvery          time.Duration
	warmEvery         time.Duration
	coldEvery         time.Duration
	maxStaleness      time.Duration
	reconcileEvery    time.Duration
	discoveryMode     string
	pushMode          string
	tailEvery         time.Duration
	tailMaxPages      int
	fastPathPerMinute int
	// chainhookSecret is the bearer secret of POST /api/chainhook.
	chainhookSecret string
	// chainhookManage turns on the chainhook task, every chainhookEvery
	// (SPEC §11).
	chainhookManage bool
	chainhookEvery  time.Duration
	logLevel        string
	logFormat       string
	// schedulesJSON is PACER_SCHEDULES as given; schedules is it parsed
	// and validated.
	schedulesJSON string
	schedules     cron.Schedules
	rollups       rollupConfig
	hook          chainhookConfig
	operating     operatingConfig

	// The public surface (SPEC §7, §10.2).
	webhookAllowPrivate bool
	adminAddr           string
	operatorTokensRaw   string
	operatorTokens      []api.OperatorToken
	trustedProxiesRaw   string
	corsOriginsRaw      string
	corsOrigins         []string
	trustedProxies      []netip.Prefix
	adminHostsRaw       string
	adminHosts          []string

	// envErrs collects environment values that do not parse; they are
	// reported as usage errors before any command runs.
	envErrs []error
}

func env(key, def string) string {
	if v, ok := os.LookupEnv(key); ok && v != "" {
		return v
	}
	return def
}

func (c *config) envDuration(key string, def time.Duration) time.Duration {
	v := env(key, "")
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		c.envErrs = append(c.envErrs, fmt.Errorf("%s=%q is not a positive Go duration (like 5m)", key, v))
		return def
	}
	return d
}

func (c *config) envInt(key string, def int64) int64 {
	v := env(key, "")
	if v == "" {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		c.envErrs = append(c.envErrs, fmt.Errorf("%s=%q is not an integer", key, v))
		return def
	}
	return n
}

func (c *config) envFloat(key string, def float64) float64 {
	v := env(key, "")
	if v == "" {
		return def
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		c.envErrs = append(c.envErrs, fmt.Errorf("%s=%q is not a number", key, v))
		return def
	}
	return f
}

func (c *config) envBool(key string) bool {
	v := env(key, "")
	if v == "" {
		return false
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		c.envErrs = append(c.envErrs, fmt.Errorf("%s=%q is not true or false", key, v))
	}
	return b
}

func (c *config) bind(fs *pflag.FlagSet) {
	// TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TLS and profiles
	// are read by the SDK's environment configuration; these flags override.
	fs.StringVar(&c.temporalAddress, "temporal-address", "", "Temporal frontend host:port (default from TEMPORAL_ADDRESS or the Temporal config profile, else 127.0.0.1:7233)")
	fs.StringVar(&c.namespace, "namespace", "", "Temporal namespace (default from TEMPORAL_NAMESPACE, else default)")
	fs.StringVar(&c.taskQueue, "task-queue", env("PACER_TASK_QUEUE", "pacer"), "task queue [PACER_TASK_QUEUE]")
	fs.StringVar(&c.workflowID, "workflow-id", env("PACER_WORKFLOW_ID", "v1"), "scheduler workflow ID [PACER_WORKFLOW_ID]")
	fs.StringVar(&c.databaseURL, "database-url", env("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/pacer?sslmode=disable"), "Postgres URL; a password in it is never shown, but a flag is visible in ps: prefer DATABASE_URL [DATABASE_URL]")
	fs.StringVar(&c.publicDatabaseURL, "public-database-url", env("PACER_PUBLIC_DATABASE_URL", ""),
		"Postgres URL of the public API's read pool, for a role that may only read (pacer_public; docs/deploying.md); empty: DATABASE_URL. Read-only either way [PACER_PUBLIC_DATABASE_URL]")
	fs.StringVar(&c.teneroBaseURL, "tenero-base-url", env("TENERO_BASE_URL", "https://api.tenero.io"), "Tenero API base URL [TENERO_BASE_URL]")
	fs.StringVar(&c.teneroAPIKey, "tenero-api-key", env("TENERO_API_KEY", ""),
		"Tenero API key, sent as x-api-key; discouraged as a flag (any user sees it in ps): prefer TENERO_API_KEY or --tenero-api-key-file [TENERO_API_KEY]")
	fs.StringVar(&c.teneroKeyFile, "tenero-api-key-file", env("TENERO_API_KEY_FILE", ""), "file holding the Tenero API key [TENERO_API_KEY_FILE]")
	fs.StringVar(&c.hiroBaseURL, "hiro-base-url", env("HIRO_BASE_URL", "https://api.hiro.so"), "Hiro API base URL [HIRO_BASE_URL]")
	fs.StringVar(&c.hiroAPIKey, "hiro-api-key", env("HIRO_API_KEY", ""),
		"Hiro API key, sent as x-api-key; discouraged as a flag (any user sees it in ps): prefer HIRO_API_KEY or --hiro-api-key-file [HIRO_API_KEY]")
	fs.StringVar(&c.hiroKeyFile, "hiro-api-key-file", env("HIRO_API_KEY_FILE", ""), "file holding the Hiro API key [HIRO_API_KEY_FILE]")
	fs.BoolVar(&c.allowPlaintextKeys, flagAllowPlaintextKeys, c.envBool(envAllowPlaintextKeys),
		"send API keys over http:// to hosts that are not loopback (refused otherwise) ["+envAllowPlaintextKeys+"]")
	fs.IntVar(&c.hiroPerMinute, "hiro-per-minute", int(c.envInt("PACER_HIRO_PER_MINUTE", 0)), "Hiro requests per minute shared by all workers (0 = 45 without a key, 450 with one) [PACER_HIRO_PER_MINUTE]")
	fs.Int64Var(&c.competitionStart, "competition-start", c.envInt("COMPETITION_START", 1778700600), "unix seconds; swaps before it do not count [COMPETITION_START]")
	fs.DurationVar(&c.teneroEvery, "tenero-every", c.envDuration("PACER_TENERO_EVERY", 5*time.Minute), "base cadence of the tenero task [PACER_TENERO_EVERY]")
	fs.StringVar(&c.registryURL, "registry-url", env("PACER_REGISTRY_URL", ""),
		"where the registry task reads the registered agents and their claims; empty: no registry task [PACER_REGISTRY_URL]")
	fs.DurationVar(&c.registryEvery, "registry-every", c.envDuration("PACER_REGISTRY_EVERY", 5*time.Minute),
		"how often the registry task reads PACER_REGISTRY_URL [PACER_REGISTRY_EVERY]")
	fs.DurationVar(&c.roundGrace, "round-grace", c.envDuration("PACER_ROUND_GRACE", round.DefaultGrace),
		"a round's grace after its end unless it gives its own: finalized once it has passed and completeThrough reached the end [PACER_ROUND_GRACE]")
	fs.Float64Var(&c.registryMaxDrop, "registry-max-drop", c.envFloat("PACER_REGISTRY_MAX_DROP", store.DefaultMaxDrop),
		"the share of the registered agents (0 to 1; 0 = the default) one registry read may deregister; a read that drops more, or lists nobody, is held until pacer registry confirm [PACER_REGISTRY_MAX_DROP]")
	fs.DurationVar(&c.sweepEvery, "sweep-every", c.envDuration("PACER_SWEEP_EVERY", time.Minute), "how often the sweep looks for agents that are due, at most [PACER_SWEEP_EVERY]")
	fs.StringVar(&c.sweepPolicy, "sweep-policy", env("PACER_SWEEP_POLICY", string(ingest.PolicyOptimal)), "how the sweep paces each agent's visits: optimal or tiers [PACER_SWEEP_POLICY]")
	fs.DurationVar(&c.hotEvery, "hot-every", c.envDuration("PACER_HOT_EVERY", ingest.DefaultHotEvery), "visit interval of hot agents (a swap in the last 24 h), the fastest any agent is visited [PACER_HOT_EVERY]")
	fs.DurationVar(&c.warmEvery, "warm-every", c.envDuration("PACER_WARM_EVERY", ingest.DefaultWarmEvery), "visit interval of warm agents (a swap in the last 7 days), under tiers [PACER_WARM_EVERY]")
	fs.DurationVar(&c.coldEvery, "cold-every", c.envDuration("PACER_COLD_EVERY", ingest.DefaultColdEvery), "visit interval of cold agents, under tiers [PACER_COLD_EVERY]")
	fs.DurationVar(&c.maxStaleness, "max-staleness", c.envDuration("PACER_MAX_STALENESS", ingest.DefaultMaxStaleness), "every agent is visited at least this often, whatever the policy [PACER_MAX_STALENESS]")
	fs.DurationVar(&c.reconcileEvery, "reconcile-every", c.envDuration("PACER_RECONCILE_EVERY", discovery.DefaultReconcileEvery), "how often the reconciler reads each allowlisted contract's own list for what the tail missed (with --discovery agents and push on: the shortest interval between an agent's scheduled visits), and how often a pending transaction is looked at again; at most max-staleness [PACER_RECONCILE_EVERY]")
	fs.StringVar(&c.discoveryMode, "discovery", env("PACER_DISCOVERY", string(discovery.ModeTail)), "how the sweep finds swaps: tail (read the chain once for every agent) or agents (visit each agent) [PACER_DISCOVERY]")
	fs.StringVar(&c.pushMode, "push", env("PACER_PUSH", string(push.ModeWS)), "how new swaps are pushed to pacer: ws (Hiro's WebSocket at HIRO_BASE_URL/extended/v1/ws, held by one worker; the tail slows to reconcile-every while it delivers) or off [PACER_PUSH]")
	fs.DurationVar(&c.tailEvery, "tail-every", c.envDuration("PACER_TAIL_EVERY", discovery.DefaultTailEvery), "how often the tail reads the chain's newest contract calls; stretched when the Hiro budget binds [PACER_TAIL_EVERY]")
	fs.IntVar(&c.tailMaxPages, "tail-max-pages", int(c.envInt("PACER_TAIL_MAX_PAGES", discovery.DefaultMaxPages)), "the most pages one tail read goes back; a tail further behind reports the gap and leaves it to the reconciler [PACER_TAIL_MAX_PAGES]")
	fs.IntVar(&c.fastPathPerMinute, "fastpath-per-minute", int(c.envInt("PACER_FASTPATH_PER_MINUTE", 30)), "fast-path requests a minute per client address (0 = 30) [PACER_FASTPATH_PER_MINUTE]")
	fs.StringVar(&c.chainhookSecret, "chainhook-secret", env("PACER_CHAINHOOK_SECRET", ""),
		"the Chainhooks consumer secret(s) of POST /api/chainhook (sent as x-chainhook-consumer-secret or Authorization: Bearer), comma-separated while a rotation rolls over; empty turns it off; discouraged as a flag (any user sees it in ps): prefer PACER_CHAINHOOK_SECRET [PACER_CHAINHOOK_SECRET]")
	fs.BoolVar(&c.chainhookManage, "chainhook-manage", c.envBool("PACER_CHAINHOOK_MANAGE"),
		"keep pacer's hook on Hiro's Chainhooks platform with the chainhook task (create, update, re-enable, replay missed blocks) [PACER_CHAINHOOK_MANAGE]")
	fs.DurationVar(&c.chainhookEvery, "chainhook-every", c.envDuration("PACER_CHAINHOOK_EVERY", 2*time.Minute),
		"how often the chainhook task looks at the hook, with chainhook-manage [PACER_CHAINHOOK_EVERY]")
	fs.BoolVar(&c.webhookAllowPrivate, "webhook-allow-private", c.envBool("PACER_WEBHOOK_ALLOW_PRIVATE"),
		"let webhooks reach loopback, private and link-local addresses (development only) [PACER_WEBHOOK_ALLOW_PRIVATE]")
	fs.StringVar(&c.operatorTokensRaw, "operator-token", env("PACER_OPERATOR_TOKEN", ""),
		"bearer token(s) of the operator listener, TOKEN or NAME:TOKEN,NAME2:TOKEN2; empty leaves it open to whoever reaches its address; prefer the variable [PACER_OPERATOR_TOKEN]")
	fs.StringVar(&c.trustedProxiesRaw, "trusted-proxies", env("PACER_TRUSTED_PROXIES", ""),
		"CIDRs of the reverse proxies whose X-Forwarded-For names the client [PACER_TRUSTED_PROXIES]")
	fs.StringVar(&c.corsOriginsRaw, "cors-origins", env("PACER_CORS_ORIGINS", ""),
		"comma-separated origins (https://example.com) whose browsers may read the public API; never the operator listener [PACER_CORS_ORIGINS]")
	fs.StringVar(&c.adminHostsRaw, "admin-hosts", env("PACER_ADMIN_HOSTS", ""),
		"host names the operator listener answers besides loopback ones and its address's (a tunnel's or proxy's name); any other Host is refused [PACER_ADMIN_HOSTS]")
	fs.StringVar(&c.schedulesJSON, "schedules", env("PACER_SCHEDULES", ""),
		`task schedules applied when the scheduler first starts, a JSON object of task → schedule, e.g. {"rollup":{"cron":"5 * * * *","catchup":"backfill"}} [PACER_SCHEDULES]`)
	fs.StringVar(&c.logLevel, "log-level", env("PACER_LOG_LEVEL", "info"), "debug, info, warn or error [PACER_LOG_LEVEL]")
	fs.StringVar(&c.logFormat, "log-format", env("PACER_LOG_FORMAT", "json"), "json or console [PACER_LOG_FORMAT]")
	c.rollups.bind(fs)
	c.hook.bind(c, fs)
	c.operating.bind(c, fs)
	// A default --help shows must never be a secret (SPEC §2): keys are
	// blanked (hideSecretDefaults), a database password is masked.
	fs.Lookup("database-url").DefValue = redactDatabaseURL(c.databaseURL)
	fs.Lookup("public-database-url").DefValue = redactDatabaseURL(c.publicDatabaseURL)
	if v := os.Getenv("TEMPORAL_ADDRESS"); v != "" {
		c.temporalAddress = v
	}
	if v := os.Getenv("TEMPORAL_NAMESPACE"); v != "" {
		c.namespace = v
	}
}

func (c *config) validate() error {
	if len(c.envErrs) > 0 {
		return &UsageError{Err: errors.Join(c.envErrs...)}
	}
	if err := c.rollups.validate(); err != nil {
		return err
	}
	if err := c.operating.validate(); err != nil {
		return err
	}
	if err := c.scheduler().Config.Validate(); err != nil {
		return &UsageError{Err: err}
	}
	if _, err := c.ingest(); err != nil {
		return &UsageError{Err: err}
	}
	if c.roundGrace < 0 {
		return usagef("PACER_ROUND_GRACE (--round-grace) %s is negative", c.roundGrace)
	}
	if _, err := c.discovery(); err != nil {
		return &UsageError{Err: err}
	}
	if err := c.hook.validate(c.chainhookSecret, c.chainhookManage); err != nil {
		return err
	}
	var err error
	if c.operatorTokens, err = api.ParseOperatorTokens(c.operatorTokensRaw); err != nil {
		return &UsageError{Err: err}
	}
	if c.trustedProxies, err = api.ParseTrustedProxies(c.trustedProxiesRaw); err != nil {
		return usagef("PACER_TRUSTED_PROXIES (--trusted-proxies): %v", err)
	}
	if c.corsOrigins, err = api.ParseCORSOrigins(c.corsOriginsRaw); err != nil {
		return usagef("PACER_CORS_ORIGINS (--cors-origins): %v", err)
	}
	if c.adminHosts, err = api.ParseAdminHosts(c.adminHostsRaw); err != nil {
		return usagef("PACER_ADMIN_HOSTS (--admin-hosts): %v", err)
	}
	if c.fastPathPerMinute < 0 {
		return usagef("fastpath-per-minute must not be negative (got %d)", c.fastPathPerMinute)
	}
	if err := c.parseSchedules(); err != nil {
		return err
	}
	if c.chainhookManage && (c.chainhookEvery < workflows.MinEvery || c.chainhookEvery > workflows.MaxEvery) {
		return usagef("PACER_CHAINHOOK_EVERY (--chainhook-every) %s: want %s to %s", c.chainhookEvery, workflows.MinEvery, workflows.MaxEvery)
	}
	if !(c.registryMaxDrop >= 0 && c.registryMaxDrop <= 1) {
		return usagef("registry-max-drop must be from 0 to 1 (got %v)", c.registryMaxDrop)
	}
	if c.registryURL != "" {
		if u, err := url.Parse(c.registryURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return usagef("PACER_REGISTRY_URL (--registry-url) must be an http:// or https:// URL")
		}
	}
	for name, u := range map[string]string{"tenero-base-url": c.teneroBaseURL, "hiro-base-url": c.hiroBaseURL} {
		if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
			return usagef("--%s %q must start with http:// or https://", name, u)
		}
	}
	return nil
}

// ingest is the sweep's visit policy from the flags.
func (c *config) ingest() (ingest.Config, error) {
	policy := ingest.Policy("")
	if c.sweepPolicy != "" {
		p, err := ingest.ParsePolicy(c.sweepPolicy)
		if err != nil {
			return ingest.Config{}, err
		}
		policy = p
	}
	cfg := ingest.Config{Policy: policy, HotEvery: c.hotEvery, WarmEvery: c.warmEvery,
		ColdEvery: c.coldEvery, MaxStaleness: c.maxStaleness}.WithDefaults()
	if c.chainhookSecret != "" {
		// Chainhooks deliver only matching transactions, so silence says
		// nothing about push's health: the floor holds while it is on.
		cfg.ReconcileEvery = c.reconcileEvery
	}
	return cfg, cfg.Validate()
}

// discovery is how the sweep finds swaps, from the flags. A run lingers
// reading the tail for as long as the workflow leaves between runs.
func (c *config) discovery() (discovery.Config, error) {
	mode, err := discovery.ParseMode(c.discoveryMode)
	if err != nil {
		return discovery.Config{}, err
	}
	// Zero is the default (a config built without its flags); a value
	// given must make sense.
	switch {
	case c.tailEvery != 0 && c.tailEvery < time.Second:
		return discovery.Config{}, fmt.Errorf("tail-every %s is below 1s", c.tailEvery)
	case c.tailMaxPages < 0:
		return discovery.Config{}, fmt.Errorf("tail-max-pages %d must be at least 1", c.tailMaxPages)
	case c.reconcileEvery != 0 && c.reconcileEvery < time.Second:
		return discovery.Config{}, fmt.Errorf("reconcile-every %s is below 1s", c.reconcileEvery)
	}
	pm, err := push.ParseMode(c.pushMode)
	if err != nil {
		return discovery.Config{}, err
	}
	d := discovery.Config{Mode: mode, TailEvery: c.tailEvery, ReconcileEvery: c.reconcileEvery,
		MaxPages: c.tailMaxPages, Push: pm == push.ModeWS}.WithDefaults()
	d.Linger = min(max(0, c.sweepEvery-d.TailEvery/2), maxLinger)
	return d, nil
}

// maxLinger bounds one sweep run's tail reading, well inside the
// activity's heartbeat timeout.
const maxLinger = 90 * time.Second

func newRoot() *cobra.Command {
	c := &config{}
	root := &cobra.Command{
		Use:   "pacer",
		Short: "Keeps rate-limited upstream data fresh through one durable scheduler on Temporal",
		Long: `pacer keeps rate-limited upstream data fresh through one durable,
single-writer scheduler workflow on Temporal, paced to the upstreams' minute
and month budgets. For an AI-agent trading competition on Stacks it keeps USD
token prices (Tenero) and the ledger of registered agents' swaps (found on
chain through Hiro) exact in Postgres, rolls them up hourly and daily,
delivers the rollups to webhook subscribers and serves the competition's
leaderboard, trades and prices.

Run everything locally with "pacer dev"; in production run "pacer worker"
(and "pacer serve" to scale the API apart). The other commands operate a
running scheduler: status, pause, resume, refresh, stop, start, reconfigure.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(*cobra.Command, []string) error {
			return c.validate()
		},
	}
	c.bind(root.PersistentFlags())
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &UsageError{Err: err} })
	root.AddCommand(
		newWorkerCmd(c), newServeCmd(c), newDevCmd(c), newSimCmd(c),
		newStatusCmd(c), newRefreshCmd(c), newPauseCmd(c), newResumeCmd(c), newTuneCmd(c),
		newStartCmd(c), newStopCmd(c), newReconfigureCmd(c),
		newMigrateCmd(c), newPricesCmd(c), newScheduleCmd(c), newSubscribersCmd(c), newDeliveriesCmd(c), newAgentsCmd(c), newClaimsCmd(c), newRegistryCmd(c),
		newChainhookCmd(c), newRoundsCmd(c), newAuditCmd(c), newDeployCmd(c), newVersionCmd(c), newDocsCmd(),
	)
	hideSecretDefaults(root)
	return root
}

// exactArgs and friends turn cobra's argument checks into usage errors.
func wrapArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := check(cmd, args); err != nil {
			return &UsageError{Err: err}
		}
		return nil
	}
}
