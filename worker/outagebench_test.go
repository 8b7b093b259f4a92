//go:build benchstack

package worker_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/sim"
	"github.com/pacer-dev/pacer/internal/testenv"
)

// TestTailOutageBench is issue 18's outage on the real stack, in real
// time (`make bench-outage`; not part of make test): `pacer worker` reads
// the tail of a busy chain (200,000 strangers' calls a day beside 200
// agents' own swaps, the world's clock running at the real clock's pace)
// when Hiro answers nothing but 500s for PACER_BENCH_OUTAGE (default 30
// minutes) while the chain goes on. When Hiro is back the tail is further
// behind than its page bound (PACER_BENCH_MAX_PAGES, default 50 pages of
// 50, against about 85 pages of chain in 30 minutes): the gap must be
// reported (discovery_gaps, the status's open gaps) and then filled (the
// reconciler), and every swap the world mined before, during and after
// the outage must be a row exactly once: 0 missed, 0 doubled.
func TestTailOutageBench(t *testing.T) {
	var (
		outage   = envDuration(t, "PACER_BENCH_OUTAGE", 30*time.Minute)
		maxPages = envInt(t, "PACER_BENCH_MAX_PAGES", 50)
		recovery = envDuration(t, "PACER_BENCH_RECOVERY", 45*time.Minute) // the most the fill may take
	)
	const (
		agents = 200
		volume = 200_000
		settle = 30 * time.Second
	)
	ctx := context.Background()
	bin := testenv.PacerBinary(t)
	s, clk, w := newRunningWorld(t, agents, time.Hour, volume)
	started := time.Now()
	s.startProcess(t, bin, tailBenchArgs(s, w, "--tail-max-pages", strconv.Itoa(maxPages))...)

	eventually(t, 15*time.Minute, "the first start's history visits are done and the tail has begun", func() bool {
		var left int
		return s.st.Pool().QueryRow(ctx, `select count(*) from agent_ingest where last_visit_at is null`).Scan(&left) == nil &&
			left == 0 && tailRow(t, s).found
	})
	time.Sleep(settle)
	m := measureDiscovery(t, s, w, clk, started, time.Now().Add(-settle))
	require.Zero(t, m.missed, "before the outage")
	t.Logf("figures: before the outage (%s of reading): %d swaps, none missed", time.Since(started).Round(time.Second), len(m.delays))

	// Hiro answers nothing but 500s; the chain goes on.
	down := time.Now()
	require.NoError(t, s.sim.SetFaults(sim.Faults{PathPrefix: "/extended/", ServerError: 1}))
	time.Sleep(outage)
	st := s.status(t)
	sw := st.Tasks[pacer.TaskSweep]
	t.Logf("figures: at the outage's end (%s): the sweep %q, next due %v, %d failures in a row, breaker %+v, last error %v",
		outage, sw.Waiting, sw.NextDueAt, st.ConsecutiveFailures[pacer.TaskSweep], sw.Breaker, sw.LastError)
	up := time.Now()
	require.NoError(t, s.sim.SetFaults(sim.Faults{}))
	before := s.sim.Stats()

	gapsOpen := func() (all, open int) {
		require.NoError(t, s.st.Pool().QueryRow(ctx,
			`select count(*), count(*) filter (where filled_at is null) from discovery_gaps where reader = 'tail'`).Scan(&all, &open))
		return all, open
	}
	eventually(t, recovery, "the gap is reported", func() bool {
		all, _ := gapsOpen()
		return all > 0
	})
	reported := time.Since(up)
	eventually(t, time.Minute, "the status reports the tail's gap", func() bool {
		st, err := statusOrErr(s)
		return err == nil && st.LastSweepResult != nil && st.LastSweepResult.Readers["tail"].Gaps > 0
	})
	// The world's oracle is not cheap: looked at every 2 s.
	require.Eventually(t, func() bool {
		_, open := gapsOpen()
		return open == 0 && measureDiscovery(t, s, w, clk, started, up).missed == 0
	}, recovery, 2*time.Second, "the gap is filled and every swap mined until Hiro came back is a row")
	filled := time.Since(up)
	after := s.sim.Stats()
	time.Sleep(settle) // swaps mined since are found by the tail, at its pace
	all := measureDiscovery(t, s, w, clk, started, time.Now().Add(-settle))
	during := measureDiscovery(t, s, w, clk, down, up)
	since := measureDiscovery(t, s, w, clk, up.Add(filled), time.Now().Add(-settle))
	requests := map[string]int{}
	for route, rs := range after.Routes {
		if n := rs.Total - before.Routes[route].Total; n > 0 {
			requests[route] = n
		}
	}
	gaps, _ := gapsOpen()
	t.Logf("figures: Hiro down %s on a chain of %d calls a day: gap reported %s after Hiro was back (%d gap(s)), filled %s after; "+
		"%d swaps mined during the outage, the last found %s after its block; since the fill: %d swaps, p99 %s; "+
		"all %d swaps: missed %d, doubled %d; Hiro requests from its return to the fill %v",
		outage, volume, reported.Round(time.Second), gaps, filled.Round(time.Second), len(during.delays),
		last(during.delays).Round(time.Second), len(since.delays), since.p99.Round(100*time.Millisecond),
		len(all.delays), all.missed, all.doubled, requests)
	require.NotZero(t, len(during.delays), "swaps were mined during the outage")
	require.Zero(t, all.missed)
	require.Zero(t, all.doubled)
}

// last is the last of sorted delays, 0 when none.
func last(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	return ds[len(ds)-1]
}
