package store_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestPrunePublicInput: rows past their retention go, and so do the
// oldest rows past a table's bound; recent rows stay.
func TestPrunePublicInput(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	now := time.Now().UTC()
	old, fresh := now.Add(-60*24*time.Hour), now.Add(-time.Hour)
	for i, at := range []time.Time{old, old, fresh} {
		txid := fmt.Sprintf("0x%02d", i)
		_, err := s.Pool().Exec(ctx, `insert into pending_txs (txid, sender, first_seen_at) values ($1, 'SP1', $2)`, txid, at)
		require.NoError(t, err)
		_, err = s.Pool().Exec(ctx, `insert into swap_rejections (txid, reason, first_seen_at, last_seen_at) values ($1, 'tx_failed', $2, $2)`, txid, at)
		require.NoError(t, err)
		_, err = s.Pool().Exec(ctx, `insert into chainhook_txs (txid, block_hash, block_height, applied, updated_at) values ($1, '0xb', 1, true, $2)`, txid, at)
		require.NoError(t, err)
		_, err = s.Pool().Exec(ctx, `
insert into swap_rollbacks (txid, sender, contract_id, function_name, token_in, amount_in, token_out, amount_out,
    burn_block_time, tx_status, source, inserted_at, block_hash, block_height, rolled_back_at)
values ($1, 'SP1', 'SP2.c', 'swap', 'stx', 1, 'sbtc', 1, 0, 'success', 'sweep', $2, '0xb', 1, $2)`, txid, at)
		require.NoError(t, err)
	}
	pruned, err := s.PrunePublicInput(ctx, now)
	require.NoError(t, err)
	for _, table := range []string{"pending_txs", "swap_rejections", "chainhook_txs", "swap_rollbacks"} {
		require.Equal(t, int64(2), pruned[table], table)
		var left int
		require.NoError(t, s.Pool().QueryRow(ctx, `select count(*) from `+table).Scan(&left))
		require.Equal(t, 1, left, "%s keeps its recent row", table)
	}

	// The row bound: a flood of recent rejections keeps only the newest.
	_, err = s.Pool().Exec(ctx, `
insert into swap_rejections (txid, reason, first_seen_at, last_seen_at)
select '0xf' || g, 'tx_failed', now(), now() - g * interval '1 second' from generate_series(1, 6000) g`)
	require.NoError(t, err)
	s.SetRetentionMax("swap_rejections", 1000)
	_, err = s.PrunePublicInput(ctx, now)
	require.NoError(t, err)
	var left int
	var newest bool
	require.NoError(t, s.Pool().QueryRow(ctx, `select count(*), bool_or(txid = '0xf1') from swap_rejections`).Scan(&left, &newest))
	require.Equal(t, 1000, left)
	require.True(t, newest, "the newest rows are the ones kept")
}
