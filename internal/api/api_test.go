package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/api"
	"github.com/pacer-dev/pacer/internal/catalog"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/internal/testenv"
	"github.com/pacer-dev/pacer/workflows"
)

const (
	stx  = "stx"
	sbtc = "SM3VDXK3WZZSA84XXFKAFAF15NNZX32CTSG82JFQ4.sbtc-token::sbtc-token"
	leo  = "SP1AY6K3PQV5MRT6R4S671NWW2FRVPKM0BR162CT6.leo-token::leo"
)

type fixture struct {
	h   *api.Server
	srv *httptest.Server
	// op is the operator listener (the page, the admin API).
	op          *httptest.Server
	statusCalls atomic.Int32
	statusErr   atomic.Pointer[error]
}

// newFixture serves an API on Postgres with a price or two; opts change
// its options.
func newFixture(t *testing.T, opts ...func(*api.Options)) *fixture {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, testenv.PostgresURL(t))
	require.NoError(t, err)
	t.Cleanup(st.Close)
	require.NoError(t, st.Migrate(ctx))
	fetched := time.Date(2026, 5, 14, 12, 0, 0, 0, time.UTC)
	price, dec := "1.85", 6
	_, err = st.UpsertPrice(ctx, store.Price{TokenID: stx, PriceUSD: &price, Decimals: &dec, Source: store.SourceTenero, FetchedAt: fetched})
	require.NoError(t, err)
	_, err = st.UpsertPrice(ctx, store.Price{TokenID: leo, Source: store.SourceTenero, FetchedAt: fetched})
	require.NoError(t, err)

	f := &fixture{}
	o := api.Options{
		Store:   st,
		Catalog: catalog.Default(),
		Status: func(context.Context) (workflows.Status, error) {
			f.statusCalls.Add(1)
			if e := f.statusErr.Load(); e != nil {
				return workflows.Status{}, *e
			}
			return workflows.Status{WorkflowID: "v1"}, nil
		},
		TemporalHealth: func(context.Context) error { return nil },
		StatusTTL:      time.Hour,
	}
	for _, opt := range opts {
		opt(&o)
	}
	f.h = api.New(o)
	f.srv = httptest.NewServer(f.h)
	t.Cleanup(f.srv.Close)
	f.op = httptest.NewServer(f.h.Operator())
	t.Cleanup(f.op.Close)
	return f
}

func (f *fixture) get(t *testing.T, path string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Get(f.srv.URL + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	var body map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	return resp.StatusCode, body
}

func TestPrices(t *testing.T) {
	t.Parallel()
	f := newFixture(t)

	code, body := f.get(t, "/api/prices?tokens="+stx+","+leo+","+sbtc+","+stx)
	require.Equal(t, http.StatusOK, code)
	prices := body["prices"].(map[string]any)
	require.Len(t, prices, 2)
	require.Equal(t, 1.85, prices[stx].(map[string]any)["priceUsd"])
	require.EqualValues(t, 6, prices[stx].(map[string]any)["decimals"])
	require.Equal(t, "2026-05-14T12:00:00Z", prices[stx].(map[string]any)["fetchedAt"])
	require.Nil(t, prices[leo].(map[string]any)["priceUsd"], "a confirmed no-price is null")
	require.Equal(t, []any{sbtc}, body["missing"])

	code, body = f.get(t, "/api/prices?token="+stx)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, map[string]any{"tokenId": stx, "priceUsd": 1.85, "fetchedAt": "2026-05-14T12:00:00Z"}, body)

	code, _ = f.get(t, "/api/prices?token="+sbtc)
	require.Equal(t, http.StatusNotFound, code)

	// No parameter: the tracked set, which always includes the static base.
	code, body = f.get(t, "/api/prices")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body["prices"], stx)
	require.Contains(t, body["missing"], sbtc)
}

func TestPricesRejectsBadInput(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	many := make([]string, 101)
	for i := range many {
		many[i] = "SP1AY6K3PQV5MRT6R4S671NWW2FRVPKM0BR162CT6.t" + strings.Repeat("x", i+1)
	}
	tests := []struct {
		name, give, wantErr string
	}{
		{name: "malformed id", give: "?token=bitcoin", wantErr: "malformed token id"},
		{name: "malformed in list", give: "?tokens=stx,drop%20table", wantErr: "malformed token id"},
		{name: "sql", give: "?token=stx%27%3B%20drop%20table%20swaps%3B--", wantErr: "malformed token id"},
		{name: "unicode look-alike", give: "?token=%D1%95tx", wantErr: "malformed token id"},
		{name: "semicolon", give: "?token=stx;x", wantErr: "malformed query string"},
		{name: "both forms", give: "?token=stx&tokens=stx", wantErr: "not both"},
		{name: "repeated", give: "?tokens=stx&tokens=stx", wantErr: "more than once"},
		{name: "unknown parameter", give: "?ids=stx", wantErr: "unknown parameter"},
		{name: "empty list", give: "?tokens=,,", wantErr: "no token ids"},
		{name: "too many", give: "?tokens=" + strings.Join(many, ","), wantErr: "at most 100"},
		{name: "huge id", give: "?token=" + strings.Repeat("S", 5000), wantErr: "malformed token id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, body := f.get(t, "/api/prices"+tt.give)
			require.Equal(t, http.StatusBadRequest, code)
			require.Contains(t, body["error"], tt.wantErr)
		})
	}
}

func TestStatusIsCached(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for range 3 {
		code, body := f.get(t, "/api/scheduler/status")
		require.Equal(t, http.StatusOK, code)
		require.Equal(t, "v1", body["workflowId"])
	}
	require.EqualValues(t, 1, f.statusCalls.Load(), "one Temporal query serves callers within the TTL")
}

func TestStatusUnavailable(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	err := errors.New("workflow not found")
	f.statusErr.Store(&err)
	code, body := f.get(t, "/api/scheduler/status")
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Equal(t, "scheduler status unavailable", body["error"])
}

func TestHealthAndReady(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	code, _ := f.get(t, "/healthz")
	require.Equal(t, http.StatusOK, code)
	code, body := f.get(t, "/readyz")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, true, body["ready"])
	code, body = f.get(t, "/nope")
	require.Equal(t, http.StatusNotFound, code)
	require.Contains(t, body["error"], "no such endpoint")
}

// Read-only answers may be cached briefly by clients and shared caches;
// errors, writes and health never (README, "HTTP API").
func TestCacheControl(t *testing.T) {
	t.Parallel()
	f := newFixture(t) // its status TTL is an hour
	tests := []struct {
		method, path string
		wantMaxAge   int // 0: no-store
	}{
		{http.MethodGet, "/api/prices", 10},
		{http.MethodGet, "/api/prices?tokens=stx", 10},
		{http.MethodGet, "/api/prices?token=stx", 10},
		{http.MethodGet, "/api/competition/tracked-tokens", 10},
		{http.MethodGet, "/api/scheduler/status", 3600},
		{http.MethodGet, "/api/rollups?period=hour&from=2026-11-01T00:00:00Z&to=2026-11-02T00:00:00Z", 60},
		{http.MethodGet, "/api/rollups?period=week", 0},
		{http.MethodGet, "/api/deliveries/sub_aaaaaaaaaaaaaaaa-hourly-20261101T0000Z", 0},
		{http.MethodGet, "/api/prices?token=bitcoin", 0},
		{http.MethodGet, "/api/prices?token=" + sbtc, 0},
		{http.MethodPost, "/api/competition/trades", 0},
		{http.MethodGet, "/healthz", 0},
		{http.MethodGet, "/readyz", 0},
		{http.MethodGet, "/metrics", 0},
		{http.MethodGet, "/nope", 0},
	}
	for _, tt := range tests {
		req, err := http.NewRequest(tt.method, f.srv.URL+tt.path, strings.NewReader(`{}`))
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		got := resp.Header.Get("Cache-Control")
		if tt.wantMaxAge == 0 {
			require.Equal(t, "no-store", got, "%s %s", tt.method, tt.path)
			continue
		}
		require.Equal(t, http.StatusOK, resp.StatusCode, tt.path)
		age, ok := strings.CutPrefix(got, "public, max-age=")
		require.True(t, ok, "%s: %q", tt.path, got)
		n, err := strconv.Atoi(age)
		require.NoError(t, err)
		// max-age counts down with the cached answer's age.
		require.InDelta(t, tt.wantMaxAge, n, 2, tt.path)
	}
}
