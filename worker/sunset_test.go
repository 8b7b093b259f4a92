package worker_test

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/evidence"
	"github.com/pacer-dev/pacer/internal/sim"
	"github.com/pacer-dev/pacer/internal/testenv"
	"github.com/pacer-dev/pacer/workflows"
)

// TestSunsetFromTheStart: a `pacer worker` against a Hiro with the v9
// sunset answers on from the start (every deprecated route answers 410):
// a first start records every swap of the agents' histories, new swaps
// land within 30 s, and after the first sunset answer no request reaches
// a deprecated route again. 100 agents beside 40,000 strangers' calls a
// day in make test (200 outlasted its 10-minute first start under make
// test's own load); the same at 1,000 agents is
// TestSunsetFromTheStartAtScale (make evidence: its first start alone took
// 7 minutes of make test's ten under -race) (docs/reliability.md).
func TestSunsetFromTheStart(t *testing.T) {
	t.Parallel()
	runSunset(t, 100)
}

func runSunset(t *testing.T, agents int) {
	t.Helper()
	bin := testenv.PacerBinary(t)
	s := newStack(t, workflows.Config{SweepEvery: pacer.Duration(2 * time.Second), HeartbeatTimeout: pacer.Duration(5 * time.Second)})
	clk := &clock{now: worldAt}
	unlimited := sim.Limits{PerMinute: 1 << 30, PerMonth: 1 << 30}
	s.sim = sim.New(sim.Config{Seed: 26, Now: clk.Now, Tenero: sim.TeneroConfig{Anonymous: unlimited},
		Hiro: sim.HiroConfig{Origin: worldAt, Agents: agents, Anonymous: unlimited, Sunset: true,
			Chain: sim.ChainConfig{Volume: 40_000}}})
	w := serveWorld(t, s)
	s.startProcess(t, bin, "--hiro-base-url", s.simU, "--hiro-per-minute", "100000",
		"--competition-start", strconv.FormatInt(w.CompetitionStart().Unix(), 10),
		"--discovery", "tail", "--tail-every", "1s", "--sweep-every", "2s")

	began := time.Now()
	waitForLedger(t, s, w, clk.Now(), 10*time.Minute)
	t.Logf("figures: first start of %d agents: %d swaps recorded in %s", agents, len(w.ExpectedSwaps(clk.Now())), time.Since(began).Round(time.Second))

	var slowest time.Duration
	for _, later := range []time.Duration{10 * time.Minute, 40 * time.Minute, 90 * time.Minute} {
		at := worldAt.Add(later)
		arrived := len(w.ExpectedSwaps(at)) - len(w.ExpectedSwaps(clk.Now()))
		clk.Set(at)
		began := time.Now()
		waitForLedger(t, s, w, at, 30*time.Second)
		took := time.Since(began)
		slowest = max(slowest, took)
		t.Logf("figures: %d new swaps (%s of the chain) recorded in %s", arrived, later, took.Round(100*time.Millisecond))
	}

	st := s.sim.Stats()
	deprecated := 0
	for _, route := range sim.SunsetRoutes {
		n := st.Routes[route].Total
		require.Equal(t, n, st.Count(route, http.StatusGone), "%s: every answer was the sunset's", route)
		require.LessOrEqual(t, n, 1, "%s: asked again after its sunset answer", route)
		deprecated += n
	}
	evidence.Check(t, "sunset.deprecated_requests", float64(deprecated), evidence.AtMost, float64(len(sim.SunsetRoutes)), "count")
	t.Logf("figures: %d requests to deprecated routes (their sunset answers), %d to v3 principals, %d to tx/multiple; slowest new swaps %s",
		deprecated, st.Routes[sim.HiroPrincipalTransactionsRoute].Total, st.Routes[sim.HiroTxMultipleRoute].Total, slowest.Round(100*time.Millisecond))
	eventually(t, time.Minute, "the status names the tail's source", func() bool {
		status, err := statusOrErr(s)
		return err == nil && status.LastSweepResult != nil && status.LastSweepResult.Readers["tail"].Source == "contracts"
	})
}
