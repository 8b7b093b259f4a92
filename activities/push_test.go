package activities_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/pacer-dev/pacer/internal/push"
	"github.com/pacer-dev/pacer/internal/sim"
	"github.com/pacer-dev/pacer/internal/wait"
)

// TestPushIsVerifiedByTheRunInFlight: a push that queues a transaction
// while a sweep run waits for the tail's next read is verified by that
// run at once (Activities.Pushed, rung by push.Listen), not when the
// wait ends or the next run starts: its row is in before the run reads
// any list again.
func TestPushIsVerifiedByTheRunInFlight(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := newChainStack(t, 0)
	sweepOK(t, c.acts) // the first start: readers begun, history visited

	// The next run waits TailEvery for the tail, within its linger.
	c.acts.Discovery.TailEvery, c.acts.Discovery.Linger = 6*time.Second, 7*time.Second
	c.acts.Pushed = &wait.Bell{}
	listening := c.acts.Pushed.C()
	go func() { _ = push.Listen(ctx, c.st, c.acts.Pushed, nil) }()
	<-listening

	at := chainAt.Add(90 * time.Minute)
	var pushed sim.SwapTime
	for _, sw := range c.sim.World().SwapTimes(at) {
		if sw.MinedAt.After(chainAt) {
			pushed = sw
			break
		}
	}
	require.NotEmpty(t, pushed.TxID, "an agent's swap is mined after the first start")
	c.set(at)
	reads := func() int { n := c.counts(); return n["feed"] + n["list"] }
	before := reads()
	core, logs := observer.New(zap.DebugLevel)
	c.acts.Logger = zap.New(core)
	ran := make(chan error, 1)
	go func() { _, err := runSweep(t, c.acts); ran <- err }()
	// The run is in flight, past its look at what is due: it waits for
	// the tail.
	require.Eventually(t, func() bool { return logs.FilterMessage("sweep.waiting").Len() > 0 }, 5*time.Second, 5*time.Millisecond)
	queued, err := c.st.RecordPushed(ctx, pushed.TxID, pushed.Sender)
	require.NoError(t, err)
	require.True(t, queued)
	require.Eventually(t, func() bool {
		var n int
		return c.st.Pool().QueryRow(ctx, `select count(*) from swaps where txid = $1`, pushed.TxID).Scan(&n) == nil && n == 1
	}, 6*time.Second, 20*time.Millisecond, "the run in flight records the push")
	require.Equal(t, before, reads(), "before the run reads a list again")
	require.Empty(t, ran, "the run is still in flight")
	require.NoError(t, <-ran)
	require.Equal(t, 1, logs.FilterMessage("sweep.pushed").Len(), "the push ended its wait")
}
