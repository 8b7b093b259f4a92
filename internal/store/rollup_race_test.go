package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/rollup"
	"github.com/pacer-dev/pacer/internal/store"
)

// raceHour is the hour both race tests roll up, long ended.
var raceHour = rollup.Period{Kind: rollup.Hour, Start: ts("2026-11-03T08:00:00Z"), End: ts("2026-11-03T09:00:00Z")}

const insertRaceSwap = `
insert into swaps (txid, sender, contract_id, function_name, token_in, amount_in, token_out, amount_out, burn_block_time, tx_status, source)
values ($1, 'SP1', 'SP2.pool', 'swap', 'stx', 1, 'sbtc', 1, $2, 'success', 'sweep')`

// competitionSwaps rolls up the marks left (as the next rollup run does)
// and reads the hour's competition swap count.
func competitionSwaps(t *testing.T, s *store.Store) int {
	t.Helper()
	_, err := s.RecomputeDirty(t.Context(), store.RollupSpec{ComputedAt: ts("2026-11-03T10:00:00Z")}, time.UTC)
	require.NoError(t, err)
	var n int
	require.NoError(t, s.Pool().QueryRow(t.Context(), `
select (data->>'swaps')::int from rollups where period = 'hour' and period_start = $1 and subject_kind = 'competition'`,
		raceHour.Start).Scan(&n))
	return n
}

// TestFirstRollupCountsASwapCommittedDuringIt: the hour's first rollup has
// computed its rows (a snapshot without the swap) and not committed yet
// when a swap of the hour commits. The swap must still be counted, by a
// mark the next run handles.
func TestFirstRollupCountsASwapCommittedDuringIt(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	_, err := s.Pool().Exec(ctx, insertRaceSwap, "0xbefore", raceHour.Start.Add(10*time.Minute).Unix())
	require.NoError(t, err)

	// Stall the rollup after its rows are computed: its corrections read
	// deliveries, which another session holds.
	holder, err := s.Pool().Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = holder.Rollback(context.Background()) }()
	var holderPID uint32
	require.NoError(t, holder.QueryRow(ctx, `select pg_backend_pid()`).Scan(&holderPID))
	_, err = holder.Exec(ctx, `lock table deliveries in access exclusive mode`)
	require.NoError(t, err)

	ran := make(chan error, 1)
	go func() {
		_, err := s.ComputeRollup(context.Background(), store.RollupSpec{Period: raceHour, ComputedAt: ts("2026-11-03T09:05:00Z")})
		ran <- err
	}()
	blockedBy(t, s, holderPID) // computed, not committed

	// The swap commits now, on a connection of its own.
	_, err = s.Pool().Exec(ctx, insertRaceSwap, "0xduring", raceHour.Start.Add(20*time.Minute).Unix())
	require.NoError(t, err)
	require.NoError(t, holder.Commit(ctx))
	require.NoError(t, <-ran)

	require.Equal(t, 2, competitionSwaps(t, s), "the swap committed during the first rollup is counted")
}

// TestFirstRollupWaitsForASwapInFlight: a swap's transaction is open (its
// row written, not committed) when the hour's first rollup starts. The
// rollup must not compute without it and never look again.
func TestFirstRollupWaitsForASwapInFlight(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	swapTx, err := s.Pool().Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = swapTx.Rollback(context.Background()) }()
	var swapPID uint32
	require.NoError(t, swapTx.QueryRow(ctx, `select pg_backend_pid()`).Scan(&swapPID))
	_, err = swapTx.Exec(ctx, insertRaceSwap, "0xinflight", raceHour.Start.Add(30*time.Minute).Unix())
	require.NoError(t, err)

	ran := make(chan error, 1)
	go func() {
		_, err := s.ComputeRollup(context.Background(), store.RollupSpec{Period: raceHour, ComputedAt: ts("2026-11-03T09:05:00Z")})
		ran <- err
	}()
	// Either the rollup waits for the swap (fixed), or it is done before
	// the swap commits (the race).
	waiting := false
	for !waiting {
		select {
		case err := <-ran:
			require.NoError(t, err)
			ran <- nil
			waiting = true // finished first: the swap commits after it
			continue
		default:
		}
		err := s.Pool().QueryRow(ctx, `select exists (select 1 from pg_stat_activity where $1 = any(pg_blocking_pids(pid)))`,
			int32(swapPID)).Scan(&waiting)
		require.NoError(t, err)
	}
	require.NoError(t, swapTx.Commit(ctx))
	require.NoError(t, <-ran)

	require.Equal(t, 1, competitionSwaps(t, s), "the swap in flight when the rollup began is counted")
}
