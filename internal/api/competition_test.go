package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/pacer-dev/pacer/activities"
	"github.com/pacer-dev/pacer/internal/api"
	"github.com/pacer-dev/pacer/internal/catalog"
	"github.com/pacer-dev/pacer/internal/competition"
	"github.com/pacer-dev/pacer/internal/discovery"
	"github.com/pacer-dev/pacer/internal/sim"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/internal/testenv"
)

var worldAt = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

type tradeFixture struct {
	srv   *httptest.Server
	sim   *sim.Server
	st    *store.Store
	world *sim.World
	acts  *activities.Activities

	mu sync.Mutex
	// woken are the agents the API's Waker was called for, in order.
	woken []string
}

func (f *tradeFixture) wakes() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.woken...)
}

func newTradeFixture(t *testing.T) *tradeFixture {
	t.Helper()
	return newTradeFixtureWith(t, 1<<20, 1000)
}

// newTradeFixtureWith is a fixture whose Hiro budget allows hiroPerMinute
// and whose fast path allows each client perClient a minute.
func newTradeFixtureWith(t *testing.T, hiroPerMinute, perClient int, opts ...func(*api.Options)) *tradeFixture {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, testenv.PostgresURL(t))
	require.NoError(t, err)
	t.Cleanup(st.Close)
	require.NoError(t, st.Migrate(ctx))
	unlimited := sim.Limits{PerMinute: 1 << 30, PerMonth: 1 << 30}
	s := sim.New(sim.Config{Seed: 5, Now: func() time.Time { return worldAt },
		Hiro: sim.HiroConfig{Origin: worldAt, Anonymous: unlimited}})
	require.NoError(t, s.World().Seed(ctx, st))
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	acts := activities.New(activities.Options{
		Discovery: discovery.Config{Mode: "agents"}, // per-agent visits, as these tests were written for
		Store:     st, Logger: zap.NewNop(), HiroBaseURL: hs.URL, HiroPerMinute: hiroPerMinute,
		CompetitionStart: sim.DefaultCompetitionStart,
		Sleep:            func(context.Context, time.Duration) error { return nil },
	})
	f := &tradeFixture{st: st, sim: s, world: s.World(), acts: acts}
	o := api.Options{Store: st, Catalog: catalog.Default(),
		Verifier: acts.FastVerifier, FastPathPerMinute: perClient,
		Waker: func(_ context.Context, agent string) error {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.woken = append(f.woken, agent)
			return nil
		}}
	for _, opt := range opts {
		opt(&o)
	}
	f.srv = httptest.NewServer(api.New(o))
	t.Cleanup(f.srv.Close)
	return f
}

// txOf picks a transaction of a case, one already on chain at worldAt when
// there is one (the /tx/ failure cases answer the same at any time).
func (f *tradeFixture) txOf(t *testing.T, c sim.TxCase) string {
	t.Helper()
	id := ""
	for _, tx := range f.world.Transactions() {
		if tx.Case != c {
			continue
		}
		if !tx.AppearsAt.After(worldAt) {
			return tx.TxID
		}
		id = tx.TxID
	}
	require.NotEmpty(t, id, "the world has no %s transaction", c)
	return id
}

func (f *tradeFixture) post(t *testing.T, body string) (int, api.TradeResponse, map[string]any) {
	t.Helper()
	resp, err := http.Post(f.srv.URL+"/api/competition/trades", "application/json", strings.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	var raw bytes.Buffer
	_, _ = raw.ReadFrom(resp.Body)
	var tr api.TradeResponse
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw.Bytes(), &m), raw.String())
	_ = json.Unmarshal(raw.Bytes(), &tr)
	return resp.StatusCode, tr, m
}

func TestTradeFastPath(t *testing.T) {
	t.Parallel()
	f := newTradeFixture(t)
	swap := f.txOf(t, sim.CaseSwap)

	code, tr, _ := f.post(t, `{"txid":"`+swap+`"}`)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "verified", tr.Status)
	require.Equal(t, competition.SourceAgent, tr.Swap.Source)

	code, tr, _ = f.post(t, `{"txid":"`+swap+`"}`)
	require.Equal(t, http.StatusConflict, code)
	require.Equal(t, "already_verified", tr.Status)
	require.Equal(t, swap, tr.Swap.TxID, "409 carries the existing row")

	tests := []struct {
		name       string
		give       sim.TxCase
		wantCode   int
		wantReason competition.Reason
	}{
		{name: "pending", give: sim.CasePending, wantCode: http.StatusAccepted},
		{name: "not genesis", give: sim.CaseNotGenesis, wantCode: http.StatusUnprocessableEntity, wantReason: competition.ReasonSenderNotGenesis},
		{name: "not allowlisted", give: sim.CaseOffList, wantCode: http.StatusUnprocessableEntity, wantReason: competition.ReasonContractNotAllowlisted},
		{name: "failed on chain", give: sim.CaseFailed, wantCode: http.StatusUnprocessableEntity, wantReason: competition.ReasonTxFailed},
		{name: "unknown to hiro", give: sim.CaseNotFound, wantCode: http.StatusNotFound, wantReason: competition.ReasonTxNotFound},
	}
	outcomes := f.world.ExpectedOutcomes(worldAt)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A tx of the case whose sender gets as far as the gate tested.
			txid := ""
			for _, tx := range f.world.Transactions() {
				if o, ok := outcomes[tx.TxID]; ok && tx.Case == tt.give && o.Reason == tt.wantReason {
					txid = tx.TxID
					break
				}
			}
			require.NotEmpty(t, txid, "the world has no %s transaction rejected as %q", tt.give, tt.wantReason)
			code, tr, _ := f.post(t, `{"txid":"`+txid+`"}`)
			require.Equal(t, tt.wantCode, code, "%+v", tr)
			require.Equal(t, string(tt.wantReason), tr.Reason)
		})
	}

	// Hiro failing: a retryable 502, and nothing written.
	require.NoError(t, f.sim.SetFaults(sim.Faults{PathPrefix: "/extended/", ServerError: 1}))
	other := f.otherSwap(t, swap)
	code, tr, _ = f.post(t, `{"txid":"`+other+`"}`)
	require.Equal(t, http.StatusBadGateway, code)
	require.Equal(t, string(competition.ReasonTxFetchFailed), tr.Reason)
	require.True(t, tr.Retryable)
	_, found, err := f.st.Swap(context.Background(), other)
	require.NoError(t, err)
	require.False(t, found)
}

func (f *tradeFixture) otherSwap(t *testing.T, not string) string {
	t.Helper()
	for _, tx := range f.world.Transactions() {
		if tx.Case == sim.CaseSwap && tx.TxID != not && !tx.AppearsAt.After(worldAt) {
			return tx.TxID
		}
	}
	t.Fatal("the world has one swap only")
	return ""
}

func TestTradeRejectsBadBodies(t *testing.T) {
	t.Parallel()
	f := newTradeFixture(t)
	for _, body := range []string{
		``, `{}`, `[]`, `"0xabc"`, `{"txid":5}`, `{"txid":"0xabc"}`, `{"txid":"` + strings.Repeat("a", 64) + `","x":1}`,
		`{"txid":"0x` + strings.Repeat("g", 64) + `"}`, `{"txid":"` + strings.Repeat("a", 64) + `"}{}`,
		`{"txid":"'; drop table swaps; --"}`,
	} {
		code, _, m := f.post(t, body)
		require.Equal(t, http.StatusBadRequest, code, body)
		require.NotEmpty(t, m["error"], body)
	}
	code, _, _ := f.post(t, `{"txid":"`+strings.Repeat("a", api.MaxBodyBytes)+`"}`)
	require.Equal(t, http.StatusRequestEntityTooLarge, code)
}

// The sweep and the fast path racing on one txid leave exactly one row.
func TestSweepAndFastPathRaceToOneRow(t *testing.T) {
	t.Parallel()
	f := newTradeFixture(t)
	txid := f.txOf(t, sim.CaseSwap)
	var wg sync.WaitGroup
	outcomes := make([]competition.Outcome, 16)
	for i := range outcomes {
		source := competition.SourceSweep
		if i%2 == 0 {
			source = competition.SourceAgent
		}
		wg.Go(func() { outcomes[i] = f.acts.Verifier.Verify(context.Background(), txid, source) })
	}
	wg.Wait()
	inserted := 0
	for _, o := range outcomes {
		require.Contains(t, []competition.Status{competition.StatusInserted, competition.StatusAlreadyKnown}, o.Status)
		if o.Status == competition.StatusInserted {
			inserted++
		}
	}
	require.Equal(t, 1, inserted)
	all, err := f.st.Swaps(context.Background())
	require.NoError(t, err)
	require.Len(t, all, 1)
}
