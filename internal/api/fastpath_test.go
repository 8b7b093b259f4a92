package api_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/api"
	"github.com/pacer-dev/pacer/internal/budget"
	"github.com/pacer-dev/pacer/internal/competition"
	"github.com/pacer-dev/pacer/internal/sim"
)

// madeUp is a txid Hiro has never heard of.
func madeUp(t *testing.T) string {
	t.Helper()
	b := make([]byte, 32)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return "0x" + hex.EncodeToString(b)
}

// postRaw posts one txid and returns the status and Retry-After (0 if none).
func (f *tradeFixture) postRaw(t *testing.T, txid string) (int, int) {
	t.Helper()
	resp, err := http.Post(f.srv.URL+"/api/competition/trades", "application/json", strings.NewReader(`{"txid":"`+txid+`"}`))
	require.NoError(t, err)
	defer resp.Body.Close()
	ra := 0
	if h := resp.Header.Get("Retry-After"); h != "" {
		ra, err = strconv.Atoi(h)
		require.NoError(t, err)
	}
	return resp.StatusCode, ra
}

func TestFastPathLimitsEachClient(t *testing.T) {
	t.Parallel()
	f := newTradeFixtureWith(t, 1<<20, 3)
	start := time.Now()
	for range 3 {
		code, _ := f.postRaw(t, madeUp(t))
		require.Equal(t, http.StatusNotFound, code)
	}
	code, tr, _ := f.post(t, `{"txid":"`+madeUp(t)+`"}`)
	require.Equal(t, http.StatusTooManyRequests, code)
	require.Equal(t, "rate_limited", tr.Status)
	require.True(t, tr.Retryable)
	code, ra := f.postRaw(t, madeUp(t))
	require.Equal(t, http.StatusTooManyRequests, code)
	// One request every 20 s at 3 a minute, less what the test took since
	// the first was refilled (a loaded machine takes seconds).
	elapsed := int(math.Ceil(time.Since(start).Seconds()))
	require.LessOrEqual(t, ra, 20, "one request every 20 s at 3 a minute")
	require.GreaterOrEqual(t, ra, 20-elapsed-1, "one request every 20 s at 3 a minute, %d s after the first", elapsed)
}

// Malformed posts count against their client's limit like any other, and
// past it are refused before their body is read (issue 41, item 13): a
// client cannot make the process decode bodies without limit.
func TestFastPathLimitsAClientBeforeReadingItsBody(t *testing.T) {
	t.Parallel()
	f := newTradeFixtureWith(t, 1<<20, 3)
	for _, body := range []string{`{"txid":`, `not json`, `{"txid":"0x12"}`} {
		code, _, _ := f.post(t, body)
		require.Equal(t, http.StatusBadRequest, code, body)
	}
	code, tr, _ := f.post(t, `{"txid":`)
	require.Equal(t, http.StatusTooManyRequests, code, "the fourth post, malformed, is refused by the limit")
	require.Equal(t, "rate_limited", tr.Status)
}

func TestFastPathKeepsToItsShareOfTheBudget(t *testing.T) {
	t.Parallel()
	// The budget's minute is the clock's (no window told): a roll between
	// the posts gives the lane its room back, as it should. The check is
	// made on a run that kept within one minute.
	for attempt := 1; ; attempt++ {
		minute := time.Now().Truncate(time.Minute)
		f, code, ra := fastLaneOverItsShare(t)
		if rolled := !time.Now().Truncate(time.Minute).Equal(minute); rolled && attempt < 3 {
			t.Logf("the minute rolled during attempt %d: again", attempt)
			continue
		}
		require.Equal(t, http.StatusTooManyRequests, code)
		require.Positive(t, ra)
		require.LessOrEqual(t, ra, 60)
		require.Equal(t, 2, f.sim.Stats().Routes[sim.HiroTxMultipleRoute].Total, "the refused request never reached Hiro")

		// The sweep still has its share of the window.
		for range 7 {
			d, err := f.acts.Budget.Take(context.Background(), budget.LaneSweep, 1)
			require.NoError(t, err)
			require.True(t, d.OK, "the sweep's share is whole")
		}
		return
	}
}

// fastLaneOverItsShare posts two made-up txids on a Hiro of 10 a minute
// (the fast lane may use 2 of them) and a third: its status and
// Retry-After.
func fastLaneOverItsShare(t *testing.T) (f *tradeFixture, code, retryAfter int) {
	t.Helper()
	f = newTradeFixtureWith(t, 10, 1000)
	for range 2 {
		code, _ := f.postRaw(t, madeUp(t))
		require.Equal(t, http.StatusNotFound, code)
	}
	code, retryAfter = f.postRaw(t, madeUp(t))
	return f, code, retryAfter
}

func TestFastPathMakesOneCallPerTxid(t *testing.T) {
	t.Parallel()
	f := newTradeFixture(t)
	// Slow answers keep the first call in flight while the others arrive.
	require.NoError(t, f.sim.SetFaults(sim.Faults{PathPrefix: "/extended/v1/tx/", Slow: 1, SlowDelay: sim.Duration(500 * time.Millisecond)}))
	txid := madeUp(t)
	codes := make([]int, 12)
	var wg sync.WaitGroup
	for i := range codes {
		wg.Go(func() { codes[i], _ = f.postRaw(t, txid) })
	}
	wg.Wait()
	for _, c := range codes {
		require.Equal(t, http.StatusNotFound, c)
	}
	require.Equal(t, 1, f.sim.Stats().Routes[sim.HiroTxMultipleRoute].Total, "concurrent requests for one txid share one Hiro call")
}

func TestFastPathAnswersKnownRejectionsFromTheLedger(t *testing.T) {
	t.Parallel()
	f := newTradeFixture(t)
	failed := f.txOf(t, sim.CaseFailed)
	code, tr, _ := f.post(t, `{"txid":"`+failed+`"}`)
	require.Equal(t, http.StatusUnprocessableEntity, code)
	require.Equal(t, string(competition.ReasonTxFailed), tr.Reason)
	f.sim.ResetStats()
	code, tr, _ = f.post(t, `{"txid":"`+failed+`"}`)
	require.Equal(t, http.StatusUnprocessableEntity, code)
	require.Equal(t, string(competition.ReasonTxFailed), tr.Reason)
	require.Zero(t, f.sim.Stats().Routes[sim.HiroTxMultipleRoute].Total, "a kept rejection costs no Hiro call")
}

func TestFastPathMakesTheSenderDue(t *testing.T) {
	t.Parallel()
	f := newTradeFixture(t)
	ctx := context.Background()
	_, err := f.st.Pool().Exec(ctx, `update agent_ingest set next_run_at = now() + interval '1 hour'`)
	require.NoError(t, err)
	swap := f.txOf(t, sim.CaseSwap)
	code, tr, _ := f.post(t, `{"txid":"`+swap+`"}`)
	require.Equal(t, http.StatusOK, code)
	row, found, err := f.st.AgentIngestRow(ctx, tr.Swap.Sender)
	require.NoError(t, err)
	require.True(t, found)
	require.False(t, row.NextRunAt.After(time.Now()), "the sender is due now")
	var due int
	require.NoError(t, f.st.Pool().QueryRow(ctx, `select count(*) from agent_ingest where next_run_at <= now()`).Scan(&due))
	require.Equal(t, 1, due, "only the sender")
}

// TestFastPathHintsOnlyWhatItInserted replays a known txid: an answer from
// the ledger changes nothing, so a client replaying known txids cannot make
// the sweep visit their agents (SPEC §5.6). A second insert for the same
// agent within PACER_HOT_EVERY is debounced too.
func TestFastPathHintsOnlyWhatItInserted(t *testing.T) {
	t.Parallel()
	f := newTradeFixture(t)
	ctx := context.Background()
	notDue := func() {
		t.Helper()
		_, err := f.st.Pool().Exec(ctx, `update agent_ingest set next_run_at = now() + interval '1 hour'`)
		require.NoError(t, err)
	}
	due := func() int {
		t.Helper()
		var n int
		require.NoError(t, f.st.Pool().QueryRow(ctx, `select count(*) from agent_ingest where next_run_at <= now()`).Scan(&n))
		return n
	}
	notDue()
	swap := f.txOf(t, sim.CaseSwap)
	code, tr, _ := f.post(t, `{"txid":"`+swap+`"}`)
	require.Equal(t, http.StatusOK, code)
	sender := tr.Swap.Sender
	require.Equal(t, 1, due())
	// The wake goes out apart from the answer.
	require.Eventually(t, func() bool { return len(f.wakes()) == 1 }, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, []string{sender}, f.wakes(), "an insert wakes the sweep for its agent")

	notDue()
	for range 5 {
		code, tr, _ = f.post(t, `{"txid":"`+swap+`"}`)
		require.Equal(t, http.StatusConflict, code)
		require.Equal(t, "already_verified", tr.Status)
	}
	require.Zero(t, due(), "a replayed txid makes nobody due")
	require.Equal(t, []string{sender}, f.wakes(), "nor wakes the sweep")

	// Another swap of the same agent inside the debounce interval is
	// recorded but does not hint again.
	var other string
	for _, tx := range f.world.Transactions() {
		if tx.Case == sim.CaseSwap && tx.Sender == sender && tx.TxID != swap && !tx.AppearsAt.After(worldAt) {
			other = tx.TxID
			break
		}
	}
	if other != "" {
		code, _, _ = f.post(t, `{"txid":"`+other+`"}`)
		require.Equal(t, http.StatusOK, code)
		require.Zero(t, due(), "debounced: one hint per agent per interval")
		require.Equal(t, []string{sender}, f.wakes())
	}
	// Past the interval the next insert hints again.
	_, err := f.st.Pool().Exec(ctx, `update agent_ingest set last_hint_at = now() - interval '2 minutes'`)
	require.NoError(t, err)
	found, err := f.st.HintAgentAtMost(ctx, sender, time.Minute)
	require.NoError(t, err)
	require.True(t, found)
}

// budgetXmin is the transaction that last wrote the Hiro budget's row.
func (f *tradeFixture) budgetXmin(t *testing.T) string {
	t.Helper()
	var x string
	require.NoError(t, f.st.Pool().QueryRow(context.Background(),
		`select xmin::text from upstream_budget_state where upstream = 'hiro'`).Scan(&x))
	return x
}

// Issue 28 finding 4: a fast-path request the budget's fast lane refuses
// writes nothing: the one budget row every sweep request locks keeps its
// xmin across 20 refusals (before the fix each 429 locked and updated it).
func TestRefusedFastPathWritesNothing(t *testing.T) {
	t.Parallel()
	// 10 a minute: the fast lane may use 2 of them.
	f := newTradeFixtureWith(t, 10, 1000)
	// The lane's window is the database clock's minute: one that rolls
	// over mid-measurement gives the lane its 2 again (a 404, and a
	// write), so such a measurement is taken again.
	for attempt := 1; ; attempt++ {
		code := http.StatusNotFound
		for spent := 0; code == http.StatusNotFound; spent++ {
			require.Less(t, spent, 3, "the fast lane holds 2 a window")
			code, _ = f.postRaw(t, madeUp(t))
			require.Contains(t, []int{http.StatusNotFound, http.StatusTooManyRequests}, code)
		}
		before := f.budgetXmin(t)
		refused := 0
		for range 20 {
			if code, _ = f.postRaw(t, madeUp(t)); code != http.StatusTooManyRequests {
				break
			}
			refused++
		}
		if refused < 20 && code == http.StatusNotFound && attempt < 3 {
			t.Logf("the window rolled over after %d refusals: measured again", refused)
			continue
		}
		require.Equal(t, 20, refused, "refused by the budget (last answer %d)", code)
		require.Equal(t, before, f.budgetXmin(t), "a refused request wrote the budget's row")
		t.Logf("figures: 20 fast-path requests refused by the budget, budget row xmin %s before and after", before)
		return
	}
}

// Issue 28 finding 4: the fast path has a process-wide cap. 60 clients
// behind a trusted proxy (each its own address, well within its own
// limit) post at once to a process verifying 2 a second: past the cap's
// burst (2 + one client's 3) and rate, each is a 503 with Retry-After that
// reached neither the database's verification nor Hiro.
func TestFastPathHasAProcessWideCap(t *testing.T) {
	t.Parallel()
	proxies, err := api.ParseTrustedProxies("127.0.0.1/32")
	require.NoError(t, err)
	f := newTradeFixtureWith(t, 1<<20, 3, func(o *api.Options) {
		o.FastPathPerSecond, o.TrustedProxies = 2, proxies
	})
	const clients = 60
	codes := make([]int, clients)
	began := time.Now()
	var wg sync.WaitGroup
	for i := range codes {
		wg.Go(func() {
			req, err := http.NewRequest(http.MethodPost, f.srv.URL+"/api/competition/trades", strings.NewReader(`{"txid":"`+madeUp(t)+`"}`))
			if err != nil {
				panic(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-Forwarded-For", fmt.Sprintf("198.51.100.%d", i+1))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				codes[i] = -1
				return
			}
			codes[i] = resp.StatusCode
			if resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") == "" {
				codes[i] = -2
			}
			_ = resp.Body.Close()
		})
	}
	wg.Wait()
	took := time.Since(began)
	by := map[int]int{}
	for _, c := range codes {
		by[c]++
	}
	allowed := 5 + 2*int(math.Ceil(took.Seconds()))
	t.Logf("figures: %d clients at once, cap 2/s: %v in %s; Hiro tx calls %d", clients, by, took.Round(time.Millisecond), f.sim.Stats().Routes[sim.HiroTxMultipleRoute].Total)
	require.Equal(t, clients, by[http.StatusNotFound]+by[http.StatusServiceUnavailable], "%v", by)
	require.LessOrEqual(t, by[http.StatusNotFound], allowed)
	require.Equal(t, by[http.StatusNotFound], f.sim.Stats().Routes[sim.HiroTxMultipleRoute].Total, "a refused request reached Hiro")
}
