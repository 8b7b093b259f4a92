//go:build roundstack

package worker_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/actor"
	"github.com/pacer-dev/pacer/internal/competition"
	"github.com/pacer-dev/pacer/internal/operate"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/worker"
	"github.com/pacer-dev/pacer/workflows"
)

// A round ending two minutes after the worker starts finalizes itself on
// the real stack (Temporal dev server, Postgres, the worker's activities,
// revision 3's finalize task): added through the operation the CLI and the
// admin API run (which wakes finalize), invisible until final, not
// finalized past its grace while completeThrough is behind its end (status
// says it waits for completeThrough and by how much), finalized within two
// minutes once completeThrough reaches the end, its results the ones
// computed here from SPEC §13, a swap after the end not counted.
//
// completeThrough is held and released by the test (the kept value, no
// reader), standing for the readers held back and resumed; the readers'
// own part is TestCompleteThroughIgnoresMempoolTransactions and
// TestCompleteThroughWithAReaderHeldBack (activities).
//
//	make rounds-check
func TestRoundFinalizesItselfOnTheRealStack(t *testing.T) {
	ctx := context.Background()
	s := newStack(t, workflows.Config{TeneroEvery: pacer.Duration(time.Hour), SweepEvery: pacer.Duration(time.Hour)})
	exec := func(sql string, args ...any) {
		t.Helper()
		_, err := s.st.Pool().Exec(ctx, sql, args...)
		require.NoError(t, err)
	}
	started := time.Now().UTC().Truncate(time.Second)
	start, end := started.Add(-time.Hour), started.Add(2*time.Minute)
	const grace = 30 * time.Second
	exec(`insert into competition_state (key, value) values ('complete_through', $1)`, fmt.Sprint(started.Add(-10*time.Minute).Unix()))
	const stx, usdcx = "stx", "SP120SBRBQJ00MCWS7TM5R8WJNTTKD5K0HFRC2CNE.usdcx::usdcx"
	exec(`insert into price_observations (token_id, observed_at, price_usd) values ('stx', $1, 2), ('stx', $2, 100)`,
		end.Add(-time.Second), end.Add(time.Second)) // the second is after the end: not the round's price
	for i, a := range []string{"SPAGENTA", "SPAGENTB"} {
		exec(`insert into agents (stx_address, btc_address, erc8004_agent_id) values ($1, $2, $3)`, a, "bc1q"+a, i+1)
		exec(`insert into claims values ($1, 'verified')`, "bc1q"+a)
	}
	swap := func(txid, sender, in, amtIn, out, amtOut string, at time.Time) {
		t.Helper()
		_, err := s.st.InsertSwap(ctx, competition.Swap{TxID: txid, Sender: sender, ContractID: "SP000000000000000000002Q6VF78.router",
			FunctionName: "swap", TokenIn: in, AmountIn: amtIn, TokenOut: out, AmountOut: amtOut, BurnBlockTime: at.Unix(),
			BlockTime: at.Unix(), TxStatus: "success", Source: "sweep"})
		require.NoError(t, err)
	}
	// A: 10 STX (20 USD) for 25 USDCx, +5; B: 30 USDCx for 10 STX (20 USD), -10.
	swap("0xa1", "SPAGENTA", stx, "10000000", usdcx, "25000000", start.Add(time.Minute))
	swap("0xb1", "SPAGENTB", usdcx, "30000000", stx, "10000000", end.Add(-time.Second))
	exec(`update agent_ingest set last_success_at = now()`)

	stop := s.startWorker(t)
	defer stop()
	_, err := worker.EnsureRunning(ctx, s.tc, s.sched)
	require.NoError(t, err)
	op := &operate.Service{Store: s.st, Temporal: s.tc, WorkflowID: s.sched.WorkflowID, RoundGrace: grace}
	minVol, minTrades := 1.0, 1
	_, created, err := op.PutRound(actor.With(ctx, "test"), operate.RoundInput{ID: "r1", StartsAt: start, EndsAt: end,
		MinVolumeUSD: &minVol, MinPricedTradeCount: &minTrades})
	require.NoError(t, err)
	require.True(t, created)

	waiting := func() *pacer.RoundWait {
		st, err := worker.Status(ctx, s.tc, s.sched.WorkflowID)
		if err != nil || st.LastFinalizeResult == nil {
			return nil
		}
		return st.LastFinalizeResult.Waiting
	}
	eventually(t, 30*time.Second, "the refresh woke finalize: it waits for the grace", func() bool {
		w := waiting()
		return w != nil && w.Round == "r1" && w.Reason == pacer.WaitGrace
	})
	// After the end, before it is final: a swap the round does not count.
	for time.Now().Before(end.Add(time.Second)) {
		_, found, err := s.st.FinalRound(ctx, "r1")
		require.NoError(t, err)
		require.False(t, found, "not visible before it is final")
		time.Sleep(time.Second) // the round's end is wall-clock time: nothing to wait on but the clock
	}
	swap("0xa2", "SPAGENTA", usdcx, "1000000", stx, "9000000", end.Add(time.Second))

	eventually(t, end.Add(grace).Add(2*time.Minute).Sub(time.Now()), "past its grace, it waits for completeThrough", func() bool {
		w := waiting()
		return w != nil && w.Round == "r1" && w.Reason == pacer.WaitCompleteThrough && w.BehindSeconds == int64(end.Sub(started.Add(-10*time.Minute))/time.Second)
	})
	_, found, err := s.st.FinalRound(ctx, "r1")
	require.NoError(t, err)
	require.False(t, found, "not finalized while completeThrough is behind its end")

	released := time.Now()
	exec(`update competition_state set value = $1 where key = 'complete_through'`, fmt.Sprint(end.Unix()))
	var d store.RoundDetail
	eventually(t, 2*time.Minute+10*time.Second, "finalized once completeThrough reached its end", func() bool {
		d, found, err = s.st.FinalRound(ctx, "r1")
		return err == nil && found
	})
	took := d.Round.FinalizedAt.Sub(released)
	t.Logf("figures: finalized %s after completeThrough reached the end (%s after its grace)", took.Round(time.Second),
		d.Round.FinalizedAt.Sub(end.Add(grace)).Round(time.Second))
	require.Less(t, took, 2*time.Minute)

	require.Len(t, d.Results, 2)
	a, b := d.Results[0], d.Results[1]
	require.Equal(t, "SPAGENTA", a.STXAddress)
	require.Equal(t, 1, a.TradeCount, "the swap after the end does not count")
	require.Equal(t, 20.0, a.VolumeUSD)
	require.Equal(t, 25.0, a.ReceivedUSD)
	require.Equal(t, 5.0, a.PnLUSD)
	require.Equal(t, 0.25, *a.PnLPercent)
	require.Equal(t, "SPAGENTB", b.STXAddress)
	require.Equal(t, 30.0, b.VolumeUSD)
	require.Equal(t, -10.0, b.PnLUSD)
	got := map[string]string{}
	for _, r := range d.Rewards {
		got[r.Category] = r.STXAddress
	}
	require.Equal(t, map[string]string{"overall_pnl": "SPAGENTA", "volume": "SPAGENTB", "return": "SPAGENTA"}, got)
}
