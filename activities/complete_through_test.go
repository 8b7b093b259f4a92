package activities_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/competition"
	"github.com/pacer-dev/pacer/internal/sim"
	"github.com/pacer-dev/pacer/internal/store"
)

// completeThrough (SPEC §7) never passes the block time of a swap that is
// not yet recorded: on the simulated chain, with the tail held back (its
// feed answering 503) while swaps keep being mined, every world swap at
// or before completeThrough is in the ledger and those that are not are
// after it; once the tail reads again, completeThrough moves past them.
func TestCompleteThroughWithAReaderHeldBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newChainStack(t, 0)
	sweepOK(t, c.acts)
	c.requireLedger(t, chainAt)
	first, err := c.st.CompleteThrough(ctx)
	require.NoError(t, err)
	require.NotNil(t, first, "every reader has read and every history is read")

	held := func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path == "/extended/v1/tx" || r.URL.Path == "/extended/v1/tx/" {
			w.WriteHeader(http.StatusServiceUnavailable)
			return true
		}
		return false
	}
	c.before.Store(&held)
	at := chainAt.Add(45 * time.Minute)
	c.set(at)
	_, _ = runSweep(t, c.acts) // the tail fails; nothing else is due
	through, err := c.st.CompleteThrough(ctx)
	require.NoError(t, err)
	require.NotNil(t, through)
	require.GreaterOrEqual(t, *through, *first, "never backwards")

	recorded := map[string]bool{}
	rows, err := c.st.Swaps(ctx)
	require.NoError(t, err)
	for _, sw := range rows {
		recorded[sw.TxID] = true
	}
	missing := 0
	for _, sw := range c.sim.World().ExpectedSwaps(at) {
		tm := competition.SwapTime(sw.BlockTime, sw.BurnBlockTime)
		if !recorded[sw.TxID] {
			missing++
			require.Greater(t, tm, *through, "unrecorded swap %s at %d, completeThrough %d", sw.TxID, tm, *through)
		}
	}
	require.Positive(t, missing, "swaps were mined while the tail was held back")
	t.Logf("figures: tail held 45 min: %d swaps unrecorded, completeThrough %s (was %s)", missing,
		time.Unix(*through, 0).UTC().Format(time.TimeOnly), time.Unix(*first, 0).UTC().Format(time.TimeOnly))

	c.before.Store(nil)
	sweepOK(t, c.acts)
	c.requireLedger(t, at)
	after, err := c.st.CompleteThrough(ctx)
	require.NoError(t, err)
	require.Greater(t, *after, *through, "the tail read again: completeThrough moves on")
	for _, sw := range c.sim.World().ExpectedSwaps(at) {
		if tm := competition.SwapTime(sw.BlockTime, sw.BurnBlockTime); tm > *after {
			t.Logf("a swap after completeThrough: %d > %d", tm, *after)
		}
	}
}

// Nobody can freeze completeThrough from outside (issue 38): registered
// agents' transactions pending in the mempool, one of them posted to the
// fast path before completeThrough was ever published and another later,
// hold nothing (once mined they are in blocks no reader has passed), so
// completeThrough is published once the readers have read and keeps
// advancing as they read on. Before, the first kept it null for good.
func TestCompleteThroughIgnoresMempoolTransactions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newChainStack(t, 0)
	// One pending for good from the start; one that waits in the mempool
	// a while later before it is mined (posted to the fast path then).
	var pending []string
	var later *sim.WorldTx
	for _, tx := range c.sim.World().Transactions() {
		switch {
		case tx.Case == sim.CasePending && !tx.AppearsAt.After(chainAt):
			pending = append(pending, tx.TxID)
		case tx.Case == sim.CaseConfirmsLater && tx.AppearsAt.After(chainAt.Add(10*time.Minute)) &&
			tx.SettlesAt.After(tx.AppearsAt.Add(time.Second)) && (later == nil || tx.AppearsAt.Before(later.AppearsAt)):
			later = &tx
		}
	}
	require.NotEmpty(t, pending, "the world has an agent's transaction pending for good")
	require.NotNil(t, later, "the world has an agent's transaction that waits in the mempool")
	out := c.acts.FastVerifier.Verify(ctx, pending[0], competition.SourceAgent)
	require.Equal(t, competition.StatusPending, out.Status, "%+v", out)

	sweepOK(t, c.acts)
	first, err := c.st.CompleteThrough(ctx)
	require.NoError(t, err)
	require.NotNil(t, first, "published once the readers have read, whatever waits in the mempool")
	var rows int
	require.NoError(t, c.st.Pool().QueryRow(ctx, `select count(*) from pending_txs`).Scan(&rows))
	require.Positive(t, rows, "the pending transactions are kept, to be looked at again")

	prev, lapsed := *first, 0
	for _, at := range []time.Time{chainAt.Add(10 * time.Minute), later.AppearsAt.Add(time.Second), later.AppearsAt.Add(15 * time.Minute)} {
		c.set(at)
		if at.Equal(later.AppearsAt.Add(time.Second)) {
			out := c.acts.FastVerifier.Verify(ctx, later.TxID, competition.SourceAgent)
			require.Equal(t, competition.StatusPending, out.Status, "%+v", out)
		}
		sweepOK(t, c.acts)
		through, err := c.st.CompleteThrough(ctx)
		require.NoError(t, err)
		if *through == prev {
			// Held: only by a transaction a reader saw in a block and
			// could not settle (the world's detail that always fails),
			// just before its block, until the hold lapses.
			var held int64
			require.NoError(t, c.st.Pool().QueryRow(ctx, `select min(held_block_time) from pending_txs`).Scan(&held))
			require.Equal(t, held-1, *through, "held by a transaction seen in a block")
			_, err := c.st.Pool().Exec(ctx, `update pending_txs set held_at = held_at - $1::interval`, store.HoldBound+time.Minute)
			require.NoError(t, err)
			sweepOK(t, c.acts)
			require.NoError(t, c.st.Pool().QueryRow(ctx, `select count(*) from pending_txs where hold_lapsed_at is not null`).Scan(&lapsed))
			require.Positive(t, lapsed, "the hold lapsed, reported by the sweep")
			through, err = c.st.CompleteThrough(ctx)
			require.NoError(t, err)
		}
		require.Greater(t, *through, prev, "completeThrough keeps advancing at %s", at.Format(time.TimeOnly))
		prev = *through
	}
	t.Logf("figures: completeThrough %s at the first read, %s at the last, 2 mempool transactions posted, %d hold lapsed",
		time.Unix(*first, 0).UTC().Format(time.TimeOnly), time.Unix(prev, 0).UTC().Format(time.TimeOnly), lapsed)
}
