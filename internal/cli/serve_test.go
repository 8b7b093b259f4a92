package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/internal/testenv"
)

// `pacer serve` against a Temporal frontend that accepts connections and
// never answers (the issue's `dial temporal … context deadline exceeded`):
// it comes up, 100 concurrent status requests all answer within 6 s with at
// most one query in flight, the price API keeps answering from Postgres,
// and readiness tells the API apart from a worker.
func TestServeWithTemporalHanging(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bin := testenv.PacerBinary(t)
	dbURL := testenv.PostgresURL(t)
	st, err := store.Open(ctx, dbURL)
	require.NoError(t, err)
	t.Cleanup(st.Close)
	require.NoError(t, st.Migrate(ctx))
	price := "1.85"
	_, err = st.UpsertPrice(ctx, store.Price{TokenID: "stx", PriceUSD: &price, Source: store.SourceTenero, FetchedAt: time.Now()})
	require.NoError(t, err)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	cmd := exec.Command(bin, "serve", "--http", addr)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir(),
		"TEMPORAL_ADDRESS=" + testenv.HungListener(t), "DATABASE_URL=" + dbURL}
	logFile, err := os.Create(filepath.Join(t.TempDir(), "serve.log"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = logFile.Close() })
	cmd.Stdout, cmd.Stderr = logFile, logFile
	output := func() string { b, _ := os.ReadFile(logFile.Name()); return string(b) }
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	base := "http://" + addr
	started := time.Now()
	poll := time.NewTicker(20 * time.Millisecond)
	defer poll.Stop()
	for up := false; !up; {
		select {
		case err := <-exited:
			t.Fatalf("pacer serve exited (%v) instead of coming up: %s", err, output())
		case <-time.After(20*time.Second - time.Since(started)):
			t.Fatalf("pacer serve did not come up in 20 s: %s", output())
		case <-poll.C:
			code, _ := get(base + "/healthz")
			up = code == http.StatusOK
		}
	}
	upIn := time.Since(started)

	// 100 status requests at once.
	type answer struct {
		code int
		body string
		took time.Duration
	}
	answers := make([]answer, 100)
	var wg sync.WaitGroup
	for i := range answers {
		wg.Go(func() {
			t0 := time.Now()
			code, body := get(base + "/api/scheduler/status")
			answers[i] = answer{code, body, time.Since(t0)}
		})
	}
	wg.Wait()
	var slowest time.Duration
	for _, a := range answers {
		require.Equal(t, http.StatusServiceUnavailable, a.code, a.body)
		require.Contains(t, a.body, `"class":"timeout"`)
		slowest = max(slowest, a.took)
	}
	require.Less(t, slowest, 6*time.Second)

	// Prices answer from Postgres meanwhile; readiness: the API can serve,
	// a worker could not work.
	code, body := get(base + "/api/prices?tokens=stx")
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `"priceUsd":1.85`)
	code, body = get(base + "/api/prices")
	require.Equal(t, http.StatusOK, code, body)
	code, body = get(base + "/readyz")
	require.Equal(t, http.StatusOK, code, body)
	var ready struct {
		Ready  bool              `json:"ready"`
		Checks map[string]string `json:"checks"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &ready))
	require.Equal(t, "ok", ready.Checks["postgres"])
	require.NotEqual(t, "ok", ready.Checks["temporal"])
	code, body = get(base + "/readyz?scope=worker")
	require.Equal(t, http.StatusServiceUnavailable, code, body)

	// The process counts its status queries: the storm made one, and the
	// scrape's own read of the status (the scheduler gauges) joined it.
	_, metrics := get(base + "/metrics")
	queries := metricValue(t, metrics, `pacer_api_fetches_total{what="status"}`)
	require.Equal(t, 1.0, queries, "status queries made by pacer serve")
	require.LessOrEqual(t, metricValue(t, metrics, `pacer_api_fetches_in_flight{what="status"}`), 1.0)

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-exited:
		require.NoError(t, err, output())
	case <-time.After(30 * time.Second):
		t.Fatal("pacer serve did not stop on SIGTERM")
	}
	t.Logf("figures: pacer serve with Temporal hanging: up in %s; 100 concurrent status requests, slowest %s, %v status queries; prices answered from Postgres; /readyz 200, /readyz?scope=worker 503",
		upIn.Round(time.Millisecond), slowest.Round(time.Millisecond), queries)
}

func get(url string) (int, string) {
	c := &http.Client{Timeout: 30 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// metricValue reads one series from Prometheus's text format.
func metricValue(t *testing.T, text, series string) float64 {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			require.NoError(t, err)
			return f
		}
	}
	t.Fatalf("no series %s in /metrics", series)
	return 0
}
