//go:build benchstack

package worker_test

import (
	"context"
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

// TestSunsetPushBench (make bench-sunset-push): Hiro's v9 sunset answers
// on (the contracts' own lists are the only reader), 1,000 agents beside
// 40,000 strangers' calls a day, the clock running at the real pace: every
// new swap's delay from its block to its row, with push off (within 30 s)
// and with push on (within 3 s), issue 39's done-when.
func TestSunsetPushBench(t *testing.T) {
	for _, tc := range []struct {
		push  string
		bound float64
	}{{"off", 30}, {"ws", 3}} {
		t.Run("push-"+tc.push, func(t *testing.T) {
			const window, settle = 3 * time.Minute, 40 * time.Second
			ctx := context.Background()
			bin := testenv.PacerBinary(t)
			s := newStack(t, workflows.Config{SweepEvery: pacer.Duration(10 * time.Second)})
			origin := time.Now().Truncate(time.Second)
			clk := &clock{}
			clk.Run(origin)
			unlimited := sim.Limits{PerMinute: 1 << 30, PerMonth: 1 << 30}
			s.sim = sim.New(sim.Config{Seed: 18, Now: clk.Now, Tenero: sim.TeneroConfig{Anonymous: unlimited},
				Hiro: sim.HiroConfig{Origin: origin, Agents: 1000, History: 6 * time.Hour, Arrivals: time.Hour, Activity: true, Sunset: true,
					Anonymous: sim.Limits{PerMinute: benchHiroPerMinute, PerMonth: 1 << 30}, Chain: sim.ChainConfig{Volume: 40_000}}})
			w := serveWorld(t, s)
			s.sim.TraceServed(true)
			_, out := s.startProcess(t, bin, "--hiro-base-url", s.simU, "--hiro-per-minute", strconv.Itoa(benchPacerPerMinute),
				"--competition-start", strconv.FormatInt(w.CompetitionStart().Unix(), 10),
				"--discovery", "tail", "--tail-every", "10s", "--sweep-every", "10s", "--push", tc.push)
			keepLog(t, out)
			eventually(t, 15*time.Minute, "the first start's history visits are done", func() bool {
				var left int
				return s.st.Pool().QueryRow(ctx, `select count(*) from agent_ingest where last_visit_at is null`).Scan(&left) == nil && left == 0
			})
			if tc.push == "ws" {
				eventually(t, 2*time.Minute, "push is live", func() bool {
					st, _, err := s.st.ReadPushState(ctx, 30*time.Second)
					return err == nil && st.Live
				})
			}
			// Real-time windows: the sleep is what is measured, not a wait.
			time.Sleep(settle)
			from := time.Now()
			time.Sleep(window)
			until := time.Now()
			time.Sleep(settle)
			m := measureDiscovery(t, s, w, clk, from, until)
			require.NotEmpty(t, m.delays)
			t.Logf("figures: sunset answers, push %s, window %s: %d swaps mined, delay mean %s p99 %s max %s; missed %d, doubled %d",
				tc.push, window, len(m.delays), m.mean.Round(100*time.Millisecond), m.p99.Round(100*time.Millisecond),
				last(m.delays).Round(100*time.Millisecond), m.missed, m.doubled)
			logLate(t, m, s.sim.Traced())
			if tc.push == "ws" {
				evidence.Check(t, "push.sunset.ws.max", last(m.delays).Seconds(), evidence.AtMost, tc.bound, "s")
			} else {
				evidence.Check(t, "push.sunset.off.max", last(m.delays).Seconds(), evidence.AtMost, tc.bound, "s")
			}
			evidence.Check(t, "push.sunset.missed", float64(m.missed), evidence.Exactly, 0, "count")
		})
	}
}
