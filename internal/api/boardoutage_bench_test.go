//go:build benchboard

package api_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/evidence"
	"github.com/pacer-dev/pacer/internal/testenv"
)

// TestBoardPagesWithPostgresDownOnARealServe is issue 41's "1,000 reads/s
// over distinct leaderboard pages with Postgres stopped: resident memory
// stays within 50 MiB of its start", on a real `pacer serve` process
// (`make bench-board-outage`): a 10,000-agent board computed once, then
// Postgres cut (the process reaches it through a proxy that drops every
// connection), then PACER_BENCH_FLOOD (default 60 s) of 1,000 GETs a
// second, each a distinct page (sort, view, limit, offset), from 1,000
// client addresses (behind a trusted proxy), each within its own limit. The board is stale the whole time:
// before issue 41.9 every distinct page stayed cached until the next
// computation, which never came (~280 MB a minute at 100 reads/s). The
// process's VmRSS is sampled every 250 ms; its growth over the flood is
// the figure.
func TestBoardPagesWithPostgresDownOnARealServe(t *testing.T) {
	flood := 60 * time.Second
	if v, err := time.ParseDuration(os.Getenv("PACER_BENCH_FLOOD")); err == nil && v > 0 {
		flood = v
	}
	const (
		agents = 10_000
		rate   = 1_000 // GETs a second
		conc   = 100
		// clients send the flood, each well within its 120 reads a
		// minute: what grows is the pages, not the client table (100,000
		// clients at most, ~200 bytes each, bounded on its own).
		clients = 1_000
	)
	ctx := context.Background()
	bin := testenv.PacerBinary(t)
	st := testenv.Store(t)
	url := st.Pool().Config().ConnString()
	_, err := st.Pool().Exec(ctx, `
insert into agents (stx_address, display_name)
select 'SPBENCH' || lpad(i::text, 8, '0'), 'Agent ' || i from generate_series(1, $1) i`, agents)
	require.NoError(t, err)
	_, err = st.Pool().Exec(ctx, `
insert into swaps (txid, sender, contract_id, function_name, token_in, amount_in, token_out, amount_out,
                   burn_block_time, tx_status, source)
select '0x' || md5(i::text) || md5((i + 1)::text), 'SPBENCH' || lpad((1 + i % $1)::text, 8, '0'), 'SP1.pool', 'swap',
       'stx', 1000000 + i, 'SP1.token', 2000000 + i, 1778700600::bigint + i * 3, 'success', 'sweep'
from generate_series(0, 3 * $1 - 1) i`, agents)
	require.NoError(t, err)

	pg := testenv.StartPGProxy(t, url)
	addr, admin := freeLocalAddr(t), freeLocalAddr(t)
	serve := exec.Command(bin, "serve")
	serve.Env = []string{"PATH=/usr/bin:/bin", "DATABASE_URL=" + pg.URL, "PACER_HTTP_ADDR=" + addr, "PACER_ADMIN_ADDR=" + admin,
		"TEMPORAL_ADDRESS=127.0.0.1:1", "PACER_TRUSTED_PROXIES=127.0.0.1/32", "PACER_LOG_LEVEL=error"}
	var out strings.Builder
	var outMu sync.Mutex
	serve.Stdout, serve.Stderr = lockedWriter{&out, &outMu}, lockedWriter{&out, &outMu}
	require.NoError(t, serve.Start())
	t.Cleanup(func() { _ = serve.Process.Kill(); _ = serve.Wait() })
	base := "http://" + addr + "/api/competition/leaderboard"

	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: conc}}
	get := func(query, from string) (int, error) {
		req, err := http.NewRequest(http.MethodGet, base+query, nil)
		if err != nil {
			return 0, err
		}
		req.Header.Set("X-Forwarded-For", from)
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	// The board is computed while Postgres is up.
	if !assert.Eventually(t, func() bool {
		code, err := get("?limit=200", "192.0.2.1")
		return err == nil && code == http.StatusOK
	}, time.Minute, 200*time.Millisecond) {
		outMu.Lock()
		defer outMu.Unlock()
		t.Fatalf("pacer serve did not answer the leaderboard; its output:\n%s", out.String())
	}

	// Postgres goes away; once the board's lifetime has passed, its pages
	// are served stale.
	pg.Cut()
	time.Sleep(6 * time.Second) // the board's 5 s lifetime, in real time
	code, err := get("?limit=200&sort=volume", "192.0.2.2")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code, "the stale board is served")

	sorts := []string{"trades", "volume", "pnl", "latest"}
	page := func(i int) string {
		sort, by := sorts[i%4], "address"
		cursor := fmt.Sprintf("%s:%d", sort, (i/8)%9_800)
		if i%8 >= 4 {
			by, cursor = "identity", "identity:"+cursor
		}
		return fmt.Sprintf("?by=%s&sort=%s&limit=%d&cursor=%s", by, sort, 101+(i/8)%100, base64.RawURLEncoding.EncodeToString([]byte(cursor)))
	}
	start := rssKiBOf(t, serve.Process.Pid)
	var peak atomic.Int64
	peak.Store(int64(start))
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if v := int64(rssKiBOf(t, serve.Process.Pid)); v > peak.Load() {
					peak.Store(v)
				}
			}
		}
	}()
	var ok, shed, limited, other, failed atomic.Int64
	began := time.Now()
	total := int(flood.Seconds() * rate)
	var wg sync.WaitGroup
	for w := range conc {
		wg.Go(func() {
			for k := w; k < total; k += conc {
				// Request k leaves at its own time: rate a second in all.
				time.Sleep(time.Until(began.Add(time.Duration(k) * time.Second / rate)))
				c := k % clients
				code, err := get(page(k), fmt.Sprintf("10.0.%d.%d", c>>8&255, c&255))
				switch {
				case err != nil:
					failed.Add(1)
				case code == http.StatusOK:
					ok.Add(1)
				case code == http.StatusServiceUnavailable:
					shed.Add(1)
				case code == http.StatusTooManyRequests:
					limited.Add(1)
				default:
					other.Add(1)
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(began)
	time.Sleep(2 * time.Second) // the last answers' garbage, sampled too
	close(stop)
	<-sampled
	growth := float64(peak.Load()-int64(start)) / 1024
	t.Logf("figures: %d GETs of distinct pages in %s (%.0f a second) with Postgres cut: %d answered 200 (stale board), %d shed 503, %d 429, %d other, %d failed; VmRSS %.1f MiB at the start, peak %.1f MiB",
		total, elapsed.Round(time.Second), float64(total)/elapsed.Seconds(), ok.Load(), shed.Load(), limited.Load(), other.Load(), failed.Load(),
		float64(start)/1024, float64(peak.Load())/1024)
	require.Zero(t, failed.Load(), "every GET answered")
	require.Zero(t, other.Load())
	require.GreaterOrEqual(t, float64(total)/elapsed.Seconds(), 0.9*rate, "the flood kept its rate")
	require.Greater(t, ok.Load(), int64(2*1024), "more distinct pages served than the cache keeps (1,024)")
	evidence.Check(t, "board.outage_rss_growth", growth, evidence.AtMost, 50, "MiB")
}

func rssKiBOf(t *testing.T, pid int) int {
	t.Helper()
	n := vmRSSKiB("/proc/" + strconv.Itoa(pid) + "/status")
	require.Positive(t, n, "the VmRSS of pid %d", pid)
	return n
}

func freeLocalAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().String()
}

// lockedWriter serialises a process's two output streams into one builder.
type lockedWriter struct {
	b  *strings.Builder
	mu *sync.Mutex
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}
