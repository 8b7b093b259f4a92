//go:build benchstack

package worker_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/sim"
	"github.com/pacer-dev/pacer/internal/testenv"
	"github.com/pacer-dev/pacer/worker"
	"github.com/pacer-dev/pacer/workflows"
)

// TestTailBench is the real-stack discovery benchmark (`make bench-tail`;
// not part of make test): `pacer worker` (which serves the API too) reads
// the chain's tail of a simulated world of 1,000 agents, a tenth of them
// trading, beside strangers' traffic of 40,000 calls a day, on a keyed
// plan of 450 requests a minute (Hiro 500). Once the first start's history
// visits are over it measures, for every swap mined in a window of
// minutes, the delay from its block's time to its row, and Hiro's
// requests a minute by route; none may be missed or doubled.
func TestTailBench(t *testing.T) {
	const (
		agents  = 1000
		window  = 5 * time.Minute
		settle  = 30 * time.Second // swaps mined in the window's last seconds get this long
		perMin  = 450
		hiroMin = 500
	)
	ctx := context.Background()
	bin := testenv.PacerBinary(t)
	s := newStack(t, workflows.Config{SweepEvery: pacer.Duration(10 * time.Second)})
	origin := time.Now().Truncate(time.Second)
	clk := &clock{}
	clk.Run(origin)
	s.sim = sim.New(sim.Config{Seed: 18, Now: clk.Now, Tenero: sim.TeneroConfig{Anonymous: sim.Limits{PerMinute: 1 << 30, PerMonth: 1 << 30}},
		Hiro: sim.HiroConfig{Origin: origin, Agents: agents, History: 6 * time.Hour, Arrivals: time.Hour, Activity: true,
			Anonymous: sim.Limits{PerMinute: hiroMin, PerMonth: 1 << 30}, Chain: sim.ChainConfig{Volume: 40_000}}})
	hs := httptest.NewServer(s.sim)
	t.Cleanup(hs.Close)
	s.simU = hs.URL
	w := s.sim.World()
	require.NoError(t, w.Seed(ctx, s.st))
	_, err := worker.EnsureRunning(ctx, s.tc, s.sched)
	require.NoError(t, err)
	started := time.Now()
	s.startProcess(t, bin, "--hiro-base-url", s.simU, "--hiro-per-minute", strconv.Itoa(perMin),
		"--competition-start", strconv.FormatInt(w.CompetitionStart().Unix(), 10),
		"--discovery", "tail", "--tail-every", "10s", "--sweep-every", "10s")

	// The first start: every agent's history, at the budget's pace.
	eventually(t, 15*time.Minute, "the first start's history visits are done", func() bool {
		var left int
		return s.st.Pool().QueryRow(ctx, `select count(*) from agent_ingest where last_visit_at is null`).Scan(&left) == nil && left == 0
	})
	firstStart := time.Since(started)

	from := time.Now()
	before := s.sim.Stats()
	time.Sleep(window)
	until := time.Now()
	after := s.sim.Stats()
	time.Sleep(settle)

	// The oracle's mining times, on the real clock (the simulator's runs
	// on from origin at the real clock's pace).
	real := func(simAt time.Time) time.Time { return from.Add(simAt.Sub(clk.Now().Add(-time.Since(from)))) }
	var delays []time.Duration
	missed, doubled := 0, 0
	rows := map[string]time.Time{}
	r, err := s.st.Pool().Query(ctx, `select txid, inserted_at from swaps`)
	require.NoError(t, err)
	for r.Next() {
		var id string
		var at time.Time
		require.NoError(t, r.Scan(&id, &at))
		rows[id] = at
	}
	require.NoError(t, r.Err())
	expected := map[string]bool{}
	for _, sw := range w.SwapTimes(clk.Now()) {
		expected[sw.TxID] = true
		mined := real(sw.MinedAt)
		if mined.Before(from) || mined.After(until) {
			continue
		}
		at, ok := rows[sw.TxID]
		if !ok {
			missed++
			continue
		}
		delays = append(delays, max(0, at.Sub(mined)))
	}
	for id := range rows {
		if !expected[id] {
			doubled++ // a row the world does not have
		}
	}
	require.NotEmpty(t, delays, "swaps were mined in the window")
	slices.Sort(delays)
	mean := time.Duration(0)
	for _, d := range delays {
		mean += d
	}
	mean /= time.Duration(len(delays))
	p99 := delays[min(len(delays)-1, len(delays)*99/100)]
	minutes := until.Sub(from).Minutes()
	perRoute := map[string]float64{}
	total := 0.0
	for route, rs := range after.Routes {
		n := float64(rs.Total - before.Routes[route].Total)
		if n > 0 && route[:4] == "GET " && (len(route) > 13 && route[4:13] == "/extended") {
			perRoute[route] = n / minutes
			total += n / minutes
		}
	}
	t.Logf("figures: first start (1,000 agents' histories) %s; window %s: %d swaps mined, discovery delay mean %s p99 %s max %s; missed %d, doubled %d; Hiro %.1f requests a minute %s",
		firstStart.Round(time.Second), window, len(delays), mean.Round(100*time.Millisecond), p99.Round(100*time.Millisecond),
		delays[len(delays)-1].Round(100*time.Millisecond), missed, doubled, total, fmt.Sprint(perRoute))
	require.Zero(t, missed)
	require.Zero(t, doubled)
}
