//go:build benchstack

package worker_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/pacing"
	"github.com/pacer-dev/pacer/internal/sim"
	"github.com/pacer-dev/pacer/internal/testenv"
	"github.com/pacer-dev/pacer/workflows"
)

// coolingDown reports whether the sweep is held back from its cadence:
// its pacing's cooldown, its breaker, a back-off or the budget.
func coolingDown(ts workflows.TaskStatus) bool {
	return ts.Pacing != nil && ts.Pacing.Zone == pacing.ZoneCooldown || ts.Breaker.Open ||
		ts.Waiting == "backoff" || ts.Waiting == "breaker" || ts.Waiting == "budget"
}

// TestFastPathHintWakesACoolingSweep is issue 18's hint case on the real
// stack (`pacer worker` serving the API, the simulator, Postgres): the
// chain's feed fails until the sweep's pacing has cooled it down (the
// status shows its next run far off); the world then mines the busy
// agent's 200 swaps, and a client posts one of them to the fast path. Its
// row's hint wakes the sweep, whose visit of that agent records the other
// 199: they are rows while the status still shows the sweep cooling down,
// before the timer it was waiting for. The feed still fails throughout,
// so only the hinted visit can have found them. `make bench-hint` (not
// part of make test: the sweep's next run after the first start can be
// minutes off, so its failed runs take that long to come).
func TestFastPathHintWakesACoolingSweep(t *testing.T) {
	ctx := context.Background()
	bin := testenv.PacerBinary(t)
	s, clk, w, args := newChainWorldStack(t)
	api := freeAddr(t)
	s.startProcess(t, bin, append(args, "--http", api)...)
	waitForLedger(t, s, w, clk.Now(), 2*time.Minute)

	require.NoError(t, s.sim.SetFaults(sim.Faults{Path: "/extended/v1/tx", ServerError: 1}))
	var timer time.Time
	var runs int64
	// The sweep's next run may be minutes off after the first start (its
	// pacing): its failed runs come then.
	eventually(t, 6*time.Minute, "the sweep cools down, its next run far off", func() bool {
		st, err := statusOrErr(s)
		if err != nil {
			return false
		}
		ts := st.Tasks[pacer.TaskSweep]
		if ts.Running || ts.NextDueAt == nil || !coolingDown(ts) || ts.NextDueAt.Before(time.Now().Add(time.Minute)) {
			return false
		}
		timer, runs = *ts.NextDueAt, ts.Runs
		return true
	})

	clk.Set(worldAt.Add(11 * time.Minute))
	var busy []string
	for _, tx := range w.Transactions() {
		if tx.Case == sim.CaseBusy {
			busy = append(busy, tx.TxID)
		}
	}
	require.Len(t, busy, 200)
	rows := func() int {
		var n int
		require.NoError(t, s.st.Pool().QueryRow(ctx, `select count(*) from swaps where txid = any($1)`, busy).Scan(&n))
		return n
	}
	require.Zero(t, rows(), "the feed fails: nothing has found them yet")

	posted := time.Now()
	resp, err := http.Post("http://"+api+"/api/competition/trades", "application/json",
		strings.NewReader(`{"txid":"`+busy[0]+`"}`))
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "the fast path inserted the row")
	eventually(t, time.Minute, "the hinted visit records the agent's other swaps", func() bool { return rows() == len(busy) })
	took := time.Since(posted)
	ts := s.status(t).Tasks[pacer.TaskSweep]
	require.True(t, time.Now().Before(timer), "before the sweep's timer (%s)", timer)
	require.True(t, coolingDown(ts), "the sweep still cools down: %+v", ts)
	require.Greater(t, ts.Runs, runs, "a woken run found them")
	t.Logf("figures: the sweep cooling down (next run %s away); the fast path's insert to all %d of the agent's swaps recorded by the hinted visit: %s",
		time.Until(timer).Round(time.Minute), len(busy), took.Round(100*time.Millisecond))
}
