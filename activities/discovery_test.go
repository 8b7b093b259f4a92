package activities_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/activities"
	"github.com/pacer-dev/pacer/internal/budget"
	"github.com/pacer-dev/pacer/internal/discovery"
	"github.com/pacer-dev/pacer/internal/sim"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/internal/testenv"
)

// chainAt is the discovery tests' world present.
var chainAt = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

// chainStack is the tail's test bed: the simulated chain (strangers'
// traffic at 40,000 calls a day, forks, shifting pages) under a clock the
// test moves, the world's agents in a fresh schema of the real Postgres,
// and the activities in tail mode.
type chainStack struct {
	st    *store.Store
	sim   *sim.Server
	acts  *activities.Activities
	clock atomic.Pointer[time.Time]
	// requests counts the simulator's requests by path prefix.
	mu       sync.Mutex
	requests map[string]int
	// before, when set, runs before the simulator answers; true means it
	// answered instead.
	before atomic.Pointer[func(http.ResponseWriter, *http.Request) bool]
}

func newChainStack(t *testing.T, maxPages int, opts ...func(*sim.HiroConfig)) *chainStack {
	t.Helper()
	ctx := context.Background()
	c := &chainStack{requests: map[string]int{}}
	c.set(chainAt)
	var err error
	c.st, err = store.Open(ctx, testenv.PostgresURL(t))
	require.NoError(t, err)
	t.Cleanup(c.st.Close)
	require.NoError(t, c.st.Migrate(ctx))
	unlimited := sim.Limits{PerMinute: 1 << 30, PerMonth: 1 << 30}
	hc := sim.HiroConfig{Origin: chainAt, Agents: 12, Anonymous: unlimited, Chain: sim.ChainConfig{Volume: 40_000}}
	for _, o := range opts {
		o(&hc)
	}
	c.sim = sim.New(sim.Config{Seed: 18, Now: func() time.Time { return *c.clock.Load() },
		Tenero: sim.TeneroConfig{Anonymous: unlimited}, Hiro: hc})
	require.NoError(t, c.sim.World().Seed(ctx, c.st))
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if before := c.before.Load(); before != nil && (*before)(w, r) {
			return
		}
		c.mu.Lock()
		switch p := r.URL.Path; {
		case p == "/extended/v1/tx":
			c.requests["feed"]++
		case p == "/extended/v1/tx/multiple" && r.URL.Query().Has("event_offset"):
			c.requests["events"]++ // a busy transaction's further events
		case p == "/extended/v1/tx/multiple" && len(r.URL.Query()["tx_id"]) == 1:
			c.requests["single"]++ // a detail of one transaction
		case p == "/extended/v1/tx/multiple":
			c.requests["multiple"]++
		case strings.HasPrefix(p, "/extended/v1/tx/"):
			c.requests["tx"]++
		case strings.HasPrefix(p, "/extended/v1/address/"):
			c.requests["v1list"]++
			c.requests["list"]++
		default:
			c.requests["list"]++
		}
		c.mu.Unlock()
		c.sim.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	log := zaptest.NewLogger(t, zaptest.Level(zap.ErrorLevel))
	c.acts = newActivities(c.st, hs.URL, log, 0)
	// The simulator's clock jumps; the tail is due at every run (the real
	// clock barely moves between them), the reconciler when a test says.
	c.acts.Discovery = discovery.Config{Mode: discovery.ModeTail, MaxPages: maxPages,
		TailEvery: time.Millisecond, ReconcileEvery: time.Hour}
	c.acts.Ingest.EventsOnly = true
	return c
}

func (c *chainStack) set(at time.Time) { c.clock.Store(&at) }

func (c *chainStack) counts() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for k, v := range c.requests {
		out[k] = v
	}
	return out
}

// requireLedger holds the swaps table to the world's own rows at at.
func (c *chainStack) requireLedger(t *testing.T, at time.Time) {
	t.Helper()
	got, err := c.st.Swaps(context.Background())
	require.NoError(t, err)
	want := map[string]bool{}
	for _, sw := range c.sim.World().ExpectedSwaps(at) {
		want[sw.TxID] = true
	}
	var extra []string
	for _, sw := range got {
		if !want[sw.TxID] {
			extra = append(extra, sw.TxID)
		}
		delete(want, sw.TxID)
	}
	require.Empty(t, extra, "rows that are not the world's swaps")
	require.Empty(t, want, "swaps of the world missing from the ledger")
}

func sweepOK(t *testing.T, acts *activities.Activities) pacer.SweepResult {
	t.Helper()
	res, err := runSweep(t, acts)
	require.NoError(t, err, "%+v", res)
	return res
}

// The tail finds every swap made after it began, reading the chain's feed
// once for every agent: no agent is visited after the first start's
// history visits, and the requests are the chain's pages and the swaps'
// details, not the agents'. A transaction on a losing fork never becomes a
// row. The reconciler, reading each allowlisted contract's own list, finds
// nothing the tail missed.
func TestTailFindsEverySwapWithoutVisitingAgents(t *testing.T) {
	t.Parallel()
	c := newChainStack(t, 0)

	first := sweepOK(t, c.acts)
	require.Equal(t, "tail", first.Discovery)
	require.Contains(t, first.Readers, "tail")
	require.Equal(t, 12, first.Scanned, "the first start visits every agent's history once")
	c.requireLedger(t, chainAt)
	start := c.counts()
	t.Logf("figures: first start: %d lists, %d tx/multiple, %d single details, %d inserted", start["list"], start["multiple"], start["single"]+start["tx"], first.Inserted)
	// The first pages of a batch of visits are verified together: a
	// detail request for several agents, not one each (12 before).
	require.Less(t, start["multiple"]+start["single"]+start["tx"], first.Scanned/2, "the history visits' details come a batch of agents at a time")

	before := c.counts()
	at := chainAt.Add(90 * time.Minute)
	c.set(at)
	second := sweepOK(t, c.acts)
	c.requireLedger(t, at)
	// An agent is visited only when the tail kept one of its transactions
	// for retry (Hiro did not know it, or failed on it): a hint.
	retried := second.RejectionReasons["tx_not_found"] + second.RejectionReasons["tx_fetch_failed"]
	require.LessOrEqual(t, second.Scanned, retried, "no agent visited but on a hint: the tail found their swaps")
	tail := second.Readers["tail"]
	require.Positive(t, tail.Pages)
	require.Positive(t, tail.Candidates)
	after := c.counts()
	require.LessOrEqual(t, after["list"]-before["list"], countContractLists(second)+second.Readers["agents"].Requests,
		"no agent's list was read but a hinted one's")
	require.Positive(t, after["multiple"]-before["multiple"], "details come in batches")
	require.Less(t, after["multiple"]-before["multiple"], second.Inserted, "fewer requests than swaps")
	t.Logf("figures: 90 min of a 40,000-a-day chain: %d feed pages, %d candidates, %d inserted, %d tx/multiple, %d single details; tail %+v",
		after["feed"]-before["feed"], tail.Candidates, second.Inserted, after["multiple"]-before["multiple"], after["single"]-before["single"], tail)
	require.Empty(t, second.RejectionReasons["not_canonical"], "losing forks are passed over in the feed")
}

// countContractLists is how many list requests the reconciler made.
func countContractLists(res pacer.SweepResult) int {
	n := 0
	for name, r := range res.Readers {
		if strings.HasPrefix(name, discovery.ContractPrefix) {
			n += r.Requests
		}
	}
	return n
}

// A tail that falls further behind than its page bound reports the gap
// (result, log) and moves on; the reconciler fills it, 0 missed.
func TestTailGapIsReportedThenFilled(t *testing.T) {
	t.Parallel()
	c := newChainStack(t, 3)
	sweepOK(t, c.acts)
	// The reconciler read everything up to now: make it due again later.
	at := chainAt.Add(2 * time.Hour)
	c.set(at)
	_, err := c.st.Pool().Exec(context.Background(), `update discovery_cursors set last_read_at = now() where reader <> 'tail'`)
	require.NoError(t, err)

	res := sweepOK(t, c.acts)
	require.Equal(t, 1, res.Readers["tail"].Gaps, "the gap is reported")
	require.Equal(t, 1, res.OpenGaps, "and left open until the reconciler reads past it")
	swaps, err := c.st.Swaps(context.Background())
	require.NoError(t, err)
	require.Less(t, len(swaps), len(c.sim.World().ExpectedSwaps(at)), "the tail alone missed swaps in the gap")

	_, err = c.st.Pool().Exec(context.Background(), `update discovery_cursors set last_read_at = now() - interval '1 hour' where reader <> 'tail'`)
	require.NoError(t, err)
	res = sweepOK(t, c.acts)
	t.Logf("readers: %+v", res.Readers)
	require.Zero(t, res.OpenGaps, "filled")
	c.requireLedger(t, at)
}

// A tail read cut off part way (Hiro stops answering between pages, three
// times) loses nothing and doubles nothing: the position moves only once
// every candidate is settled, and the next run goes on from the saved
// scan. (The same with SIGKILL of a real worker: worker/discovery_test.go.)
func TestTailCutOffMidReadLosesAndDoublesNothing(t *testing.T) {
	t.Parallel()
	c := newChainStack(t, 0)
	sweepOK(t, c.acts)
	at := chainAt.Add(2 * time.Hour)
	c.set(at)
	want := len(c.sim.World().ExpectedSwaps(at)) - len(c.sim.World().ExpectedSwaps(chainAt))

	inserted, cut := 0, 0
	for kill := range 3 {
		var feed atomic.Int32
		downFrom := int32(4 + 9*kill)
		hook := func(w http.ResponseWriter, r *http.Request) bool {
			if r.URL.Path == "/extended/v1/tx" && feed.Add(1) >= downFrom {
				w.WriteHeader(http.StatusServiceUnavailable)
				return true
			}
			return false
		}
		c.before.Store(&hook)
		res, _ := runSweep(t, c.acts)
		inserted += res.Inserted
		rd, _, err := c.st.DiscoveryReader(context.Background(), discovery.ReaderTail)
		require.NoError(t, err)
		if rd.Scan.Started() {
			cut++
		}
	}
	require.Positive(t, cut, "a read was cut off part way and kept its scan")
	c.before.Store(nil)
	res := sweepOK(t, c.acts)
	inserted += res.Inserted
	c.requireLedger(t, at)
	require.Equal(t, want, inserted, "each swap inserted once")
}

// A sender rejected as sender_not_genesis whose claim is then verified has
// its swap recorded at the next visit the change triggers (issue 18): the
// claim's change makes the agent due and queues its sender rejections, and
// the sweep's visit verifies them again.
func TestClaimVerifiedRecordsTheSwapAtTheNextVisit(t *testing.T) {
	t.Parallel()
	c := newChainStack(t, 0)
	ctx := context.Background()
	first := sweepOK(t, c.acts)
	require.Positive(t, first.RejectionReasons["sender_not_genesis"])
	var txid, sender string
	require.NoError(t, c.st.Pool().QueryRow(ctx, `
select txid, sender from swap_rejections where reason = 'sender_not_genesis' order by txid limit 1`).Scan(&txid, &sender))

	again := sweepOK(t, c.acts)
	require.Zero(t, again.Scanned, "nothing changed: the agent is not visited")

	_, err := c.st.Pool().Exec(ctx, `update agents set erc8004_agent_id = coalesce(erc8004_agent_id, 4242) where stx_address = $1`, sender)
	require.NoError(t, err)
	_, err = c.st.Pool().Exec(ctx, `
insert into claims (btc_address, status) select btc_address, 'verified' from agents where stx_address = $1
on conflict (btc_address) do update set status = 'verified'`, sender)
	require.NoError(t, err)

	next := sweepOK(t, c.acts)
	require.Equal(t, 1, next.Scanned, "the change triggered one visit")
	sw, found, err := c.st.Swap(ctx, txid)
	require.NoError(t, err)
	require.True(t, found, "the swap is recorded")
	require.Equal(t, sender, sw.Sender)
}

// When the sweep's rate cannot pay the feed at the chain's volume (here:
// 40,000 calls a day, 0.57 pages a minute, against a month paced at 0.5
// requests a minute, 0.4 of it the tail's) but the allowlisted contracts'
// lists fit, the tail reads those lists instead: one page of the feed (to
// keep observing it), the contracts' readers at the tail's cadence, every
// swap in the ledger, and the tail's own position left where it was. Once
// the month pays the feed again (Hiro's headers say so), the tail reads
// the feed from there, and nothing is doubled.
func TestTailReadsTheContractsWhenTheMonthCannotPayTheFeed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newChainStack(t, 0)
	// The run's clock moves as the chain's does (the chain's volume by
	// the chain's clock), from the database's now (the due set by it).
	base := time.Now()
	c.acts.Clock = func() time.Time { return base.Add(c.clock.Load().Sub(chainAt)) }
	sweepOK(t, c.acts)
	c.set(chainAt.Add(10 * time.Minute))
	sweepOK(t, c.acts) // the feed's volume observed over 10 minutes
	before, _, err := c.st.DiscoveryReader(ctx, discovery.ReaderTail)
	require.NoError(t, err)

	// The month: 0.5 requests a minute to the month's end, 30 of credit.
	st, now, err := c.acts.Budget.Snapshot(ctx)
	require.NoError(t, err)
	_, end := monthBounds(now)
	remaining := int64(0.5 * end.Sub(now).Minutes())
	st.Month = budget.Month{Start: now, Remaining: &remaining, SweepCredit: 30, CreditAt: now}
	raw, err := json.Marshal(st)
	require.NoError(t, err)
	_, err = c.st.Pool().Exec(ctx, `update upstream_budget_state set state = $1 where upstream = $2`, raw, store.UpstreamHiro)
	require.NoError(t, err)
	_, err = c.st.Pool().Exec(ctx, `update discovery_cursors set last_read_at = now() - interval '2 hours' where reader <> 'tail'`)
	require.NoError(t, err)

	at := chainAt.Add(40 * time.Minute)
	c.set(at)
	feed := c.counts()["feed"]
	res := sweepOK(t, c.acts)
	require.Equal(t, 1, c.counts()["feed"]-feed, "one page of the feed: the probe")
	require.Positive(t, countContractLists(res), "the contracts' lists were read")
	require.Equal(t, "contracts", res.Readers["tail"].Source, "the status says where the tail reads")
	probed := c.acts.Clock().Add(c.acts.Discovery.WithDefaults().ReconcileEvery)
	require.NotNil(t, res.Readers["tail"].NextDueAt)
	require.WithinDuration(t, probed, *res.Readers["tail"].NextDueAt, time.Second, "the tail reads next when the feed's probe does")
	after, _, err := c.st.DiscoveryReader(ctx, discovery.ReaderTail)
	require.NoError(t, err)
	require.Equal(t, before.Position, after.Position, "the tail's walk waits where it was")
	c.requireLedger(t, at)
	inserted := res.Inserted

	// Hiro's headers told the budget the month is large: the feed again.
	at = chainAt.Add(50 * time.Minute)
	c.set(at)
	res = sweepOK(t, c.acts)
	require.Greater(t, c.counts()["feed"]-feed, 2, "the feed read again")
	require.Equal(t, "feed", res.Readers["tail"].Source)
	c.requireLedger(t, at)
	require.Positive(t, inserted)
	t.Logf("on the lists: %d inserted; back on the feed: %+v", inserted, res.Readers["tail"])
}

// monthBounds is the calendar month (UTC) around t, as the budget counts.
func monthBounds(t time.Time) (start, end time.Time) {
	t = t.UTC()
	start = time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
	return start, start.AddDate(0, 1, 0)
}

// With Hiro's sunset answers on from the start (the v9 API with its
// deprecated endpoints switched off), discovery turns to the current
// endpoints at once: the allowlisted contracts' own lists (v3 principals)
// in place of the feed, tx/multiple for every detail. Every swap is found,
// and after the feed's one sunset answer no deprecated route is asked again.
func TestSunsetFromTheStartFindsEverySwap(t *testing.T) {
	t.Parallel()
	c := newChainStack(t, 0, func(h *sim.HiroConfig) { h.Sunset = true })
	first := sweepOK(t, c.acts)
	c.requireLedger(t, chainAt)
	require.Equal(t, "contracts", first.Readers["tail"].Source, "the status says where the tail reads")
	for name, rep := range first.Readers {
		if strings.HasPrefix(name, discovery.ContractPrefix) {
			require.Equal(t, "v3", rep.Source, name)
		}
	}
	require.Equal(t, "v3", first.Readers["agents"].Source)
	for _, minutes := range []int{10, 20, 90} {
		at := chainAt.Add(time.Duration(minutes) * time.Minute)
		c.set(at)
		res := sweepOK(t, c.acts)
		c.requireLedger(t, at)
		require.Zero(t, res.HiroErrors, "a sunset answer is no error once known")
	}
	n := c.counts()
	t.Logf("figures: requests %v", n)
	require.Equal(t, 1, n["feed"], "the feed's one sunset answer, then never again")
	require.LessOrEqual(t, n["tx"], 1, "the detail asked at most once")
	require.Zero(t, n["v1list"], "the v1 lists never: v3 principals first")
	require.Equal(t, 1, c.sim.Stats().Count(sim.HiroTxListRoute, http.StatusGone))
}

// In tail mode no visit comes for a pending transaction no list settles:
// the plan's Verify step looks at it again once it has waited
// PACER_RECONCILE_EVERY. One Hiro dropped from its mempool leaves
// pending_txs as the rejection it is; one still in the mempool stays,
// looked at, and is not looked at again before its interval.
func TestVerifyStepSettlesWhatNoListDoes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newChainStack(t, 0)
	sweepOK(t, c.acts) // the first start: readers begun, history visited
	agents := map[string]bool{}
	for _, a := range c.sim.World().Agents() {
		agents[a.STXAddress] = true
	}
	var dropped, waiting sim.WorldTx
	for _, tx := range c.sim.World().Transactions() {
		switch {
		case !agents[tx.Sender] || tx.AppearsAt.After(chainAt):
		case tx.Case == sim.CaseDropped && dropped.TxID == "":
			dropped = tx
		case tx.Case == sim.CasePending && waiting.TxID == "":
			waiting = tx
		}
	}
	require.NotEmpty(t, dropped.TxID, "the world has an agent's dropped transaction")
	require.NotEmpty(t, waiting.TxID, "and one still pending")
	// The fast path kept both as pending an hour ago; the dropped one was
	// in the mempool then (no rejection yet).
	for _, tx := range []sim.WorldTx{dropped, waiting} {
		require.NoError(t, c.st.RecordPending(ctx, tx.TxID, tx.Sender))
	}
	_, err := c.st.Pool().Exec(ctx, `delete from swap_rejections where txid = $1`, dropped.TxID)
	require.NoError(t, err)
	_, err = c.st.Pool().Exec(ctx, `update pending_txs set first_seen_at = now() - interval '1 hour'`)
	require.NoError(t, err)

	res := sweepOK(t, c.acts)
	_, known, err := c.st.KnownRejection(ctx, dropped.TxID)
	require.NoError(t, err)
	require.True(t, known, "the dropped transaction is the rejection it is")
	left, err := c.st.DuePending(ctx, 0, 10)
	require.NoError(t, err)
	require.Equal(t, []store.PendingTx{{TxID: waiting.TxID, Sender: waiting.Sender}}, left, "the one still in the mempool stays")
	due, err := c.st.DuePending(ctx, discovery.DefaultReconcileEvery, 10)
	require.NoError(t, err)
	require.Empty(t, due, "looked at: not again before its interval")
	require.Positive(t, res.Rejected)
}
