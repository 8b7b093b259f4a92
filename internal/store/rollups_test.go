package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/rollup"
	"github.com/pacer-dev/pacer/internal/store"
)

func mark(t *testing.T, s *store.Store, hour time.Time) {
	t.Helper()
	_, err := s.Pool().Exec(t.Context(), `insert into rollup_dirty (hour_start, reason) values ($1, 'rollback')`, hour)
	require.NoError(t, err)
}

func marks(t *testing.T, s *store.Store) []time.Time {
	t.Helper()
	rows, _ := s.Pool().Query(t.Context(), `select hour_start from rollup_dirty order by hour_start`)
	hours, err := pgx.CollectRows(rows, pgx.RowTo[time.Time])
	require.NoError(t, err)
	for i := range hours {
		hours[i] = hours[i].UTC()
	}
	return hours
}

func ts(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

// Each ended marked hour is recomputed with every ended day that shares
// an instant with it (two, where the zone's midnight cuts the UTC hour);
// a mark whose hour has not ended stays, and so does nothing else; days
// that have not ended are not computed.
func TestRecomputeDirtyPeriods(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	kolkata, err := rollup.LoadZone("Asia/Kolkata") // midnight at 18:30 UTC
	require.NoError(t, err)
	now := ts("2026-11-03T10:20:00Z")
	for _, h := range []string{"2026-11-03T10:00:00Z", "2026-11-03T09:00:00Z", "2026-11-01T18:00:00Z", "2026-11-01T20:00:00Z"} {
		mark(t, s, ts(h))
	}

	out, err := s.RecomputeDirty(t.Context(), store.RollupSpec{ComputedAt: now}, kolkata)
	require.NoError(t, err)
	require.Equal(t, []time.Time{ts("2026-11-01T18:00:00Z"), ts("2026-11-01T20:00:00Z"), ts("2026-11-03T09:00:00Z")}, out.Marks)
	var got []string
	for _, p := range out.Periods {
		got = append(got, p.Kind+" "+p.Start.UTC().Format(time.RFC3339)+" "+p.End.UTC().Format(time.RFC3339))
	}
	require.Equal(t, []string{
		"hour 2026-11-01T18:00:00Z 2026-11-01T19:00:00Z",
		"hour 2026-11-01T20:00:00Z 2026-11-01T21:00:00Z",
		"hour 2026-11-03T09:00:00Z 2026-11-03T10:00:00Z",
		// 18:00–19:00 UTC is in the Kolkata days of Nov 1 and Nov 2,
		// 20:00 in Nov 2's; 09:00 on Nov 3 is in Nov 3's, not ended.
		"day 2026-10-31T18:30:00Z 2026-11-01T18:30:00Z",
		"day 2026-11-01T18:30:00Z 2026-11-02T18:30:00Z",
	}, got)
	require.Equal(t, len(out.Periods), out.Rows, "one competition row each, nothing else in the database")
	require.Zero(t, out.Corrections)
	require.Equal(t, []time.Time{ts("2026-11-03T10:00:00Z")}, marks(t, s), "the running hour's mark stays")

	again, err := s.RecomputeDirty(t.Context(), store.RollupSpec{ComputedAt: now}, kolkata)
	require.NoError(t, err)
	require.Empty(t, again.Marks)
	require.Empty(t, again.Periods)
}

// blockRollups holds a row lock on a period's competition row in a
// transaction of its own, so that recomputing the period stalls at its
// delete; it returns the transaction's backend pid and a release.
func blockRollups(t *testing.T, s *store.Store, p rollup.Period) (pid uint32, release func()) {
	t.Helper()
	_, err := s.Pool().Exec(t.Context(), `
insert into rollups (period, period_start, period_end, subject_kind, subject, data, complete, computed_at)
values ($1, $2, $3, 'competition', 'all', '{"swaps":99}', false, $3)`, p.Kind, p.Start, p.End)
	require.NoError(t, err)
	tx, err := s.Pool().Begin(t.Context())
	require.NoError(t, err)
	require.NoError(t, tx.QueryRow(t.Context(), `select pg_backend_pid()`).Scan(&pid))
	_, err = tx.Exec(t.Context(), `select 1 from rollups where period = $1 and period_start = $2 for update`, p.Kind, p.Start)
	require.NoError(t, err)
	done := false
	release = func() {
		if !done {
			done = true
			require.NoError(t, tx.Commit(context.Background()))
		}
	}
	t.Cleanup(release)
	return pid, release
}

// blockedBy waits until a backend waits on a lock held by pid, and
// returns it.
func blockedBy(t *testing.T, s *store.Store, pid uint32) uint32 {
	t.Helper()
	var waiter uint32
	require.Eventually(t, func() bool {
		err := s.Pool().QueryRow(t.Context(), `
select pid from pg_stat_activity where $1 = any(pg_blocking_pids(pid)) limit 1`, int32(pid)).Scan(&waiter)
		return err == nil
	}, 30*time.Second, 10*time.Millisecond)
	return waiter
}

// A mark written for an hour while a run handles it (a rollback landing
// mid-run) outlives the run, whichever way the writer resolves the
// conflict: the next run redoes the hour.
func TestRecomputeDirtyKeepsAMarkWrittenMeanwhile(t *testing.T) {
	t.Parallel()
	for name, conflict := range map[string]string{
		"do nothing": `do nothing`,
		"do update":  `do update set marked_at = excluded.marked_at, reason = excluded.reason`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := newStore(t)
			hour := rollup.Period{Kind: rollup.Hour, Start: ts("2026-11-03T08:00:00Z"), End: ts("2026-11-03T09:00:00Z")}
			mark(t, s, hour.Start)
			holder, release := blockRollups(t, s, hour)

			ran := make(chan error, 1)
			go func() {
				_, err := s.RecomputeDirty(context.Background(), store.RollupSpec{ComputedAt: ts("2026-11-03T10:00:00Z")}, time.UTC)
				ran <- err
			}()
			run := blockedBy(t, s, holder) // the run holds the mark, stalled mid-way

			marked := make(chan error, 1)
			go func() {
				_, err := s.Pool().Exec(context.Background(), `
insert into rollup_dirty (hour_start, reason) values ($1, 'reapply') on conflict (hour_start) `+conflict, hour.Start)
				marked <- err
			}()
			blockedBy(t, s, run) // the new mark waits for the run
			release()
			require.NoError(t, <-ran)
			require.NoError(t, <-marked)
			require.Equal(t, []time.Time{hour.Start}, marks(t, s))
		})
	}
}

// A run killed mid-way clears nothing and writes nothing: the next run
// does it all again.
func TestRecomputeDirtyKilledMidway(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	hour := rollup.Period{Kind: rollup.Hour, Start: ts("2026-11-03T08:00:00Z"), End: ts("2026-11-03T09:00:00Z")}
	earlier := ts("2026-11-03T06:00:00Z")
	mark(t, s, earlier)
	mark(t, s, hour.Start)
	holder, release := blockRollups(t, s, hour)
	ctx, cancel := context.WithCancel(t.Context())
	ran := make(chan error, 1)
	go func() {
		_, err := s.RecomputeDirty(ctx, store.RollupSpec{ComputedAt: ts("2026-11-03T10:00:00Z")}, time.UTC)
		ran <- err
	}()
	blockedBy(t, s, holder)
	cancel()
	require.Error(t, <-ran)
	release()

	require.Equal(t, []time.Time{earlier, hour.Start}, marks(t, s))
	var n int
	require.NoError(t, s.Pool().QueryRow(t.Context(), `select count(*) from rollups where period_start = $1`, earlier).Scan(&n))
	require.Zero(t, n, "the hour handled before the kill was rolled back with the rest")
	var data string
	require.NoError(t, s.Pool().QueryRow(t.Context(), `select data::text from rollups where period_start = $1`, hour.Start).Scan(&data))
	require.JSONEq(t, `{"swaps":99}`, data)

	out, err := s.RecomputeDirty(t.Context(), store.RollupSpec{ComputedAt: ts("2026-11-03T10:00:00Z")}, time.UTC)
	require.NoError(t, err)
	require.Equal(t, []time.Time{earlier, hour.Start}, out.Marks)
	require.Empty(t, marks(t, s))
}

// A swap inserted into or deleted from an hour already rolled up marks the
// hour (a late find, a rollback, a re-apply), in the same transaction;
// an hour not rolled up yet is left alone.
func TestSwapChangesMarkRolledUpHours(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	// One session, whose zone must not matter: Kolkata is 5:30 off UTC.
	db, err := s.Pool().Acquire(ctx)
	require.NoError(t, err)
	defer db.Release()
	_, err = db.Exec(ctx, `set timezone = 'Asia/Kolkata'`)
	require.NoError(t, err)
	rolled := ts("2026-11-03T09:00:00Z")
	_, err = db.Exec(ctx, `
insert into rollups (period, period_start, period_end, subject_kind, subject, data, complete, computed_at)
values ('hour', $1, $2, 'competition', 'all', '{}', true, now())`, rolled, rolled.Add(time.Hour))
	require.NoError(t, err)
	swap := func(txid string, at time.Time) {
		_, err := db.Exec(ctx, `
insert into swaps (txid, sender, contract_id, function_name, token_in, amount_in, token_out, amount_out, burn_block_time, tx_status, source)
values ($1, 'SP1', 'SP2.pool', 'swap', 'stx', 1, 'sbtc', 1, $2, 'success', 'sweep')`, txid, at.Unix())
		require.NoError(t, err)
	}
	swap("0xnew", ts("2026-11-03T11:10:00Z")) // an hour not rolled up
	require.Empty(t, marks(t, s))
	swap("0xlate", ts("2026-11-03T09:59:59Z"))
	require.Equal(t, []time.Time{rolled}, marks(t, s), "a late find")
	_, err = db.Exec(ctx, `delete from rollup_dirty`)
	require.NoError(t, err)
	_, err = db.Exec(ctx, `delete from swaps where txid = '0xlate'`)
	require.NoError(t, err)
	require.Equal(t, []time.Time{rolled}, marks(t, s), "a rollback")
}
