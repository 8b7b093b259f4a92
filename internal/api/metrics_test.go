package api_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/api"
	"github.com/pacer-dev/pacer/internal/metrics"
)

func TestMetricsServesTheProcessRegistry(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	h := api.New(api.Options{Metrics: m.Handler(), Registerer: m.Registry()})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	op := httptest.NewServer(h.Operator())
	t.Cleanup(op.Close)

	for _, base := range []string{srv.URL, op.URL} {
		resp, err := http.Get(base + "/metrics")
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.Contains(t, string(b), `pacer_task_runs_total{task="tenero"} 0`, "pacer's registry, not the default one")
	}
}

// blockingCollector stands for a collector whose database read hangs: it
// counts the Collect calls in flight and blocks until released.
type blockingCollector struct {
	desc     *prometheus.Desc
	inFlight atomic.Int32
	most     atomic.Int32
	release  chan struct{}
}

func (c *blockingCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }
func (c *blockingCollector) Collect(ch chan<- prometheus.Metric) {
	n := c.inFlight.Add(1)
	defer c.inFlight.Add(-1)
	for {
		m := c.most.Load()
		if n <= m || c.most.CompareAndSwap(m, n) {
			break
		}
	}
	<-c.release
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, 1)
}

// TestMetricsScrapesDoNotPileUp: 50 scrapes of each listener's /metrics
// give up while a collector hangs. One gather is ever in flight per
// listener, every scrape ends with its own request, and once the collector
// answers nothing is left running.
func TestMetricsScrapesDoNotPileUp(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := &blockingCollector{desc: prometheus.NewDesc("pacer_test_hanging", "a hanging read", nil, nil), release: make(chan struct{})}
	reg.MustRegister(c)
	h := api.New(api.Options{Registerer: reg})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	op := httptest.NewServer(h.Operator())
	t.Cleanup(op.Close)
	before := runtime.NumGoroutine()

	var wg sync.WaitGroup
	codes := make([]int, 100)
	for i := range codes {
		base := srv.URL
		if i%2 == 1 {
			base = op.URL
		}
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				codes[i] = resp.StatusCode
				_ = resp.Body.Close()
			}
		})
	}
	wg.Wait()
	require.LessOrEqual(t, c.most.Load(), int32(2), "one gather in flight per listener, however many scrapes")
	close(c.release)
	require.Eventually(t, func() bool { return c.inFlight.Load() == 0 }, 10*time.Second, 10*time.Millisecond)
	http.DefaultClient.CloseIdleConnections()
	require.Eventually(t, func() bool { return runtime.NumGoroutine() <= before+4 }, 10*time.Second, 50*time.Millisecond,
		"no goroutines left behind: %d before, %d now", before, runtime.NumGoroutine())

	resp, err := http.Get(op.URL + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Contains(t, string(b), "pacer_test_hanging 1")
}

// The public /metrics is an allowlist (issue 41, item 11): a family added
// later (here one named like a harmless public one) is the operators'
// until it is named public; the allowed families and the runtime's stay.
func TestPublicMetricsServeOnlyTheFamiliesNamedPublic(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	later := prometheus.NewGauge(prometheus.GaugeOpts{Name: "pacer_pacing_new_gauge", Help: "a family added later"})
	m.Registry().MustRegister(later)
	h := api.New(api.Options{Metrics: m.Handler(), Registerer: m.Registry()})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	op := httptest.NewServer(h.Operator())
	t.Cleanup(op.Close)
	scrape := func(base string) string {
		resp, err := http.Get(base + "/metrics")
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return string(b)
	}
	public, operator := scrape(srv.URL), scrape(op.URL)
	require.NotContains(t, public, "pacer_pacing_new_gauge")
	require.Contains(t, operator, "pacer_pacing_new_gauge")
	require.Contains(t, public, "pacer_task_runs_total")
	require.Contains(t, public, "go_goroutines")
	for _, private := range []string{"pacer_task_failures_total", "pacer_upstream_budget_remaining"} {
		if strings.Contains(operator, private+"{") {
			require.NotContains(t, public, private)
		}
	}
}
