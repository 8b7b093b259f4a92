package worker_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/budget"
	"github.com/pacer-dev/pacer/internal/sim"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/internal/testenv"
	"github.com/pacer-dev/pacer/workflows"
)

// TestFastPathStormDoesNotStarveTheSweep posts 300 made-up txids to the
// fast path of a `pacer worker` from 20 client addresses within a minute,
// on a keyless Hiro budget (45 a minute), while the sweep works through the
// busy agent's 200 new swaps. Every answer comes within 10 s (most are 429
// with Retry-After: the fast path's share is 9 a minute), and the sweep
// keeps its share: its visits of the busy agent go on at the sweep's pace.
func TestFastPathStormDoesNotStarveTheSweep(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bin := testenv.PacerBinary(t)
	s, clk, w := newFeatureWorldStack(t, workflows.Config{})
	start := strconv.FormatInt(w.CompetitionStart().Unix(), 10)

	// The history first, at full speed.
	first, _ := s.startProcess(t, bin, "--hiro-base-url", s.simU, "--hiro-per-minute", "100000", "--competition-start", start,
		"--tail-every", noLinger)
	sweepUntilIdle(t, s)
	require.NoError(t, first.Process.Kill())
	_ = first.Wait()
	// That history was read long ago: its spend is not this minute's.
	_, err := s.st.Pool().Exec(ctx, `delete from upstream_budget_state`)
	require.NoError(t, err)

	// Eleven minutes on: the busy agent's 200 swaps are there to find, on
	// a keyless budget, and the API is up. The world's clock runs now, so
	// that Hiro's minute windows roll.
	clk.Run(worldAt.Add(11 * time.Minute))
	busy := ""
	for _, tx := range w.Transactions() {
		if tx.Case == sim.CaseBusy {
			busy = tx.Sender
		}
	}
	found, err := s.st.HintAgent(ctx, busy)
	require.NoError(t, err)
	require.True(t, found)
	api := freeAddr(t)
	_, out := s.startProcess(t, bin, "--hiro-base-url", s.simU, "--hiro-per-minute", "45",
		"--fastpath-per-minute", "30", "--competition-start", start, "--http", api)
	eventually(t, 30*time.Second, "the API answers", func() bool {
		code, _, err := httpGet("http://" + api + "/healthz")
		return err == nil && code == http.StatusOK
	})
	busySwaps := func() int {
		var n int
		require.NoError(t, s.st.Pool().QueryRow(ctx, `select count(*) from swaps where sender = $1`, busy).Scan(&n))
		return n
	}
	before := busySwaps()

	defer keepSweeping(s)()

	// 20 clients, each from its own loopback address, 15 made-up txids
	// each, one every 3 seconds: 300 within 45 s.
	type answer struct {
		code       int
		retryAfter string
		took       time.Duration
	}
	answers := make([][]answer, 20)
	stormStart := time.Now()
	var clients sync.WaitGroup
	for c := range answers {
		clients.Go(func() {
			ip := net.IPv4(127, 0, 0, byte(c+2))
			hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
				DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: ip}}).DialContext}}
			for i := range 15 {
				time.Sleep(time.Until(stormStart.Add(time.Duration(i)*3*time.Second + time.Duration(c)*100*time.Millisecond)))
				began := time.Now()
				resp, err := hc.Post("http://"+api+"/api/competition/trades", "application/json",
					strings.NewReader(`{"txid":"`+madeUpTxID(t)+`"}`))
				if err != nil {
					t.Errorf("client %d: %v", c, err)
					return
				}
				_ = resp.Body.Close()
				answers[c] = append(answers[c], answer{resp.StatusCode, resp.Header.Get("Retry-After"), time.Since(began)})
			}
		})
	}
	clients.Wait()
	stormTook := time.Since(stormStart)

	codes := map[int]int{}
	slowest := time.Duration(0)
	for _, as := range answers {
		for _, a := range as {
			codes[a.code]++
			slowest = max(slowest, a.took)
			if a.code == http.StatusTooManyRequests {
				secs, err := strconv.Atoi(a.retryAfter)
				require.NoError(t, err, "a 429 carries Retry-After in seconds")
				require.Positive(t, secs)
			}
		}
	}
	t.Logf("figures: 300 requests in %s, answers %v, slowest %s", stormTook.Round(time.Second), codes, slowest.Round(time.Millisecond))
	require.Less(t, stormTook, time.Minute)
	require.Equal(t, 300, codes[http.StatusNotFound]+codes[http.StatusTooManyRequests], "made-up txids: not found, or refused for want of budget: %v\n%s", codes, out.String())
	require.Positive(t, codes[http.StatusTooManyRequests])
	require.Positive(t, codes[http.StatusNotFound])
	require.Less(t, slowest, 10*time.Second, "every answer within 10 s")

	// The fast path kept to its share of every window: at most 9 of 45.
	st, _, err := s.st.SharedBudget(store.UpstreamHiro, budget.Config{PerMinute: 45}).Snapshot(ctx)
	require.NoError(t, err)
	require.LessOrEqual(t, st.FastUsed, int64(9))
	require.LessOrEqual(t, codes[http.StatusNotFound], 9*(int(stormTook/time.Minute)+2))

	// And the sweep was not starved: within the storm's minute and the
	// next, it found the busy agent's swaps at its own pace (36 of every
	// 45 requests, a few of them listing pages).
	eventually(t, 2*time.Minute-time.Since(stormStart), "the sweep kept finding the busy agent's swaps", func() bool {
		return busySwaps()-before >= 45
	})
	t.Logf("figures: the sweep found %d of the busy agent's swaps in %s", busySwaps()-before, time.Since(stormStart).Round(time.Second))
}

func madeUpTxID(t *testing.T) string {
	b := make([]byte, 32)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return "0x" + hex.EncodeToString(b)
}
