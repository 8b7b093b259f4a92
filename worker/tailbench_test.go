//go:build benchstack

package worker_test

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/catalog"
	"github.com/pacer-dev/pacer/internal/evidence"
	"github.com/pacer-dev/pacer/internal/ingest/bench"
	"github.com/pacer-dev/pacer/internal/sim"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/internal/testenv"
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
		agents = 1000
		window = 5 * time.Minute
		settle = 30 * time.Second // swaps mined in the window's last seconds get this long
	)
	ctx := context.Background()
	bin := testenv.PacerBinary(t)
	s, clk, w := newRunningWorld(t, agents, 6*time.Hour, 40_000)
	started := time.Now()
	s.sim.TraceServed(true)
	// Push on, its socket refused: the polling row, and polling as before
	// when Hiro's WebSocket refuses (SPEC §5.0 "Push"); the push rows below.
	require.NoError(t, s.sim.SetFaults(sim.Faults{WSRefused: true}))
	_, out := s.startProcess(t, bin, tailBenchArgs(s, w, "--log-level", "info", "--push", "ws")...)
	keepLog(t, out)

	// The first start: every agent's history, at the budget's pace.
	eventually(t, 15*time.Minute, "the first start's history visits are done", func() bool {
		var left int
		return s.st.Pool().QueryRow(ctx, `select count(*) from agent_ingest where last_visit_at is null`).Scan(&left) == nil && left == 0
	})
	firstStart := time.Since(started)

	// The windows below are wall-clock time on the real stack: the sleeps
	// are the measurement (settle, then count what a window of real time
	// cost), not synchronization.
	from := time.Now()
	before := s.sim.Stats()
	time.Sleep(window)
	until := time.Now()
	after := s.sim.Stats()
	time.Sleep(settle)

	m := measureDiscovery(t, s, w, clk, from, until)
	delays, missed, doubled, mean, p99 := m.delays, m.missed, m.doubled, m.mean, m.p99
	require.NotEmpty(t, delays, "swaps were mined in the window")
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
	tr := s.sim.Traced()
	logLate(t, m, tr)
	logHeads(t, tr, started, from, "the first start")
	logHeads(t, tr, from, until, "the window")
	fs := measureDiscovery(t, s, w, clk, started, from)
	if len(fs.delays) > 0 {
		t.Logf("figures: swaps mined during the first start: %d, discovery delay mean %s p99 %s max %s, missed %d",
			len(fs.delays), fs.mean.Round(100*time.Millisecond), fs.p99.Round(100*time.Millisecond),
			last(fs.delays).Round(100*time.Millisecond), fs.missed)
	}

	// The virtual-time chain benchmark (the service's discovery engine,
	// internal/ingest/bench) in the same world, on the service's allowlist:
	// its figure beside ours.
	vb := chainBenchFigure(agents, 40_000)
	t.Logf("figures: the chain benchmark for the same world (%s, %s, %d calls a day, tail every %s): mean %s p99 %s worst %s, missed %d; the real stack's p99 is %.2f× it",
		vb.World, vb.Budget, vb.Volume, bench.TailEvery, vb.All.Mean.Round(100*time.Millisecond), vb.All.P99.Round(100*time.Millisecond),
		vb.All.Max.Round(100*time.Millisecond), vb.Missed, float64(p99)/float64(vb.All.P99))
	require.Zero(t, missed)
	require.Zero(t, doubled)
	require.Zero(t, fs.missed)
	require.LessOrEqual(t, p99, 2*vb.All.P99, "the real stack's p99 within 2× the chain benchmark's for the same world")
	sockets := len(catalog.Default().Contracts())
	refusedWarnings := strings.Count(out.String(), `"msg":"push.socket_down"`)
	evidence.Check(t, "push.refused.warnings", float64(refusedWarnings), evidence.AtMost, float64(sockets), "count")
	t.Logf("figures: the socket refused %d times while polling; %d warnings (one a socket)", s.sim.WSStats().Refused, refusedWarnings)

	pushRows(t, s, w, clk, window, settle, before, after, minutes)
}

// pushRows are make bench-tail's push rows (SPEC §5.0 "Push", issue 39),
// in the run of the polling row (its window's stats, before and after):
// the socket accepted, every new swap's delay from its block and the
// requests that find transactions a minute; then the socket silenced for
// 90 s with swaps mined meanwhile: every one recorded, and pacer
// subscribed again.
func pushRows(t *testing.T, s *stack, w *sim.World, clk *clock, window, settle time.Duration, pollBefore, pollAfter sim.Stats, pollMinutes float64) {
	t.Helper()
	ctx := context.Background()
	pushState := func() store.PushState {
		st, _, err := s.st.ReadPushState(ctx, 30*time.Second)
		require.NoError(t, err)
		return st
	}
	finding := func(before, after sim.Stats, minutes float64) (float64, map[string]float64) {
		per, total := map[string]float64{}, 0.0
		for route, rs := range after.Routes {
			n := float64(rs.Total - before.Routes[route].Total)
			if n > 0 && strings.HasPrefix(route, "GET /extended") && route != sim.HiroTxMultipleRoute && route != sim.HiroTxRoute {
				per[route] = n / minutes
				total += n / minutes
			}
		}
		return total, per
	}

	polled, _ := finding(pollBefore, pollAfter, pollMinutes)
	require.NoError(t, s.sim.SetFaults(sim.Faults{}))
	accepted := time.Now()
	eventually(t, 2*time.Minute, "push is live once the socket is accepted", func() bool { return pushState().Live })
	t.Logf("figures: push live %s after the socket was accepted", time.Since(accepted).Round(100*time.Millisecond))
	// The readers' reads due before push went live are done by then.
	time.Sleep(settle)

	from, before := time.Now(), s.sim.Stats()
	time.Sleep(window)
	until, after := time.Now(), s.sim.Stats()
	time.Sleep(settle)
	m := measureDiscovery(t, s, w, clk, from, until)
	require.NotEmpty(t, m.delays, "swaps were mined in the push window")
	perMinute, per := finding(before, after, until.Sub(from).Minutes())
	multiple := float64(after.Routes[sim.HiroTxMultipleRoute].Total-before.Routes[sim.HiroTxMultipleRoute].Total) / until.Sub(from).Minutes()
	t.Logf("figures: push on, window %s: %d swaps mined, delay mean %s p99 %s max %s; missed %d, doubled %d; requests that find transactions %.2f a minute %v (polling %.2f), tx/multiple %.1f a minute",
		window, len(m.delays), m.mean.Round(100*time.Millisecond), m.p99.Round(100*time.Millisecond), last(m.delays).Round(100*time.Millisecond),
		m.missed, m.doubled, perMinute, per, polled, multiple)
	logLate(t, m, s.sim.Traced())
	logPushStages(t, m, s.sim.Traced())
	evidence.Check(t, "push.tail.p99", m.p99.Seconds(), evidence.AtMost, 3, "s")
	evidence.Check(t, "push.tail.finding_per_min", perMinute, evidence.AtMost, 3, "per_min")
	evidence.Check(t, "push.tail.missed", float64(m.missed), evidence.Exactly, 0, "count")
	evidence.Check(t, "push.tail.doubled", float64(m.doubled), evidence.Exactly, 0, "count")

	// Silenced 90 s: nothing closes, nothing comes.
	reconnects := pushState().Reconnects
	require.NoError(t, s.sim.SetFaults(sim.Faults{WSSilent: true}))
	sfrom := time.Now()
	time.Sleep(90 * time.Second)
	require.NoError(t, s.sim.SetFaults(sim.Faults{}))
	suntil := time.Now()
	eventually(t, 3*time.Minute, "subscribed again after the silence", func() bool {
		st := pushState()
		return st.Live && st.Reconnects > reconnects
	})
	resubscribed := time.Since(suntil)
	time.Sleep(settle)
	sm := measureDiscovery(t, s, w, clk, sfrom, suntil)
	require.NotEmpty(t, sm.delays, "swaps were mined in the silence")
	t.Logf("figures: socket silenced 90 s: %d swaps mined meanwhile, delay mean %s p99 %s max %s, missed %d, doubled %d; live again %s after the silence ended (%d reconnects)",
		len(sm.delays), sm.mean.Round(100*time.Millisecond), sm.p99.Round(100*time.Millisecond), last(sm.delays).Round(100*time.Millisecond),
		sm.missed, sm.doubled, resubscribed.Round(100*time.Millisecond), pushState().Reconnects-reconnects)
	evidence.Check(t, "push.silent.missed", float64(sm.missed), evidence.Exactly, 0, "count")
	evidence.Check(t, "push.silent.doubled", float64(sm.doubled), evidence.Exactly, 0, "count")
	evidence.Check(t, "push.silent.resubscribed", resubscribed.Seconds(), evidence.AtMost, 90, "s")
}

// keepLog writes the worker's log to $PACER_BENCH_LOG when the test ends,
// so that a figure can be traced to what the sweep decided.
func keepLog(t *testing.T, out *syncBuffer) {
	t.Helper()
	path := os.Getenv("PACER_BENCH_LOG")
	if path == "" {
		return
	}
	t.Cleanup(func() {
		if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
			t.Logf("keep the worker's log: %v", err)
		}
	})
}

// chainBenchFigure is the chain benchmark's result (virtual time, the
// service's discovery engine) for a world of agents and volume strangers'
// calls a day on the keyed plan of 450 requests a minute, as make bench
// computes it.
func chainBenchFigure(agents, volume int) bench.Result {
	var keyed bench.Budget
	for _, b := range bench.Budgets {
		if b.PerMinute == benchPacerPerMinute && b.Month == 0 {
			keyed = b
		}
	}
	rep := bench.RunChain(bench.ChainOptions{Sizes: []int{agents}, Volumes: []int{volume},
		Budgets: []bench.Budget{keyed}, Horizon: 48 * time.Hour, Tails: []bench.Strategy{bench.ServiceTail}})
	return rep.Results[0]
}

// logHeads logs how far apart the tail's reads of the feed's head were
// in [from, until).
func logHeads(t *testing.T, tr sim.Trace, from, until time.Time, what string) {
	t.Helper()
	var heads []time.Time
	for _, h := range tr.Heads {
		if !h.Before(from) && h.Before(until) {
			heads = append(heads, h)
		}
	}
	var gaps []time.Duration
	for i := 1; i < len(heads); i++ {
		gaps = append(gaps, heads[i].Sub(heads[i-1]))
	}
	if len(gaps) == 0 {
		return
	}
	slices.Sort(gaps)
	t.Logf("figures: during %s the feed's head was read %d times, the first %s in, apart: median %s, p99 %s, max %s", what, len(heads),
		heads[0].Sub(from).Round(100*time.Millisecond), gaps[len(gaps)/2].Round(100*time.Millisecond),
		gaps[len(gaps)*99/100].Round(100*time.Millisecond), gaps[len(gaps)-1].Round(100*time.Millisecond))
}

// logLate logs where the latest swaps' delays went, by the simulator's
// trace: when the feed first served each, when its details were fetched,
// its row.
func logLate(t *testing.T, m discoveryMeasure, tr sim.Trace) {
	t.Helper()
	at := func(ts time.Time, ok bool, since time.Time) string {
		if !ok {
			return "never"
		}
		return "+" + ts.Sub(since).Round(100*time.Millisecond).String()
	}
	for _, l := range m.late {
		f, fok := tr.Feed[l.TxID]
		mu, mok := tr.Multiple[l.TxID]
		d, dok := tr.Detail[l.TxID]
		p, pok := tr.Pushed[l.TxID]
		t.Logf("late swap %s (height %d): mined %s, pushed %s, feed %s, tx/multiple %s, tx/{id} %s, row %s",
			l.TxID[:10], l.Height, l.mined.Format("15:04:05.000"), at(p, pok, l.mined), at(f, fok, l.mined), at(mu, mok, l.mined),
			at(d, dok, l.mined), at(l.row, true, l.mined))
	}
}

// logPushStages logs where a pushed swap's delay goes, by the
// simulator's trace, over every swap measured: from its block to the
// socket's message, from the message to its details' request
// (tx/multiple: the push queued, the sweep woken or already running, the
// plan's Verify), and from that request to its row.
func logPushStages(t *testing.T, m discoveryMeasure, tr sim.Trace) {
	t.Helper()
	var sent, verify, row []time.Duration
	unpushed := 0
	for _, l := range m.all {
		p, pok := tr.Pushed[l.TxID]
		mu, mok := tr.Multiple[l.TxID]
		if !pok || !mok || mu.Before(p) {
			unpushed++ // found by a reader, or fetched before the push
			continue
		}
		sent, verify, row = append(sent, p.Sub(l.mined)), append(verify, mu.Sub(p)), append(row, l.row.Sub(mu))
	}
	q := func(ds []time.Duration) string {
		if len(ds) == 0 {
			return "-"
		}
		slices.Sort(ds)
		return fmt.Sprintf("p50 %s p99 %s max %s", ds[len(ds)/2].Round(10*time.Millisecond),
			ds[min(len(ds)-1, len(ds)*99/100)].Round(10*time.Millisecond), ds[len(ds)-1].Round(10*time.Millisecond))
	}
	t.Logf("figures: push stages over %d swaps (%d not by a push): block to message %s; message to tx/multiple %s; tx/multiple to row %s",
		len(sent), unpushed, q(sent), q(verify), q(row))
}

// discoveryMeasure is what the ledger shows of the swaps the world mined
// in a window of real time: each one's delay from its block's time to its
// row's inserted_at (sorted), how many have no row (missed), and rows the
// world does not have (doubled).
type discoveryMeasure struct {
	delays          []time.Duration
	mean, p99       time.Duration
	missed, doubled int
	// late are the swaps whose delay is above p99's neighbourhood: for
	// the figures' log; all are every measured swap, latest first.
	late, all []lateSwap
}

type lateSwap struct {
	sim.SwapTime
	mined, row time.Time
}

// measureDiscovery reads the swaps table against the world's own mining
// times (sim.World.SwapTimes, the oracle's), for the swaps mined in
// [from, until] of real time; clk is the world's clock, running from its
// origin at the real clock's pace.
func measureDiscovery(t *testing.T, s *stack, w *sim.World, clk *clock, from, until time.Time) discoveryMeasure {
	t.Helper()
	ctx := context.Background()
	now := clk.Now()
	real := func(simAt time.Time) time.Time { return time.Now().Add(simAt.Sub(clk.Now())) }
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
	var m discoveryMeasure
	expected := map[string]bool{}
	var measured []lateSwap
	for _, sw := range w.SwapTimes(now) {
		expected[sw.TxID] = true
		mined := real(sw.MinedAt)
		if mined.Before(from) || mined.After(until) {
			continue
		}
		at, ok := rows[sw.TxID]
		if !ok {
			m.missed++
			continue
		}
		m.delays = append(m.delays, max(0, at.Sub(mined)))
		measured = append(measured, lateSwap{SwapTime: sw, mined: mined, row: at})
	}
	for id := range rows {
		if !expected[id] {
			m.doubled++ // a row the world does not have
		}
	}
	if len(m.delays) == 0 {
		return m
	}
	slices.Sort(m.delays)
	for _, d := range m.delays {
		m.mean += d
	}
	m.mean /= time.Duration(len(m.delays))
	m.p99 = m.delays[min(len(m.delays)-1, len(m.delays)*99/100)]
	slices.SortFunc(measured, func(a, b lateSwap) int { return cmp.Compare(b.row.Sub(b.mined), a.row.Sub(a.mined)) })
	m.late, m.all = measured[:min(len(measured), 5)], measured
	return m
}

// The real-stack discovery benchmarks' plan: Hiro allows 500 requests a
// minute, pacer is configured 450.
const (
	benchHiroPerMinute  = 500
	benchPacerPerMinute = 450
)

// newRunningWorld is a stack over a world whose clock runs from now at the
// real clock's pace (seed 18): agents with activity tiers and history of
// their past, swaps arriving as the clock runs, strangers' calls volume a
// day on the chain, on Hiro's plan; its agents seeded and the scheduler
// running with a sweep every 10 s.
func newRunningWorld(t *testing.T, agents int, history time.Duration, volume int) (*stack, *clock, *sim.World) {
	t.Helper()
	s := newStack(t, workflows.Config{SweepEvery: pacer.Duration(10 * time.Second)})
	origin := time.Now().Truncate(time.Second)
	clk := &clock{}
	clk.Run(origin)
	s.sim = sim.New(sim.Config{Seed: 18, Now: clk.Now, Tenero: sim.TeneroConfig{Anonymous: sim.Limits{PerMinute: 1 << 30, PerMonth: 1 << 30}},
		Hiro: sim.HiroConfig{Origin: origin, Agents: agents, History: history, Arrivals: time.Hour, Activity: true,
			Anonymous: sim.Limits{PerMinute: benchHiroPerMinute, PerMonth: 1 << 30}, Chain: sim.ChainConfig{Volume: volume}}})
	w := serveWorld(t, s)
	return s, clk, w
}

// tailBenchArgs are `pacer worker`'s flags in the real-stack discovery
// benchmarks: the tail every 10 s, a sweep run every 10 s, the plan's
// budget; extra come last.
func tailBenchArgs(s *stack, w *sim.World, extra ...string) []string {
	return append([]string{"--hiro-base-url", s.simU, "--hiro-per-minute", strconv.Itoa(benchPacerPerMinute),
		"--competition-start", strconv.FormatInt(w.CompetitionStart().Unix(), 10),
		"--discovery", "tail", "--tail-every", "10s", "--sweep-every", "10s"}, extra...)
}
