package store_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
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

	// A transaction pending since completeThrough was 999 holds it there.
	exec(`insert into pending_txs (txid, sender, first_seen_at) values ('0x01', 'SPA', now())`)
	exec(`update discovery_cursors set block_time = 5000, covered_at = to_timestamp(6000)`)
	require.Equal(t, int64(999), *through())
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
