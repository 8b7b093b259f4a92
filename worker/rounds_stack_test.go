//go:build roundstack

package worker_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/actor"
	"github.com/pacer-dev/pacer/internal/competition"
	"github.com/pacer-dev/pacer/internal/operate"
	"github.com/pacer-dev/pacer/internal/sim"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/internal/testenv"
	"github.com/pacer-dev/pacer/internal/webhooktest"
	"github.com/pacer-dev/pacer/worker"
	"github.com/pacer-dev/pacer/workflows"
)

// A round ending two minutes after the worker starts finalizes itself on
// the real stack: a `pacer worker` process (Temporal dev server, Postgres,
// revision 4's finalize task) reading a simulated chain's tail at the real
// clock, the allowlisted contracts' lists reconciled every 20 s
// (PACER_RECONCILE_EVERY: completeThrough is never past what their last
// complete scan covered, less a minute of indexing, so at the default 15
// minutes it moves in steps that long). The round is added through the
// operation the CLI and the admin API run (which wakes finalize) and is
// invisible until final.
//
// completeThrough nobody can freeze (issue 38): two of the world's
// registered agents have a transaction in the mempool for good; one is
// posted to the fast path at the first start, before the readers have
// read, the other later. completeThrough is published within a minute of
// the readers settling (every history read once, the tail at the head) and
// keeps advancing. The world's transactions that a reader saw in a block
// and cannot settle (a detail that always fails) hold it, as they should,
// for store.HoldBound; the test ages those holds past the bound rather
// than wait 30 minutes (as TestCompleteThroughIgnoresMempoolTransactions).
//
// The readers held back: `pacer pause --task sweep` before the round's
// end; past its grace the round is not finalized, its status waits for
// completeThrough with how far behind, and no sweep runs. `pacer resume
// --task sweep` and it is finalized within two minutes, its results the
// ones computed here from SPEC §13, a swap after the end not counted.
//
// Then the subscriber that asked for round.finalized receives it, signed
// (Standard Webhooks), with the round's results, within 30 s of the
// round's finalization (the finalize run wakes deliver); one that asked
// only for the hourly rollups does not.
//
//	make rounds-check
func TestRoundFinalizesItselfOnTheRealStack(t *testing.T) {
	ctx := context.Background()
	bin := testenv.PacerBinary(t)
	s := newStack(t, workflows.Config{TeneroEvery: pacer.Duration(time.Hour), SweepEvery: pacer.Duration(5 * time.Second)})
	exec := func(sql string, args ...any) {
		t.Helper()
		_, err := s.st.Pool().Exec(ctx, sql, args...)
		require.NoError(t, err)
	}
	started := time.Now().UTC().Truncate(time.Second)
	start, end := started.Add(-time.Hour), started.Add(2*time.Minute)
	const grace = 30 * time.Second

	// The world's transactions are three hours old or more, none in the
	// round's window; its chain (strangers' calls in every block) runs on
	// at the real clock, which is the simulator's.
	unlimited := sim.Limits{PerMinute: 1 << 30, PerMonth: 1 << 30}
	s.sim = sim.New(sim.Config{Seed: 18, Tenero: sim.TeneroConfig{Anonymous: unlimited},
		Hiro: sim.HiroConfig{Origin: started.Add(-3 * time.Hour), History: time.Hour, Arrivals: time.Hour, Agents: 12,
			Anonymous: unlimited, Chain: sim.ChainConfig{Volume: 40_000}}})
	w := serveWorld(t, s)
	var pending []string
	for _, tx := range w.Transactions() {
		if tx.Case == sim.CasePending && tx.AppearsAt.Before(started) {
			pending = append(pending, tx.TxID)
		}
	}
	require.Len(t, pending, 2, "the world has two agents' transactions pending for good")

	const stx, usdcx = "stx", "SP120SBRBQJ00MCWS7TM5R8WJNTTKD5K0HFRC2CNE.usdcx::usdcx"
	exec(`insert into price_observations (token_id, observed_at, price_usd) values ('stx', $1, 2), ('stx', $2, 100)`,
		end.Add(-time.Second), end.Add(time.Second)) // the second is after the end: not the round's price
	// A and B are two of the world's genesis agents.
	var genesis []string
	for _, a := range w.Agents() {
		if a.ERC8004AgentID != nil && (a.ClaimStatus == "verified" || a.ClaimStatus == "rewarded") {
			genesis = append(genesis, a.STXAddress)
		}
	}
	require.GreaterOrEqual(t, len(genesis), 2)
	agentA, agentB := genesis[0], genesis[1]
	swap := func(txid, sender, in, amtIn, out, amtOut string, at time.Time) {
		t.Helper()
		_, err := s.st.InsertSwap(ctx, competition.Swap{TxID: txid, Sender: sender, ContractID: "SP000000000000000000002Q6VF78.router",
			FunctionName: "swap", TokenIn: in, AmountIn: amtIn, TokenOut: out, AmountOut: amtOut, BurnBlockTime: at.Unix(),
			BlockTime: at.Unix(), TxStatus: "success", Source: "sweep"})
		require.NoError(t, err)
	}
	// A: 10 STX (20 USD) for 25 USDCx, +5; B: 30 USDCx for 10 STX (20 USD), -10.
	swap("0xa1", agentA, stx, "10000000", usdcx, "25000000", start.Add(time.Minute))
	swap("0xb1", agentB, usdcx, "30000000", stx, "10000000", end.Add(-time.Second))

	api := freeAddr(t)
	_, out := s.startProcess(t, bin, "--hiro-base-url", s.simU, "--hiro-per-minute", "100000",
		"--competition-start", strconv.FormatInt(w.CompetitionStart().Unix(), 10),
		"--discovery", "tail", "--tail-every", "1s", "--reconcile-every", "20s", "--http", api, "--webhook-allow-private")
	eventually(t, 30*time.Second, "the API answers", func() bool {
		code, _, err := httpGet("http://" + api + "/healthz")
		return err == nil && code == http.StatusOK
	})
	post := func(txid string) {
		t.Helper()
		resp, err := http.Post("http://"+api+"/api/competition/trades", "application/json", strings.NewReader(`{"txid":"`+txid+`"}`))
		require.NoError(t, err)
		defer resp.Body.Close()
		var got struct{ Status string }
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&got))
		require.Equal(t, string(competition.StatusPending), got.Status, "the fast path answers %s for %s", resp.Status, txid)
	}
	post(pending[0])

	// A subscriber asking for round.finalized, and one asking only for
	// the hourly rollups.
	subscribe := func(r *webhooktest.Receiver, events string) {
		t.Helper()
		code, stdout, stderr := s.pacer("--webhook-allow-private", "subscribers", "add", "--url", r.URL, "--events", events, "--json")
		require.Zero(t, code, "%s%s", stdout, stderr)
		var sub struct{ Secret string }
		require.NoError(t, json.Unmarshal([]byte(stdout), &sub))
		r.SetSecret(sub.Secret)
	}
	rounds, hourly := webhooktest.New(webhooktest.Behaviour{Mode: webhooktest.OK}), webhooktest.New(webhooktest.Behaviour{Mode: webhooktest.OK})
	t.Cleanup(rounds.Close)
	t.Cleanup(hourly.Close)
	subscribe(rounds, store.EventRoundFinalized)
	subscribe(hourly, "hourly")

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

	// The readers settle: every registered agent's history read once, the
	// tail at the chain's head. completeThrough is published within a
	// minute of that, whatever waits in the mempool.
	through := func() *int64 {
		t.Helper()
		v, err := s.st.CompleteThrough(ctx)
		require.NoError(t, err)
		return v
	}
	var settled, published time.Time
	var first int64
	eventually(t, 2*time.Minute, "the readers settle and completeThrough is published", func() bool {
		if settled.IsZero() {
			var unread int
			require.NoError(t, s.st.Pool().QueryRow(ctx, `select count(*) from agent_ingest i join agents a using (stx_address)
where a.deregistered_at is null and i.last_success_at is null`).Scan(&unread))
			if tail := tailRow(t, s); unread == 0 && tail.found && tail.height > 0 {
				settled = time.Now()
			}
		}
		if v := through(); v != nil && published.IsZero() {
			published, first = time.Now(), *v
		}
		return !settled.IsZero() && !published.IsZero()
	})
	require.Less(t, published.Sub(settled), time.Minute, "published within a minute of the readers settling\n%s", out.String())
	var inMempool int
	require.NoError(t, s.st.Pool().QueryRow(ctx, `select count(*) from pending_txs where txid = $1 and held_block_time is null`,
		pending[0]).Scan(&inMempool))
	require.Equal(t, 1, inMempool, "the posted transaction is kept as pending, holding nothing")

	// A hold is a transaction a reader saw in a block and could not settle
	// (the world's detail that always fails): aged past its bound here.
	var holds int
	require.NoError(t, s.st.Pool().QueryRow(ctx, `
with aged as (update pending_txs set held_at = held_at - $1::interval where held_at is not null returning 1)
select count(*) from aged`, store.HoldBound+time.Minute).Scan(&holds))
	advanced := func(from int64, what string) int64 {
		t.Helper()
		var now int64
		if !assert.Eventually(t, func() bool { now = *through(); return now > from }, 30*time.Second, 100*time.Millisecond) {
			diag(t, s)
			t.Fatalf("%s: still %d", what, now)
		}
		return now
	}
	second := advanced(first, "completeThrough advances as the tail reads on")
	post(pending[1])
	third := advanced(second, "completeThrough advances with another mempool transaction posted")
	t.Logf("figures: completeThrough published %s after the readers settled (%s behind the clock, %d holds of transactions seen in a block; aged past the bound, it advanced %ds, then %ds after the second post)",
		published.Sub(settled).Round(100*time.Millisecond), published.Sub(time.Unix(first, 0)).Round(time.Second), holds,
		second-first, third-second)

	// The readers held back, before the round's end.
	code, stdout, stderr := s.pacer("pause", "--task", pacer.TaskSweep, "--for", "15m")
	require.Zero(t, code, "%s%s", stdout, stderr)
	paused := time.Now()
	require.True(t, paused.Before(end.Add(-10*time.Second)), "paused before the round's end")
	eventually(t, time.Minute, "the sweep's run in flight ended", func() bool {
		st, err := statusOrErr(s)
		return err == nil && !st.Tasks[pacer.TaskSweep].Running
	})
	held := *through()
	require.Less(t, held, end.Unix())

	// After the end, before it is final: a swap the round does not count.
	for time.Now().Before(end.Add(time.Second)) {
		_, found, err := s.st.FinalRound(ctx, "r1")
		require.NoError(t, err)
		require.False(t, found, "not visible before it is final")
		time.Sleep(time.Second) // the round's end is wall-clock time: nothing to wait on but the clock
	}
	swap("0xa2", agentA, usdcx, "1000000", stx, "9000000", end.Add(time.Second))

	eventually(t, end.Add(grace).Add(2*time.Minute).Sub(time.Now()), "past its grace, it waits for completeThrough", func() bool {
		w := waiting()
		return w != nil && w.Round == "r1" && w.Reason == pacer.WaitCompleteThrough && w.BehindSeconds == end.Unix()-held
	})
	_, found, err := s.st.FinalRound(ctx, "r1")
	require.NoError(t, err)
	require.False(t, found, "not finalized while the readers are held back")
	st := s.status(t)
	require.True(t, st.LastSweepResult.StartedAt.Before(paused), "no sweep ran while paused: %s", st.LastSweepResult.StartedAt)
	require.Equal(t, held, *through(), "completeThrough stood still while the readers were held back")

	code, stdout, stderr = s.pacer("resume", "--task", pacer.TaskSweep)
	require.Zero(t, code, "%s%s", stdout, stderr)
	resumed := time.Now()
	var d store.RoundDetail
	eventually(t, 2*time.Minute+10*time.Second, "finalized once the readers read on", func() bool {
		d, found, err = s.st.FinalRound(ctx, "r1")
		return err == nil && found
	})
	took := d.Round.FinalizedAt.Sub(resumed)
	t.Logf("figures: paused %s before the end, completeThrough held %ds behind it; finalized %s after the sweep resumed (%s after its grace)",
		end.Sub(paused).Round(time.Second), end.Unix()-held, took.Round(time.Second), d.Round.FinalizedAt.Sub(end.Add(grace)).Round(time.Second))
	require.Less(t, took, 2*time.Minute)
	require.GreaterOrEqual(t, *through(), end.Unix(), "completeThrough reached the end")

	require.Len(t, d.Results, 2, "the world's swaps are hours before the window")
	a, b := d.Results[0], d.Results[1]
	require.Equal(t, agentA, a.STXAddress)
	require.Equal(t, 1, a.TradeCount, "the swap after the end does not count")
	require.Equal(t, 20.0, a.VolumeUSD)
	require.Equal(t, 25.0, a.ReceivedUSD)
	require.Equal(t, 5.0, a.PnLUSD)
	require.Equal(t, 0.25, *a.PnLPercent)
	require.Equal(t, agentB, b.STXAddress)
	require.Equal(t, 30.0, b.VolumeUSD)
	require.Equal(t, -10.0, b.PnLUSD)
	got := map[string]string{}
	for _, r := range d.Rewards {
		got[r.Category] = r.STXAddress
	}
	require.Equal(t, map[string]string{"overall_pnl": agentA, "volume": agentB, "return": agentA}, got)

	// The subscriber that asked for it receives the round, signed
	// (Standard Webhooks, verified by the library), as soon as it is
	// final: the finalize run woke deliver (revision 4).
	var arrival webhooktest.Arrival
	eventually(t, 30*time.Second, "the round.finalized delivery arrived", func() bool {
		for _, a := range rounds.Arrivals() {
			if a.Acked {
				arrival = a
				return true
			}
		}
		return false
	})
	require.NoError(t, arrival.VerifyErr)
	var ev store.RoundEvent
	require.NoError(t, json.Unmarshal(arrival.Body, &ev))
	require.Equal(t, store.EventRoundFinalized, ev.Type)
	require.Equal(t, "r1", ev.Data.Round.ID)
	require.Equal(t, store.RoundFinalized, ev.Data.Round.Status)
	require.Len(t, ev.Data.Results, 2)
	for i, r := range ev.Data.Results {
		require.Equal(t, d.Results[i].STXAddress, r.STXAddress)
		require.Equal(t, d.Results[i].Rank, r.Rank)
		require.Equal(t, d.Results[i].PnLUSD, r.PnLUSD)
		require.Equal(t, d.Results[i].VolumeUSD, r.VolumeUSD)
	}
	require.Len(t, ev.Data.Rewards, 3)
	t.Logf("figures: round.finalized delivered %s after the round was finalized (signature verified, %d results, %d rewards)",
		arrival.At.Sub(*d.Round.FinalizedAt).Round(100*time.Millisecond), len(ev.Data.Results), len(ev.Data.Rewards))
	for _, a := range hourly.Arrivals() {
		require.NotContains(t, string(a.Body), store.EventRoundFinalized, "a subscriber that did not ask for it")
	}
}

// diag logs what completeThrough is made of: the pending transactions,
// the readers' cursors and gaps, the kept value and the last sweep.
func diag(t *testing.T, s *stack) {
	ctx := context.Background()
	for _, q := range []string{
		`select coalesce(json_agg(p), '[]')::text from pending_txs p`,
		`select coalesce(json_agg(d), '[]')::text from discovery_cursors d`,
		`select coalesce(json_agg(g), '[]')::text from discovery_gaps g`,
		`select coalesce(json_agg(c), '[]')::text from competition_state c`,
	} {
		var out string
		require.NoError(t, s.st.Pool().QueryRow(ctx, q).Scan(&out))
		t.Logf("%s\n%s", q, out)
	}
	st, err := statusOrErr(s)
	require.NoError(t, err)
	b, _ := json.Marshal(st.LastSweepResult)
	t.Logf("now %d last sweep %s", time.Now().Unix(), b)
}
