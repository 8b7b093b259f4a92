package activities_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
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
	"github.com/pacer-dev/pacer/internal/catalog"
	"github.com/pacer-dev/pacer/internal/competition"
	"github.com/pacer-dev/pacer/internal/hiro"
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
// in RELIABILITY.md), which the race detector would pin on these tests.
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
	proxy        *pgProxy
	// beforeUpstream, when set, runs before the simulator answers a request.
	beforeUpstream atomic.Pointer[func(*http.Request)]
}

// newFaultStack wires the activities the way activities.New does, over a
// frozen simulated world of 10 agents seeded into Postgres, with short
// attempt timeouts and no waiting between in-call retries. Postgres is
// reached through a proxy that a test can cut.
func newFaultStack(t *testing.T) *faultStack {
	t.Helper()
	ctx := context.Background()
	f := &faultStack{}
	direct := testenv.PostgresURL(t)
	f.proxy = startPGProxy(t, direct)
	var err error
	f.st, err = store.Open(ctx, f.proxy.url)
	require.NoError(t, err)
	t.Cleanup(f.st.Close)
	require.NoError(t, f.st.Migrate(ctx))

	unlimited := sim.Limits{PerMinute: 1 << 30, PerMonth: 1 << 30}
	f.sim = sim.New(sim.Config{Seed: 11, Now: func() time.Time { return faultAt },
		// A slow answer is held until the client gives up on it.
		Sleep:  func(ctx context.Context, _ time.Duration) error { <-ctx.Done(); return ctx.Err() },
		Tenero: sim.TeneroConfig{Anonymous: unlimited},
		Hiro:   sim.HiroConfig{Origin: faultAt, Agents: 10, Anonymous: unlimited}})
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
	f.faulty = newActivities(f.st, hs.URL, log, faultAttemptTimeout)
	return f
}

// newActivities wires the activities as activities.New does, with no
// waiting between in-call retries and the given attempt timeout (0: the
// clients' default).
func newActivities(st *store.Store, baseURL string, log *zap.Logger, attemptTimeout time.Duration) *activities.Activities {
	cat := catalog.Default()
	h := hiro.New(hiro.Config{BaseURL: baseURL, Logger: log, Sleep: noSleep, AttemptTimeout: attemptTimeout,
		Limiter: st.NewBudget("hiro", 1<<20)})
	return &activities.Activities{
		Store:   st,
		Catalog: cat,
		Logger:  log,
		Tenero:  tenero.New(tenero.Config{BaseURL: baseURL, Logger: log, Sleep: noSleep, AttemptTimeout: attemptTimeout}),
		Hiro:    h,
		Verifier: &competition.Verifier{Ledger: st, Txs: h, Allowlist: cat,
			CompetitionStart: sim.DefaultCompetitionStart},
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
	for _, p := range all {
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
				require.Equal(t, pacer.MinuteQuotaBackoff.Milliseconds(), res.RateLimitBackoffMs)
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
	// wantClass is the class of the run as a whole, "" when the walk goes
	// on past failing agents.
	wantClass pacer.ErrorClass
	// partial faults let some swaps through.
	partial bool
}{
	{name: "429 storm", faults: sim.Faults{PathPrefix: "/extended/", TooManyRequests: 1}, wantClass: pacer.ClassRateLimit},
	// Not one agent can be listed: the walk goes on, and the run as a whole
	// is reported failed with the listings' class.
	{name: "5xx", faults: sim.Faults{PathPrefix: "/extended/", ServerError: 1}, wantClass: pacer.ClassServerError},
	{name: "truncated JSON", faults: sim.Faults{PathPrefix: "/extended/", Truncated: 1}, wantClass: pacer.ClassParseError},
	{name: "wrong-typed JSON", faults: sim.Faults{PathPrefix: "/extended/", WrongType: 1}, wantClass: pacer.ClassParseError},
	{name: "tx lookups 429", faults: sim.Faults{PathPrefix: "/extended/v1/tx/", TooManyRequests: 1}, wantClass: pacer.ClassRateLimit},
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

// worldReasons counts the world's own rejections for a reason, the ones a
// healthy pass finds too.
func (f *faultStack) worldReasons(r competition.Reason) int {
	n := 0
	for _, o := range f.sim.World().ExpectedOutcomes(faultAt) {
		if o.Found && o.Reason == r {
			n++
		}
	}
	return n
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
	return "/extended/v1/address/" + best + "/", bySender[best]
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
			f.setFaults(t, tt.faults)
			res, err := runSweep(t, f.faulty)
			for _, txid := range hidden {
				_, found, lookupErr := f.st.Swap(context.Background(), txid)
				require.NoError(t, lookupErr)
				require.False(t, found, "%s was written although its answer was broken", txid)
			}
			if tt.target == "tx" {
				require.Equal(t, f.worldReasons(competition.ReasonTxFetchFailed)+1,
					res.RejectionReasons[string(competition.ReasonTxFetchFailed)], "the hidden swap is a fetch failure")
			}
			if tt.wantClass != "" {
				require.Error(t, err)
				require.Equal(t, string(tt.wantClass), errType(err))
				require.False(t, isRetryable(err), "upstream trouble waits for the next tick")
				if tt.wantClass == pacer.ClassRateLimit {
					require.True(t, res.RateLimited)
					require.Equal(t, pacer.MinuteQuotaBackoff.Milliseconds(), res.RateLimitBackoffMs)
				} else {
					require.Equal(t, len(f.sim.World().Agents()), res.HiroErrors, "every agent was tried")
				}
			} else {
				require.NoError(t, err, "the walk goes on past failing agents")
			}
			require.Equal(t, res.Inserted, f.requireLedger(t, false), "every row written was counted")
			if !tt.partial {
				require.Zero(t, res.Inserted, "nothing verifies while Hiro is broken")
			}
			if tt.faults.PathPrefix == "/extended/v1/tx/" && tt.wantClass == "" {
				// Found, but not verifiable now: rejected as a fetch failure
				// (never as not found), and looked at again next pass.
				require.Positive(t, res.Found)
				require.Equal(t, res.Found, res.RejectionReasons[string(competition.ReasonTxFetchFailed)]+
					res.RejectionReasons[string(competition.ReasonTxNotFound)]+res.Pending)
			}

			f.setFaults(t, sim.Faults{})
			inserted := res.Inserted
			res, err = runSweep(t, f.acts)
			require.NoError(t, err, "the run after the fault is healthy")
			require.Zero(t, res.HiroErrors)
			require.Equal(t, inserted, res.AlreadyKnown, "rows written under the fault are found, not written again")
			f.requireLedger(t, true)

			// And once more: every swap is already known, none twice.
			res, err = runSweep(t, f.acts)
			require.NoError(t, err)
			require.Zero(t, res.Inserted)
			require.Equal(t, len(f.sim.World().ExpectedSwaps(faultAt)), res.AlreadyKnown)
			f.requireLedger(t, true)
		})
	}
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
		res, err := runSweep(t, f.faulty)
		require.NoError(t, err)
		inserted += res.Inserted
	}
	require.Equal(t, want, f.requireLedger(t, false), "the ledger filled up within %d passes", passes)
	require.Equal(t, want, inserted, "each swap was inserted exactly once")
	require.Greater(t, passes, 1, "the storm did hit")
	f.requireLedger(t, true)
	t.Logf("figures: ledger complete after %d passes through a 70%% fault storm", passes)
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
		f.proxy.cut()
		res, err := runTenero(t, f.acts)
		require.Error(t, err)
		require.Equal(t, string(pacer.ClassTransport), errType(err))
		require.True(t, isRetryable(err), "transport trouble is worth Temporal's retries")
		require.Equal(t, pacer.ClassTransport, res.ErrorClass)
		f.proxy.restore()
		_, err = runTenero(t, f.acts)
		require.NoError(t, err, "the same pool reconnects")
		f.requireTruePrices(t)
	})

	t.Run("sweep, database down", func(t *testing.T) {
		f.proxy.cut()
		_, err := runSweep(t, f.acts)
		require.Error(t, err)
		require.Equal(t, string(pacer.ClassTransport), errType(err))
		require.True(t, isRetryable(err))
		f.proxy.restore()
	})

	t.Run("sweep, database lost mid-page", func(t *testing.T) {
		// The third transaction lookup finds the database gone: its insert
		// fails, and the walk stops with the cursor where it was.
		var lookups atomic.Int32
		cut := func(r *http.Request) {
			if strings.HasPrefix(r.URL.Path, "/extended/v1/tx/") && lookups.Add(1) == 3 {
				f.proxy.cut()
			}
		}
		f.beforeUpstream.Store(&cut)
		res, err := runSweep(t, f.acts)
		f.beforeUpstream.Store(nil)
		require.Error(t, err)
		require.Equal(t, string(pacer.ClassTransport), errType(err))
		require.True(t, isRetryable(err))
		require.Equal(t, 1, res.RejectionReasons[string(competition.ReasonDBUnavailable)])
		f.proxy.restore()

		before := f.requireLedger(t, false)
		res, err = runSweep(t, f.acts)
		require.NoError(t, err, "the retried page is healthy")
		require.Equal(t, before, res.AlreadyKnown, "what was written before the loss is found, not written again")
		f.requireLedger(t, true)
	})
}

// pgProxy forwards TCP connections to Postgres until cut: then it drops
// every open connection and accepts new ones only to close them, as a
// database that crashed or failed over does.
type pgProxy struct {
	url    string
	target string
	ln     net.Listener

	mu    sync.Mutex
	down  bool
	conns map[net.Conn]struct{}
}

func startPGProxy(t *testing.T, dbURL string) *pgProxy {
	t.Helper()
	u, err := url.Parse(dbURL)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &pgProxy{target: u.Host, ln: ln, conns: map[net.Conn]struct{}{}}
	u.Host = ln.Addr().String()
	p.url = u.String()
	go p.serve()
	t.Cleanup(func() {
		_ = ln.Close()
		p.cut()
	})
	return p
}

func (p *pgProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.forward(c)
	}
}

func (p *pgProxy) forward(c net.Conn) {
	p.mu.Lock()
	if p.down {
		p.mu.Unlock()
		_ = c.Close()
		return
	}
	p.conns[c] = struct{}{}
	p.mu.Unlock()
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		_ = c.Close()
		return
	}
	p.mu.Lock()
	p.conns[up] = struct{}{}
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	<-done
	_ = c.Close()
	_ = up.Close()
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, up)
	p.mu.Unlock()
}

func (p *pgProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for c := range p.conns {
		_ = c.Close()
	}
	clear(p.conns)
}

func (p *pgProxy) restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = false
}
