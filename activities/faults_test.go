package activities_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/activities"
	"github.com/pacer-dev/pacer/internal/budget"
	"github.com/pacer-dev/pacer/internal/catalog"
	"github.com/pacer-dev/pacer/internal/competition"
	"github.com/pacer-dev/pacer/internal/discovery"
	"github.com/pacer-dev/pacer/internal/fault"
	"github.com/pacer-dev/pacer/internal/hiro"
	"github.com/pacer-dev/pacer/internal/ingest"
	"github.com/pacer-dev/pacer/internal/sim"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/internal/tenero"
	"github.com/pacer-dev/pacer/internal/testenv"
)

// Fault injection through the real activities: every fault the simulator
// can inject, on each upstream, then the database going away, with
// Postgres, the clients and the verify path all real. After each fault: no
// swap is lost, duplicated or altered, no price is corrupted, and the next
// run is healthy once the fault clears.

// faultAt is the instant the simulated world stands still at: prices and the
// ledger to expect cannot move under a test.
var faultAt = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

// hiroHuge is just past what the Hiro client reads of one answer.
const hiroHuge = 4<<20 + 4<<10

// Every sweep here must finish well within the activities' 5 s heartbeat
// period: a sweep that heartbeats while it counts a rejection races on the
// result's rejectionReasons map (a defect of activities/sweep.go, reported
// in docs/reliability.md), which the race detector would pin on these tests.
// Hence 10 agents, bodies just past the limit and short attempt timeouts.

// faultAttemptTimeout keeps the timeout faults cheap: each attempt of a slow
// answer costs this long, instead of the production 8 s. Only runs under a
// fault use it; the healthy runs after keep the production timeout, so a
// slow machine cannot fail them.
const faultAttemptTimeout = 100 * time.Millisecond

type faultStack struct {
	st  *store.Store
	sim *sim.Server
	// acts has the production timeouts, faulty the short ones.
	acts, faulty *activities.Activities
	proxy        *testenv.PGProxy
	// beforeUpstream, when set, runs before the simulator answers a request.
	beforeUpstream atomic.Pointer[func(*http.Request)]
}

// newFaultStack wires the activities the way activities.New does, over a
// frozen simulated world of 10 agents (as world changes it) seeded into
// Postgres, with short attempt timeouts and no waiting between in-call
// retries. Postgres is reached through a proxy that a test can cut.
func newFaultStack(t *testing.T, world ...func(*sim.HiroConfig)) *faultStack {
	t.Helper()
	ctx := context.Background()
	f := &faultStack{}
	direct := testenv.PostgresURL(t)
	f.proxy = testenv.StartPGProxy(t, direct)
	var err error
	f.st, err = store.Open(ctx, f.proxy.URL)
	require.NoError(t, err)
	t.Cleanup(f.st.Close)
	require.NoError(t, f.st.Migrate(ctx))

	unlimited := sim.Limits{PerMinute: 1 << 30, PerMonth: 1 << 30}
	hc := sim.HiroConfig{Origin: faultAt, Agents: 10, Anonymous: unlimited}
	for _, change := range world {
		change(&hc)
	}
	f.sim = sim.New(sim.Config{Seed: 11, Now: func() time.Time { return faultAt },
		// A slow answer is held until the client gives up on it.
		Sleep:  func(ctx context.Context, _ time.Duration) error { <-ctx.Done(); return ctx.Err() },
		Tenero: sim.TeneroConfig{Anonymous: unlimited},
		Hiro:   hc})
	require.NoError(t, f.sim.World().Seed(ctx, f.st))
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if before := f.beforeUpstream.Load(); before != nil {
			(*before)(r)
		}
		f.sim.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)

	log := zaptest.NewLogger(t, zaptest.Level(zap.ErrorLevel))
	f.acts = newActivities(f.st, hs.URL, log, 0)
	// The faulty runs keep a budget of their own: what it learns from a
	// 429 storm (wait a minute) must not hold up the healthy runs after.
	f.faulty = wireActivities(f.st, "hiro-faults", hs.URL, log, faultAttemptTimeout, budget.Config{PerMinute: 1 << 20}, activities.SweepMaxWait)
	return f
}

// dueNow makes every agent due, as time passing would: the next run visits
// them all again.
func (f *faultStack) dueNow(t *testing.T) {
	t.Helper()
	_, err := f.st.Pool().Exec(context.Background(), `update agent_ingest set next_run_at = now()`)
	require.NoError(t, err)
}

// newActivities wires the activities as activities.New does, with no
// waiting between in-call retries and the given attempt timeout (0: the
// clients' default), on a Hiro budget out of reach.
func newActivities(st *store.Store, baseURL string, log *zap.Logger, attemptTimeout time.Duration) *activities.Activities {
	return wireActivities(st, store.UpstreamHiro, baseURL, log, attemptTimeout, budget.Config{PerMinute: 1 << 20}, activities.SweepMaxWait)
}

// wireActivities is newActivities on the Hiro budget named upstream, of
// bc, whose sweep lane waits at most sweepWait.
func wireActivities(st *store.Store, upstream, baseURL string, log *zap.Logger, attemptTimeout time.Duration, bc budget.Config, sweepWait time.Duration) *activities.Activities {
	cat := catalog.Default()
	shared := st.SharedBudget(upstream, bc)
	client := func(lane budget.Lane, wait time.Duration) *hiro.Client {
		return hiro.New(hiro.Config{BaseURL: baseURL, Logger: log, Sleep: noSleep, AttemptTimeout: attemptTimeout,
			Limiter: shared.Limiter(lane, wait)})
	}
	verifier := func(h *hiro.Client) *competition.Verifier {
		return &competition.Verifier{Ledger: st, Txs: h, Allowlist: cat, CompetitionStart: sim.DefaultCompetitionStart}
	}
	h := client(budget.LaneSweep, sweepWait)
	manual := client(budget.LaneManual, sweepWait)
	return &activities.Activities{
		Store:          st,
		Catalog:        cat,
		Logger:         log,
		Tenero:         tenero.New(tenero.Config{BaseURL: baseURL, Logger: log, Sleep: noSleep, AttemptTimeout: attemptTimeout}),
		Hiro:           h,
		Verifier:       verifier(h),
		FastVerifier:   verifier(client(budget.LaneFast, 0)),
		ManualHiro:     manual,
		ManualVerifier: verifier(manual),
		Ingest:         ingest.DefaultConfig(),
		Discovery:      discovery.Config{Mode: "agents"}, // per-agent visits, as these tests were written for
		Budget:         shared,
	}
}

// runActivity runs one activity as a worker would and returns its result,
// from the error's details when the run failed as a whole.
func runActivity[R any](t *testing.T, acts *activities.Activities, fn any, in any) (R, error) {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(acts)
	var res R
	v, err := env.ExecuteActivity(fn, in)
	if err != nil {
		var appErr *temporal.ApplicationError
		require.True(t, errors.As(err, &appErr), "want an application error, got %v", err)
		require.NoError(t, appErr.Details(&res))
		return res, err
	}
	require.NoError(t, v.Get(&res))
	return res, nil
}

func runTenero(t *testing.T, acts *activities.Activities) (pacer.TeneroResult, error) {
	t.Helper()
	return runActivity[pacer.TeneroResult](t, acts, acts.RefreshTenero, pacer.TeneroInput{})
}

func runSweep(t *testing.T, acts *activities.Activities) (pacer.SweepResult, error) {
	t.Helper()
	return runActivity[pacer.SweepResult](t, acts, acts.Sweep, pacer.SweepInput{})
}

func (f *faultStack) setFaults(t *testing.T, faults sim.Faults) {
	t.Helper()
	require.NoError(t, f.sim.SetFaults(faults))
}

// requireTruePrices checks every stored price against what the simulated
// Tenero says (or 1 for a peg): a fault may leave a price stale, never wrong.
func (f *faultStack) requireTruePrices(t *testing.T) []store.Price {
	t.Helper()
	cat := catalog.Default()
	all, err := f.st.AllPrices(context.Background())
	require.NoError(t, err)
	require.Len(t, all, len(cat.TokenSet(nil)))
	for i, p := range all {
		// checked_at is when the token was last asked about, which every
		// answered request moves (pegs included): not part of the price.
		all[i].CheckedAt = nil
		require.NotNil(t, p.PriceUSD, "%s lost its price", p.TokenID)
		if _, peg := cat.Peg(p.TokenID); peg {
			require.Equal(t, "1", *p.PriceUSD)
			continue
		}
		want, ok := f.sim.PriceAt(tenero.Address(p.TokenID), faultAt)
		require.True(t, ok)
		require.Equal(t, want, *p.PriceUSD, "%s holds a corrupted price", p.TokenID)
	}
	return all
}

// requireLedger checks the swaps table against the world: every row is one
// of the world's swaps, exactly as expected, and with complete it holds all
// of them. The primary key already forbids a duplicate txid.
func (f *faultStack) requireLedger(t *testing.T, complete bool) int {
	t.Helper()
	got, err := f.st.Swaps(context.Background())
	require.NoError(t, err)
	want := map[string]competition.Swap{}
	for _, sw := range f.sim.World().ExpectedSwaps(faultAt) {
		want[sw.TxID] = sw
	}
	for _, sw := range got {
		exp, ok := want[sw.TxID]
		require.True(t, ok, "swap %s is not one of the world's", sw.TxID)
		requireSameSwap(t, exp, sw)
	}
	if complete {
		require.Len(t, got, len(want), "swaps are missing")
	}
	return len(got)
}

func requireSameSwap(t *testing.T, want, got competition.Swap) {
	t.Helper()
	var wantRaw, gotRaw any
	require.NoError(t, json.Unmarshal(want.RawEventJSON, &wantRaw))
	require.NoError(t, json.Unmarshal(got.RawEventJSON, &gotRaw))
	require.Equal(t, wantRaw, gotRaw, want.TxID)
	want.RawEventJSON, got.RawEventJSON = nil, nil
	require.Equal(t, want, got)
}

// tenero faults: each one on Tenero's path only, for a whole run.
var teneroFaults = []struct {
	name      string
	faults    sim.Faults
	wantClass pacer.ErrorClass // of the run as a whole; "" when it ends without one
}{
	{name: "429 storm", faults: sim.Faults{TooManyRequests: 1}, wantClass: pacer.ClassRateLimit},
	{name: "5xx", faults: sim.Faults{ServerError: 1}, wantClass: pacer.ClassServerError},
	{name: "timeouts", faults: sim.Faults{Slow: 1}, wantClass: pacer.ClassTimeout},
	{name: "truncated JSON", faults: sim.Faults{Truncated: 1}},
	{name: "wrong-typed JSON", faults: sim.Faults{WrongType: 1}},
	{name: "huge bodies", faults: sim.Faults{Huge: 1}},
	{name: "mixed storm", faults: sim.Faults{TooManyRequests: 0.2, ServerError: 0.2, Slow: 0.1, Truncated: 0.2, WrongType: 0.2, Huge: 0.2}},
}

func TestTeneroFaultsCorruptNothingAndClear(t *testing.T) {
	t.Parallel()
	f := newFaultStack(t)
	res, err := runTenero(t, f.acts)
	require.NoError(t, err)
	baseline := f.requireTruePrices(t)
	teneroTokens := res.TokensAttempted - res.Pegged

	for _, tt := range teneroFaults {
		t.Run(tt.name, func(t *testing.T) {
			tt.faults.PathPrefix = "/v1/"
			f.setFaults(t, tt.faults)
			res, err := runTenero(t, f.faulty)
			if tt.wantClass != "" {
				require.Error(t, err)
				require.Equal(t, string(tt.wantClass), errType(err))
				require.False(t, isRetryable(err), "upstream trouble waits for the next tick")
				require.Equal(t, tt.wantClass, res.ErrorClass)
				require.Zero(t, res.Written)
			}
			if tt.wantClass == pacer.ClassRateLimit {
				require.True(t, res.RateLimited)
				require.Equal(t, fault.MinuteQuotaBackoff.Milliseconds(), res.RateLimitBackoffMs)
			}
			if tt.faults.TooManyRequests+tt.faults.ServerError+tt.faults.Slow == 0 {
				// A broken body is an item problem: each token fails alone.
				require.Equal(t, teneroTokens, res.Failed)
			}
			require.Equal(t, baseline, f.requireTruePrices(t), "a faulted run changed a stored price")

			f.setFaults(t, sim.Faults{})
			res, err = runTenero(t, f.acts)
			require.NoError(t, err, "the run after the fault is healthy")
			require.Zero(t, res.Failed)
			require.Equal(t, res.TokensAttempted, res.Succeeded)
			require.Equal(t, baseline, f.requireTruePrices(t))
		})
	}
}

// sweep faults: on the whole Hiro API, or on the transaction lookups alone
// so that swaps are found but cannot be verified.
var sweepFaults = []struct {
	name   string
	faults sim.Faults
	// target narrows the faults to one agent's listing ("agent") or one
	// swap's lookup ("tx"): the costly faults stay cheap that way.
	target string
	// wantClass is the class of the run as a whole, "" when the run goes
	// on past failing agents.
	wantClass pacer.ErrorClass
	// partial faults let some swaps through.
	partial bool
	// refused: Hiro's 429s end the run early, the agents left due.
	refused bool
}{
	{name: "429 storm", faults: sim.Faults{PathPrefix: "/extended/", TooManyRequests: 1}, wantClass: pacer.ClassRateLimit, refused: true},
	// Not one agent can be listed: every visit fails, and the run as a
	// whole is reported failed with the listings' class.
	{name: "5xx", faults: sim.Faults{PathPrefix: "/extended/", ServerError: 1}, wantClass: pacer.ClassServerError},
	{name: "truncated JSON", faults: sim.Faults{PathPrefix: "/extended/", Truncated: 1}, wantClass: pacer.ClassParseError},
	{name: "wrong-typed JSON", faults: sim.Faults{PathPrefix: "/extended/", WrongType: 1}, wantClass: pacer.ClassParseError},
	{name: "tx lookups 429", faults: sim.Faults{PathPrefix: "/extended/v1/tx/", TooManyRequests: 1}, refused: true},
	{name: "tx lookups 5xx", faults: sim.Faults{PathPrefix: "/extended/v1/tx/", ServerError: 1}},
	{name: "tx lookups truncated", faults: sim.Faults{PathPrefix: "/extended/v1/tx/", Truncated: 1}},
	{name: "tx lookups wrong-typed", faults: sim.Faults{PathPrefix: "/extended/v1/tx/", WrongType: 1}},
	{name: "listing timeouts", faults: sim.Faults{Slow: 1}, target: "agent", partial: true},
	{name: "listing huge", faults: sim.Faults{Huge: 1, HugeBytes: hiroHuge}, target: "agent", partial: true},
	{name: "tx lookup timeouts", faults: sim.Faults{Slow: 1}, target: "tx", partial: true},
	{name: "tx lookup huge", faults: sim.Faults{Huge: 1, HugeBytes: hiroHuge}, target: "tx", partial: true},
	{name: "mixed storm", faults: sim.Faults{PathPrefix: "/extended/", TooManyRequests: 0.05, ServerError: 0.2,
		Slow: 0.02, Truncated: 0.15, WrongType: 0.15, Huge: 0.02, HugeBytes: hiroHuge}, partial: true},
}

// target picks the swaps a targeted fault hides: all of the agent with
// the most swaps, or one swap, and the path prefix that reaches them.
func (f *faultStack) target(t *testing.T, kind string) (prefix string, hidden []string) {
	t.Helper()
	swaps := f.sim.World().ExpectedSwaps(faultAt)
	require.NotEmpty(t, swaps)
	if kind == "tx" {
		return "/extended/v1/tx/" + swaps[0].TxID, []string{swaps[0].TxID}
	}
	bySender := map[string][]string{}
	best := ""
	for _, sw := range swaps {
		bySender[sw.Sender] = append(bySender[sw.Sender], sw.TxID)
		if best == "" || len(bySender[sw.Sender]) > len(bySender[best]) {
			best = sw.Sender
		}
	}
	return "/extended/v3/principals/" + best + "/", bySender[best]
}

// sweepUntilDone runs healthy sweeps, every agent made due before each,
// until the ledger holds the world, and at least one: a run under faults
// can write every swap (one batched detail request that got through) while
// an agent whose listing failed has not read its other calls, and only a
// healthy visit moves its cursor past them. It returns what they inserted.
func (f *faultStack) sweepUntilDone(t *testing.T, acts *activities.Activities) (inserted int) {
	t.Helper()
	want := len(f.sim.World().ExpectedSwaps(faultAt))
	for pass := 0; pass < 5 && (pass == 0 || f.requireLedger(t, false) < want); pass++ {
		f.dueNow(t)
		res, err := runSweep(t, acts)
		require.NoError(t, err, "a healthy run")
		require.Zero(t, res.HiroErrors)
		inserted += res.Inserted
	}
	f.requireLedger(t, true)
	return inserted
}

func TestSweepFaultsLoseAndDuplicateNothing(t *testing.T) {
	t.Parallel()
	for _, tt := range sweepFaults {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFaultStack(t)
			var hidden []string
			if tt.target != "" {
				tt.faults.PathPrefix, hidden = f.target(t, tt.target)
			}
			if tt.target == "tx" {
				tt.faults.PathPrefix, tt.faults.TxID = "/extended/", hidden[0]
			}
			if tt.target == "tx" {
				// The fault breaks the requests naming one transaction; a
				// batch naming it and others would be read in halves, the
				// others through requests the fault does not reach.
				// Batches under faults: internal/hiro and
				// internal/competition.
				f.faulty.Verifier = oneByOne(f.faulty.Verifier)
			}
			f.setFaults(t, tt.faults)
			res, err := runSweep(t, f.faulty)
			for _, txid := range hidden {
				_, found, lookupErr := f.st.Swap(context.Background(), txid)
				require.NoError(t, lookupErr)
				require.False(t, found, "%s was written although its answer was broken", txid)
			}
			if tt.wantClass != "" {
				require.Error(t, err)
				require.Equal(t, string(tt.wantClass), errType(err))
				require.False(t, isRetryable(err), "upstream trouble waits for the next tick")
				require.Zero(t, res.Scanned)
			} else {
				require.NoError(t, err, "the run goes on past failing agents")
			}
			if tt.wantClass == pacer.ClassRateLimit {
				require.True(t, res.RateLimited)
				require.Positive(t, res.RateLimitBackoffMs)
				require.LessOrEqual(t, res.RateLimitBackoffMs, fault.MinuteQuotaBackoff.Milliseconds(),
					"the task waits for the window Hiro named, not longer")
			} else if tt.wantClass != "" {
				require.Equal(t, len(f.sim.World().Agents()), res.HiroErrors, "every agent was tried")
			}
			if tt.refused {
				require.Positive(t, res.AgentsDue, "the agents not visited stay due")
				require.NotNil(t, res.NextDueAt)
				// (Run.Rejected, the 429 count, shares its JSON name with
				// the sweep's own rejected count and does not survive the
				// payload; UpstreamFailed carries the refusals.)
				require.Positive(t, res.UpstreamFailed)
			}
			require.Equal(t, res.Inserted, f.requireLedger(t, false), "every row written was counted")
			if !tt.partial {
				require.Zero(t, res.Inserted, "nothing verifies while Hiro is broken")
			}
			if tt.faults.PathPrefix == "/extended/v1/tx/" && !tt.refused {
				// Found, but not verifiable now: a fetch failure ends the
				// agent's visit, which goes on from there next time.
				require.Positive(t, res.Found)
				require.Positive(t, res.RejectionReasons[string(competition.ReasonTxFetchFailed)])
				require.Equal(t, res.Found, res.Rejected+res.Pending)
			}

			f.setFaults(t, sim.Faults{})
			inserted := res.Inserted
			require.Equal(t, len(f.sim.World().ExpectedSwaps(faultAt)), inserted+f.sweepUntilDone(t, f.acts),
				"each swap inserted once: under the fault or after it")

			// Once more: the cursors hold, nothing new is found and no
			// known swap is asked about again.
			f.dueNow(t)
			f.sim.ResetStats()
			res, err = runSweep(t, f.acts)
			require.NoError(t, err)
			require.Zero(t, res.Inserted)
			require.Equal(t, res.Pending, res.Found, "only what is still in the mempool is found again")
			require.LessOrEqual(t, f.sim.Stats().Routes[sim.HiroTxRoute].Total+f.sim.Stats().Routes[sim.HiroTxMultipleRoute].Total, 3*f.pendingCount(t),
				"only the pending transactions are looked up again (each at most 3 attempts)")
			f.requireLedger(t, true)
		})
	}
}

// oneByOne is v reading each transaction with its own request.
func oneByOne(v *competition.Verifier) *competition.Verifier {
	c := *v
	c.Txs = singleTxs{v.Txs}
	return &c
}

// singleTxs hides a source's batches.
type singleTxs struct{ src competition.TxSource }

func (s singleTxs) Tx(ctx context.Context, txid string) (hiro.Tx, error) { return s.src.Tx(ctx, txid) }

// pendingCount is how many transactions pending_txs holds.
func (f *faultStack) pendingCount(t *testing.T) int {
	t.Helper()
	var n int
	require.NoError(t, f.st.Pool().QueryRow(context.Background(), `select count(*) from pending_txs`).Scan(&n))
	return n
}

// TestPartialFaultsKeepEveryRowExact sweeps through a storm of mixed faults
// until the ledger is complete: rows arrive over several passes, each one
// exactly the world's, none twice.
func TestPartialFaultsKeepEveryRowExact(t *testing.T) {
	t.Parallel()
	f := newFaultStack(t)
	f.setFaults(t, sim.Faults{PathPrefix: "/extended/", ServerError: 0.3, Truncated: 0.2, WrongType: 0.2})
	want := len(f.sim.World().ExpectedSwaps(faultAt))
	passes, inserted := 0, 0
	for ; passes < 40 && f.requireLedger(t, false) < want; passes++ {
		f.dueNow(t)
		res, _ := runSweep(t, f.faulty) // a pass may fail as a whole: every listing broken
		inserted += res.Inserted
	}
	require.Equal(t, want, f.requireLedger(t, false), "the ledger filled up within %d passes", passes)
	require.Equal(t, want, inserted, "each swap was inserted exactly once")
	// The storm hit: Hiro answered with server errors (the bodies it cut
	// or mistyped answer 200). Whether they leave anything for a second
	// pass is chance: the client's retries and the batches' order can
	// settle everything in one (it did, once, in CI).
	failed := 0
	for _, rs := range f.sim.Stats().Routes {
		for status, n := range rs.ByStatus {
			if status >= 500 {
				failed += n
			}
		}
	}
	require.Positive(t, failed, "the storm did hit")
	f.requireLedger(t, true)
	t.Logf("figures: ledger complete after %d passes through a 70%% fault storm (%d server errors)", passes, failed)
}

// TestDatabaseLossIsTransportAndRecovers cuts every connection to Postgres
// and refuses new ones, as a crash or failover of the database would,
// before a run and in the middle of one, then lets it back.
func TestDatabaseLossIsTransportAndRecovers(t *testing.T) {
	t.Parallel()
	f := newFaultStack(t)
	_, err := runTenero(t, f.acts)
	require.NoError(t, err)

	t.Run("tenero, database down", func(t *testing.T) {
		f.proxy.Cut()
		res, err := runTenero(t, f.acts)
		require.Error(t, err)
		require.Equal(t, string(pacer.ClassTransport), errType(err))
		require.True(t, isRetryable(err), "transport trouble is worth Temporal's retries")
		require.Equal(t, pacer.ClassTransport, res.ErrorClass)
		f.proxy.Restore()
		_, err = runTenero(t, f.acts)
		require.NoError(t, err, "the same pool reconnects")
		f.requireTruePrices(t)
	})

	t.Run("sweep, database down", func(t *testing.T) {
		f.proxy.Cut()
		_, err := runSweep(t, f.acts)
		require.Error(t, err)
		require.Equal(t, string(pacer.ClassTransport), errType(err))
		require.True(t, isRetryable(err))
		f.proxy.Restore()
	})

	t.Run("sweep, database lost mid-page", func(t *testing.T) {
		// The second transaction lookup finds the database gone: its insert
		// fails, and the walk stops with the cursor where it was.
		var lookups atomic.Int32
		cut := func(r *http.Request) {
			if strings.HasPrefix(r.URL.Path, "/extended/v1/tx/") && lookups.Add(1) == 2 {
				f.proxy.Cut()
			}
		}
		f.beforeUpstream.Store(&cut)
		res, err := runSweep(t, f.acts)
		f.beforeUpstream.Store(nil)
		require.Error(t, err)
		require.Equal(t, string(pacer.ClassTransport), errType(err))
		require.True(t, isRetryable(err))
		// The budget lives in Postgres too: the loss shows at the next
		// request or at the ledger, whichever comes first.
		require.Positive(t, res.RejectionReasons[string(competition.ReasonDBUnavailable)]+
			res.RejectionReasons[string(competition.ReasonTxFetchFailed)])
		f.proxy.Restore()

		before := f.requireLedger(t, false)
		require.Equal(t, len(f.sim.World().ExpectedSwaps(faultAt))-before, f.sweepUntilDone(t, f.acts),
			"what was written before the loss is not written again")
	})
}
