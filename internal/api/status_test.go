package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/pacer-dev/pacer/internal/api"
	"github.com/pacer-dev/pacer/internal/catalog"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/internal/testenv"
	"github.com/pacer-dev/pacer/worker"
	"github.com/pacer-dev/pacer/workflows"
)

// inFlight counts the calls of a function that are under way, and the most
// there ever were at once.
type inFlight struct {
	now, most, total atomic.Int32
}

func (f *inFlight) enter() {
	f.total.Add(1)
	n := f.now.Add(1)
	for {
		m := f.most.Load()
		if n <= m || f.most.CompareAndSwap(m, n) {
			return
		}
	}
}

func (f *inFlight) leave() { f.now.Add(-1) }

// answer is one HTTP answer and how long it took.
type answer struct {
	code  int
	body  []byte
	cache string
	took  time.Duration
	err   error
}

// storm sends n concurrent GETs and returns their answers.
func storm(base, path string, n int) []answer {
	out := make([]answer, n)
	c := &http.Client{Timeout: 30 * time.Second}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range out {
		wg.Go(func() {
			<-start
			t0 := time.Now()
			resp, err := c.Get(base + path)
			if err != nil {
				out[i] = answer{err: err, took: time.Since(t0)}
				return
			}
			body, err := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			out[i] = answer{code: resp.StatusCode, body: body, cache: resp.Header.Get("Cache-Control"), took: time.Since(t0), err: err}
		})
	}
	close(start)
	wg.Wait()
	return out
}

func slowest(as []answer) time.Duration {
	var m time.Duration
	for _, a := range as {
		m = max(m, a.took)
	}
	return m
}

// The measurement: with Temporal hanging, 4 concurrent requests
// took 20 s for the slowest and made 4 queries. Now 100 concurrent
// requests, twice, through a real (lazy) Temporal client whose frontend
// accepts connections and never answers.
func TestStatusWithTemporalHanging(t *testing.T) {
	t.Parallel()
	tc, err := worker.DialLazy(worker.DialOptions{Address: testenv.HungListener(t), Logger: zap.NewNop()})
	require.NoError(t, err)
	t.Cleanup(tc.Close)
	st, err := store.Open(context.Background(), testenv.PostgresURL(t))
	require.NoError(t, err)
	t.Cleanup(st.Close)

	var queries inFlight
	reg := prometheus.NewRegistry()
	h := api.New(api.Options{ReadsPerMinute: stormReads, ReadsPerSecond: stormReads, Store: st, Catalog: catalog.Default(), Registerer: reg,
		Status: func(ctx context.Context) (workflows.Status, error) {
			queries.enter()
			defer queries.leave()
			return worker.Status(ctx, tc, "v1")
		}})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)

	for wave := range 2 {
		answers := storm(srv.URL, "/api/scheduler/status", 100)
		for _, a := range answers {
			require.NoError(t, a.err)
			require.Equal(t, http.StatusServiceUnavailable, a.code, "%s", a.body)
			var body api.ErrorBody
			require.NoError(t, json.Unmarshal(a.body, &body))
			require.Equal(t, "timeout", string(body.Class))
			require.Equal(t, "no-store", a.cache)
		}
		require.Less(t, slowest(answers), 6*time.Second, "wave %d", wave)
		require.LessOrEqual(t, queries.most.Load(), int32(1), "never more than one query in flight")
		t.Logf("figures: wave %d: 100 concurrent status requests with Temporal hanging, slowest answer %s, %d queries so far, at most %d in flight",
			wave+1, slowest(answers).Round(time.Millisecond), queries.total.Load(), queries.most.Load())
	}
	require.LessOrEqual(t, queries.total.Load(), int32(2), "one query per wave at most")
	require.Equal(t, float64(queries.total.Load()), fetches(t, reg, "status"), "the API counts what it asked")
}

// fetches reads pacer_api_fetches_total{what} from reg.
func fetches(t *testing.T, reg *prometheus.Registry, what string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != "pacer_api_fetches_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "what" && l.GetValue() == what {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("no pacer_api_fetches_total{what=%q}", what)
	return 0
}

// A scheduler that answered once and then hangs: requests get that answer,
// marked stale with its age, within the wait, while one query at a time
// goes out; a scheduler that fails fast is asked at most once per failure
// TTL however many requests come.
func TestStatusServesLastGoodAnswerWhenSlow(t *testing.T) {
	t.Parallel()
	var queries inFlight
	hang := make(chan struct{})
	release := sync.OnceFunc(func() { close(hang) })
	t.Cleanup(release)
	var fail atomic.Bool
	var calls atomic.Int32
	h := api.New(api.Options{ReadsPerMinute: stormReads, ReadsPerSecond: stormReads, Logger: zap.NewNop(), StatusTTL: 50 * time.Millisecond, StatusWait: 300 * time.Millisecond,
		Status: func(ctx context.Context) (workflows.Status, error) {
			queries.enter()
			defer queries.leave()
			switch n := calls.Add(1); {
			case n == 1:
				return workflows.Status{WorkflowID: "v1", RunID: "r1"}, nil
			case fail.Load():
				return workflows.Status{}, errors.New("connection refused")
			}
			select {
			case <-ctx.Done():
				return workflows.Status{}, ctx.Err()
			case <-hang:
				return workflows.Status{}, errors.New("gone")
			}
		}})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)

	first := storm(srv.URL, "/api/scheduler/status", 1)[0]
	require.Equal(t, http.StatusOK, first.code, "%s", first.body)
	var doc api.StatusDocument
	require.NoError(t, json.Unmarshal(first.body, &doc))
	require.False(t, doc.Stale)
	require.Equal(t, "public, max-age=1", first.cache)

	// Past the TTL the scheduler hangs: the last good answer, stale.
	require.Eventually(t, func() bool {
		a := storm(srv.URL, "/api/scheduler/status", 1)[0]
		return a.code == http.StatusOK && json.Unmarshal(a.body, &doc) == nil && doc.Stale
	}, 5*time.Second, 10*time.Millisecond)
	answers := storm(srv.URL, "/api/scheduler/status", 50)
	for _, a := range answers {
		require.Equal(t, http.StatusOK, a.code)
		require.NoError(t, json.Unmarshal(a.body, &doc))
		require.Equal(t, "r1", doc.RunID)
		require.True(t, doc.Stale)
		require.Equal(t, "timeout", string(doc.StaleReason))
		require.Positive(t, doc.AgeSeconds)
		require.Equal(t, "no-cache", a.cache)
	}
	require.Less(t, slowest(answers), 2*time.Second)
	require.Equal(t, int32(1), queries.most.Load())

	// Failing fast instead: the failure is cached too.
	fail.Store(true)
	release() // the hanging query ends, failing
	require.Eventually(t, func() bool { return queries.now.Load() == 0 }, 5*time.Second, 10*time.Millisecond)
	before := calls.Load()
	for range 5 {
		storm(srv.URL, "/api/scheduler/status", 20)
	}
	require.LessOrEqual(t, calls.Load()-before, int32(2), "100 requests within the failure TTL made at most two queries")
	t.Logf("figures: scheduler hanging after one answer: 50 concurrent requests got it stale (with its age) in %s, 1 query in flight; failing fast: 100 requests made %d queries",
		slowest(answers).Round(time.Millisecond), calls.Load()-before)
}

// stormReads lifts the public read limits for the tests whose storms
// (one client, hundreds of requests at once) test something else.
const stormReads = 1 << 20
