package bench

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/discovery"
	simulator "github.com/pacer-dev/pacer/internal/sim"
)

// TestPushFindsEverySwapAtOnce: a day of 2,000 agents on the service's
// allowlist, keyless, Hiro's WebSocket live. Every measured swap is
// found, by a push or the tail, within seconds of its block (the push's
// delay, a hinted start, a request; a batch's gap when the window is
// short); the tail reads at the
// reconciling cadence, not every TailEvery as polling does; and the
// Verify step's batches cost at most one request for each block with a
// swap in it.
func TestPushFindsEverySwapAtOnce(t *testing.T) {
	t.Parallel()
	w := NewWorld("w", 2_000, 11, start, start.Add(24*time.Hour))
	c := NewChain(w, ServiceAllowlist, 40_000, 11)
	from, to := start.Add(time.Hour), w.End.Add(-time.Hour)
	push := Simulate(w, c, Budgets[0], ServicePush, from, to)
	require.Positive(t, push.All.N)
	require.Zero(t, push.NeverFound, "%+v", push)
	require.Zero(t, push.Missed, "%+v", push)
	// At once while the window has room for a read beside them; after
	// the reconciler's round has spent it, a batch a request at the 20%
	// of the rate the tail leaves (6.7 s on 45 a minute).
	gap := time.Duration(float64(time.Minute) / (float64(Budgets[0].PerMinute) * (1 - discovery.TailShare)))
	require.LessOrEqual(t, push.All.P99, PushDelay+gap+2*time.Second, "%+v", push)
	require.LessOrEqual(t, push.All.Mean, PushDelay+time.Second, "%+v", push)
	require.Zero(t, push.Refused)

	day := w.End.Sub(w.Start)
	reconciling := int(day / discovery.DefaultReconcileEvery)
	require.InDelta(t, reconciling, push.TailReads, float64(reconciling)/5, "the tail at its reconciling cadence")
	poll := Simulate(w, c, Budgets[0], ServiceTail, from, to)
	require.Greater(t, poll.TailReads, 20*push.TailReads, "polling reads the tail every %s", TailEvery)
	require.Less(t, push.PerDay(ReaderTail), poll.PerDay(ReaderTail)/5)

	blocks := map[time.Time]bool{}
	for _, a := range w.Agents {
		for _, tx := range a.Txs {
			if tx.Swap {
				blocks[simulator.BlockOf(tx.At)] = true
			}
		}
	}
	require.Positive(t, push.Requests[ReaderDetails])
	require.LessOrEqual(t, push.Requests[ReaderDetails], len(blocks), "a batch a block at most")
}

// TestPushUnderTheMonthFindsEverySwap: two days of 1,000 agents on a
// chain of 200,000 calls a day, the month-capped plan, push live: polling
// alone takes about 24 minutes at p99 on the service's 40 contracts
// (docs/discovery.md), pushes find every swap within the 5 minutes, and
// the month is never dry.
func TestPushUnderTheMonthFindsEverySwap(t *testing.T) {
	t.Parallel()
	w := NewWorld("w", 1_000, 5, start, start.Add(48*time.Hour))
	c := NewChain(w, ServiceAllowlist, 200_000, 5)
	r := Simulate(w, c, Budgets[2], ServicePush, start.Add(3*time.Hour), w.End.Add(-time.Hour))
	require.Positive(t, r.All.N)
	require.Zero(t, r.NeverFound, "%+v", r)
	require.LessOrEqual(t, r.All.P99, 5*time.Minute, "%+v", r)
	require.Nil(t, r.DryAfter)
}

// TestPushWaitsForNothing: the sim's push model on its own. A push is
// queued only while the ledger lacks the swap, the hint of one arriving
// between runs starts a run at once (a schedule.HintGap after the last
// start at the earliest), and a run's wait ends at the next push.
func TestPushWaitsForNothing(t *testing.T) {
	t.Parallel()
	w := &World{Start: start, End: start.Add(time.Hour), Agents: []AgentSpec{{Txs: []Tx{
		{At: start.Add(10 * time.Second), Swap: true},
		{At: start.Add(20 * time.Second), Swap: false},
		{At: start.Add(30 * time.Minute), Swap: true},
	}}}}
	c := NewChain(w, ServiceAllowlist, 10_000, 1)
	x := &sim{w: w, c: c, s: ServicePush, found: [][]time.Time{make([]time.Time, 3)}, byTail: [][]bool{make([]bool, 3)}}
	first, last := simulator.BlockOf(w.Agents[0].Txs[0].At), simulator.BlockOf(w.Agents[0].Txs[2].At)

	x.runBegan = start
	require.Equal(t, first.Add(PushDelay), x.bell(start, start.Add(time.Minute)), "a wait ends at the push")
	x.deliver(first.Add(PushDelay))
	require.Len(t, x.pending, 1)
	require.Equal(t, first.Add(PushDelay), x.hinted, "a push during the run hints the next")
	// The run goes on (its wait ended) and ends: the next starts at once,
	// not at its cadence.
	ended := first.Add(3 * time.Second)
	require.Equal(t, ended, x.hintedStart(start, ended, start.Add(time.Minute)))
	x.pending = nil

	// Between runs, the next push wakes a run before its cadence; one
	// the ledger holds already wakes none.
	x.runBegan, x.hinted = start.Add(time.Minute), time.Time{}
	at := x.hintedStart(x.runBegan, x.runBegan.Add(time.Second), x.runBegan.Add(59*time.Minute))
	require.Equal(t, last.Add(PushDelay), at)
	x.found[0][2] = last
	require.Equal(t, x.runBegan.Add(59*time.Minute), x.hintedStart(x.runBegan, x.runBegan.Add(time.Second), x.runBegan.Add(59*time.Minute)))
	x.deliver(w.End)
	require.Empty(t, x.pending, "a push of a swap the ledger holds is not queued")
}
