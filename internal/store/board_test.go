package store_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/store"
)

// completeThrough follows the slowest reader, stays put while an agent's
// history is unread or a gap is open, is held by a pending transaction at
// its value when the transaction was queued, and never moves backwards.
func TestCompleteThrough(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	exec := func(sql string, args ...any) {
		t.Helper()
		_, err := s.Pool().Exec(ctx, sql, args...)
		require.NoError(t, err)
	}
	through := func() *int64 {
		t.Helper()
		v, err := s.CompleteThrough(ctx)
		require.NoError(t, err)
		return v
	}
	require.Nil(t, through(), "no reader has read")

	exec(`insert into discovery_cursors (reader, block_height, tx_index, block_time, updated_at) values
		('tail', 100, 0, 1000, now()), ('contract:SP1.a', 90, 0, 900, now())`)
	exec(`insert into agents (stx_address) values ('SPA')`)
	require.Nil(t, through(), "an agent's history is not read yet")
	exec(`update agent_ingest set last_success_at = now()`)
	require.Equal(t, int64(899), *through(), "the slowest reader")

	// A contract reader whose complete scan began later covers what was
	// mined well before it.
	exec(`update discovery_cursors set covered_at = to_timestamp(2000) where reader = 'contract:SP1.a'`)
	require.Equal(t, int64(999), *through(), "now the tail")

	// A transaction in the mempool holds nothing: mined, it is in a block
	// no reader has passed yet. One a reader saw in a block and could not
	// settle holds it before that block, if its sender is a genesis agent,
	// for store.HoldBound at most; the lapse is reported once.
	exec(`insert into pending_txs (txid, sender, first_seen_at) values ('0x01', 'SPA', now()), ('0x02', 'SPA', now()), ('0x03', 'SPA', now())`)
	require.NoError(t, s.HoldPending(ctx, "0x03", 2000), "SPA has no claim yet: no hold")
	exec(`update agents set btc_address = 'bc1a', erc8004_agent_id = 1 where stx_address = 'SPA'`)
	exec(`insert into claims values ('bc1a', 'verified')`)
	require.NoError(t, s.HoldPending(ctx, "0x02", 3000))
	require.NoError(t, s.HoldPending(ctx, "0x02", 3500), "seen again: the earliest block stands")
	exec(`update discovery_cursors set block_time = 5000, covered_at = to_timestamp(6000)`)
	require.Equal(t, int64(2999), *through(), "held before the block of the one a reader saw")
	lapsed, err := s.LapseHolds(ctx, store.HoldBound)
	require.NoError(t, err)
	require.Empty(t, lapsed)
	exec(`update pending_txs set held_at = now() - interval '31 minutes' where txid = '0x02'`)
	require.Equal(t, int64(4999), *through(), "a hold lapses after HoldBound")
	lapsed, err = s.LapseHolds(ctx, store.HoldBound)
	require.NoError(t, err)
	require.Len(t, lapsed, 1)
	require.Equal(t, "0x02", lapsed[0].TxID)
	require.Equal(t, int64(3000), lapsed[0].BlockTime)
	lapsed, err = s.LapseHolds(ctx, store.HoldBound)
	require.NoError(t, err)
	require.Empty(t, lapsed, "reported once")
	exec(`delete from pending_txs`)
	require.Equal(t, int64(4999), *through())

	// An open gap holds it; a reader moving back never moves it back.
	exec(`insert into discovery_gaps (reader, to_height, to_tx_index) values ('tail', 1, 0)`)
	exec(`update discovery_cursors set block_time = 9000, covered_at = to_timestamp(9000)`)
	require.Equal(t, int64(4999), *through())
	exec(`update discovery_gaps set filled_at = now()`)
	exec(`update discovery_cursors set block_time = 3000, covered_at = null`)
	require.Equal(t, int64(4999), *through(), "never backwards")

	// A deregistered agent's unread history holds nothing.
	exec(`insert into agents (stx_address, deregistered_at) values ('SPB', now())`)
	exec(`update discovery_cursors set block_time = 7000`)
	require.Equal(t, int64(6999), *through())
}

// The per-agent totals the leaderboard reads are what the swaps add up to,
// after inserts in one statement and in several, and after deletes (a
// rollback): checked against a GROUP BY over swaps.
func TestBoardTotalsFollowSwaps(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	exec := func(sql string) {
		t.Helper()
		_, err := s.Pool().Exec(ctx, sql)
		require.NoError(t, err)
	}
	ins := func(from, to int) {
		exec(`insert into swaps (txid, sender, contract_id, function_name, token_in, amount_in, token_out, amount_out,
			burn_block_time, tx_status, source)
			select '0x' || i, 'SP' || (i % 3), 'SP1.pool', 'swap', 'tok' || (i % 4), (i * 1000000000000000000000)::numeric,
			       'tok' || (i % 5), i * 7, 1000 + i, 'success', 'sweep'
			from generate_series(` + strconv.Itoa(from) + `, ` + strconv.Itoa(to) + `) i`)
	}
	check := func() {
		t.Helper()
		var bad int
		require.NoError(t, s.Pool().QueryRow(ctx, `
with legs as (
    select sender, token_in as token, amount_in as a_in, 0::numeric as a_out from swaps
    union all select sender, token_out, 0, amount_out from swaps
), want as (select sender, token, sum(a_in) a_in, sum(a_out) a_out, count(*) n from legs group by 1, 2)
select count(*) from want w full join agent_token_totals t on t.stx_address = w.sender and t.token_id = w.token
where w.sender is null or t.stx_address is null or w.a_in <> t.amount_in or w.a_out <> t.amount_out or w.n <> t.legs
   or abs(t.amount_in_f - w.a_in::float8) > 1e-9 * greatest(1, w.a_in::float8)
   or abs(t.amount_out_f - w.a_out::float8) > 1e-9 * greatest(1, w.a_out::float8)`).Scan(&bad))
		require.Zero(t, bad, "token totals")
		require.NoError(t, s.Pool().QueryRow(ctx, `
with want as (select sender, count(*) n, min(burn_block_time) f, max(burn_block_time) l from swaps group by 1)
select count(*) from want w full join agent_trade_totals t on t.stx_address = w.sender
where w.sender is null or t.stx_address is null or w.n <> t.trades or w.f <> t.first_trade or w.l <> t.latest_trade`).Scan(&bad))
		require.Zero(t, bad, "trade totals")
	}
	ins(1, 30)
	check()
	ins(31, 31)
	ins(32, 40)
	check()
	exec(`delete from swaps where txid in ('0x40', '0x3', '0x6', '0x9')`)
	check()
	exec(`delete from swaps where sender = 'SP1'`)
	check()
}
