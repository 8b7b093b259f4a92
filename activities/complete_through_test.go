package activities_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/competition"
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
