//go:build benchstack

package worker_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/sim"
	"github.com/pacer-dev/pacer/internal/testenv"
	"github.com/pacer-dev/pacer/worker"
	"github.com/pacer-dev/pacer/workflows"
)

// TestHiddenMinuteLimit is the real-stack Hiro budget benchmark (`make
// bench-hidden`, 5 minutes; not part of make test): a `pacer worker`
// configured for 45 requests a minute sweeps a world with hours of work
// against a simulated Hiro that advertises 50 a minute but enforces 30,
// and says so only through ratelimit-remaining. Over five whole minutes of
// Hiro's windows it measures the share of the hidden capacity used and the
// share of requests refused.
func TestHiddenMinuteLimit(t *testing.T) {
	const (
		advertised, hidden, configured = 50, 30, 45
		minutes                        = 5
	)
	ctx := context.Background()
	bin := testenv.PacerBinary(t)
	s := newStack(t, workflows.Config{})
	origin := time.Now().Truncate(time.Second)
	s.sim = sim.New(sim.Config{Seed: 21, Tenero: sim.TeneroConfig{Anonymous: sim.Limits{PerMinute: 1 << 30, PerMonth: 1 << 30}},
		Hiro: sim.HiroConfig{Origin: origin, Agents: 400, History: 24 * time.Hour,
			Anonymous: sim.Limits{PerMinute: advertised, HiddenPerMinute: hidden}}})
	hs := httptest.NewServer(s.sim)
	t.Cleanup(hs.Close)
	s.simU = hs.URL
	require.NoError(t, s.sim.World().Seed(ctx, s.st))
	_, err := worker.EnsureRunning(ctx, s.tc, s.sched)
	require.NoError(t, err)
	s.startProcess(t, bin, "--hiro-base-url", s.simU, "--hiro-per-minute", strconv.Itoa(configured),
		"--competition-start", strconv.FormatInt(s.sim.World().CompetitionStart().Unix(), 10),
		"--discovery", "agents") // per-agent visits have hours of work: they fill the budget

	defer keepSweeping(s)()

	// Measure whole windows of Hiro's: from the first minute boundary
	// after a minute of warm-up to five minutes later.
	from := time.Now().Add(time.Minute).Truncate(time.Minute).Add(time.Minute)
	time.Sleep(time.Until(from))
	before := hiroCounts(s.sim.Stats())
	time.Sleep(time.Until(from.Add(minutes * time.Minute)))
	after := hiroCounts(s.sim.Stats())

	ok, refused, total := after.ok-before.ok, after.refused-before.refused, after.total-before.total
	used := float64(ok) / float64(hidden*minutes)
	share := float64(refused) / float64(max(total, 1))
	t.Logf("figures: Hiro advertises %d/min, enforces %d/min; pacer configured %d/min. Over %d minutes: %d requests, %d answered, %d refused (429): %.1f%% of the hidden capacity used, %.2f%% of requests refused",
		advertised, hidden, configured, minutes, total, ok, refused, 100*used, 100*share)
	require.GreaterOrEqual(t, used, 0.90, "at least 90%% of the hidden capacity used")
	require.LessOrEqual(t, share, 0.02, "at most 2%% of requests refused")
}

type counts struct{ ok, refused, total int }

// hiroCounts adds up the Hiro routes' answers.
func hiroCounts(st sim.Stats) counts {
	var c counts
	for _, route := range []string{sim.HiroAddressTransactionsRoute, sim.HiroPrincipalTransactionsRoute, sim.HiroTxRoute,
		sim.HiroTxMultipleRoute, sim.HiroTxListRoute} {
		r := st.Routes[route]
		c.total += r.Total
		c.refused += r.ByStatus[http.StatusTooManyRequests]
		for code, n := range r.ByStatus {
			if code != http.StatusTooManyRequests {
				c.ok += n
			}
		}
	}
	return c
}
