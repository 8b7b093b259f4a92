package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/pacer-dev/pacer/internal/api"
	"github.com/pacer-dev/pacer/internal/catalog"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/internal/testenv"
	"github.com/pacer-dev/pacer/workflows"
)

// deadline is the request deadline of these tests (production: 10 s).
const deadline = 2 * time.Second

func okStatus(context.Context) (workflows.Status, error) {
	return workflows.Status{WorkflowID: "v1"}, nil
}

// Postgres behind a proxy that holds every answer back for a minute: each
// endpoint still answers within its deadline, from a cache where it has
// one, else with a 503 that names the class; and the API recovers once
// Postgres does.
func TestRequestsAnswerWithinTheirDeadlineWhenPostgresIsSlow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	direct := testenv.PostgresURL(t)
	setup, err := store.Open(ctx, direct)
	require.NoError(t, err)
	t.Cleanup(setup.Close)
	require.NoError(t, setup.Migrate(ctx))
	price := "1.85"
	_, err = setup.UpsertPrice(ctx, store.Price{TokenID: stx, PriceUSD: &price, Source: store.SourceTenero, FetchedAt: time.Now()})
	require.NoError(t, err)

	proxy := testenv.StartPGProxy(t, direct)
	st, err := store.Open(ctx, proxy.URL)
	require.NoError(t, err)
	t.Cleanup(st.Close)
	srv := httptest.NewServer(api.New(api.Options{ReadsPerMinute: stormReads, ReadsPerSecond: stormReads, Store: st, Catalog: catalog.Default(), Logger: zap.NewNop(),
		RequestTimeout: deadline, Status: okStatus, TemporalHealth: func(context.Context) error { return nil }}))
	t.Cleanup(srv.Close)
	a := storm(srv.URL, "/api/prices", 1)[0]
	require.Equal(t, http.StatusOK, a.code, "%s", a.body)
	require.Equal(t, "public, max-age=10", a.cache)

	proxy.SetDelay(time.Minute)
	tests := []struct {
		path      string
		wantCode  int
		wantClass string
		wantBody  string
	}{
		{path: "/api/prices?tokens=stx", wantCode: http.StatusServiceUnavailable, wantClass: "timeout"},
		{path: "/api/prices?token=stx", wantCode: http.StatusServiceUnavailable, wantClass: "timeout"},
		{path: "/api/prices", wantCode: http.StatusServiceUnavailable, wantClass: "timeout"},
		// The tracked set comes from its cache, fresh or stale.
		{path: "/api/competition/tracked-tokens", wantCode: http.StatusOK, wantBody: stx},
		{path: "/readyz", wantCode: http.StatusServiceUnavailable, wantBody: `"postgres":"checking"`},
		{path: "/readyz?scope=worker", wantCode: http.StatusServiceUnavailable, wantBody: `"temporal":"ok"`},
		{path: "/api/scheduler/status", wantCode: http.StatusOK, wantBody: `"workflowId":"v1"`},
		{path: "/healthz", wantCode: http.StatusOK},
	}
	results := make([][]answer, len(tests))
	var wg sync.WaitGroup
	for i, tt := range tests {
		wg.Go(func() { results[i] = storm(srv.URL, tt.path, 20) })
	}
	wg.Wait()
	var figures []string
	for i, tt := range tests {
		answers := results[i]
		for _, a := range answers {
			require.NoError(t, a.err, tt.path)
			require.Equal(t, tt.wantCode, a.code, "%s: %s", tt.path, a.body)
			require.Contains(t, string(a.body), tt.wantBody, tt.path)
			if tt.wantClass != "" {
				var body api.ErrorBody
				require.NoError(t, json.Unmarshal(a.body, &body), tt.path)
				require.Equal(t, tt.wantClass, string(body.Class), tt.path)
				require.Equal(t, "no-store", a.cache, tt.path)
			}
		}
		// Postgres answers a minute late: an answer inside that minute was
		// not waiting on it (how much sooner is the machine's business).
		require.Less(t, slowest(answers), time.Minute, tt.path)
		figures = append(figures, fmt.Sprintf("%s %d in %s", tt.path, tt.wantCode, slowest(answers).Round(10*time.Millisecond)))
	}

	proxy.SetDelay(0)
	require.Eventually(t, func() bool {
		return storm(srv.URL, "/api/prices?tokens=stx", 1)[0].code == http.StatusOK
	}, 10*time.Second, 50*time.Millisecond, "the API recovers with Postgres")
	t.Logf("figures: Postgres answering a minute late, 20 concurrent requests per endpoint, deadline %s: %s", deadline, strings.Join(figures, "; "))
}

// The traded-token ranking (a GROUP BY over every swap) runs once however
// many requests want the tracked set. Postgres itself is the witness: with
// swaps locked, every ranking query the API sends waits on the lock in
// pg_stat_activity, under the test's own application_name (before the fix:
// one per pooled connection, 4).
func TestTrackedTokensRankingRunsOnceUnderLoad(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	app := fmt.Sprintf("pacer_test_%d", time.Now().UnixNano())
	dbURL := testenv.PostgresURL(t)
	st, err := store.Open(ctx, dbURL+"&application_name="+app)
	require.NoError(t, err)
	t.Cleanup(st.Close)
	require.NoError(t, st.Migrate(ctx))
	reg := prometheus.NewRegistry()
	srv := httptest.NewServer(api.New(api.Options{ReadsPerMinute: stormReads, ReadsPerSecond: stormReads, Store: st, Catalog: catalog.Default(), Logger: zap.NewNop(),
		RequestTimeout: deadline, Status: okStatus, Registerer: reg}))
	t.Cleanup(srv.Close)

	locker, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	t.Cleanup(func() { _ = locker.Close(context.Background()) })
	tx, err := locker.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, "lock table swaps in access exclusive mode")
	require.NoError(t, err)
	// Another connection watches: inside a transaction pg_stat_activity is
	// a snapshot taken at its first read.
	watcher, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	t.Cleanup(func() { _ = watcher.Close(context.Background()) })

	done := make(chan []answer, 2)
	go func() { done <- storm(srv.URL, "/api/prices", 100) }()
	go func() { done <- storm(srv.URL, "/api/competition/tracked-tokens", 100) }()
	mostWaiting := 0
	for finished := 0; finished < 2; {
		select {
		case answers := <-done:
			finished++
			for _, a := range answers {
				require.NoError(t, a.err)
				require.Equal(t, http.StatusServiceUnavailable, a.code, "%s", a.body)
				require.Contains(t, string(a.body), `"class":"timeout"`)
			}
			// The lock is held until the test ends, so an answer at all
			// (a 503 timeout, checked above) was not queued behind it.
		case <-time.After(20 * time.Millisecond):
			var n int
			// The query text is not there yet when a backend waits while
			// parsing (its first run on a connection); nothing else the
			// API runs here touches swaps.
			require.NoError(t, watcher.QueryRow(ctx, `select count(*) from pg_stat_activity
				where application_name = $1 and wait_event_type = 'Lock'`, app).Scan(&n))
			mostWaiting = max(mostWaiting, n)

		}
	}
	require.Equal(t, 1, mostWaiting, "200 requests, one ranking query waiting on the lock")
	require.Equal(t, 1.0, fetches(t, reg, "tracked_tokens"))
	require.NoError(t, tx.Rollback(ctx))
	t.Logf("figures: 200 concurrent requests for the tracked set with swaps locked: every answer within %s, %d ranking query in Postgres", deadline+time.Second, mostWaiting)
}
