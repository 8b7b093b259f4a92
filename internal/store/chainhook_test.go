package store_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/competition"
	"github.com/pacer-dev/pacer/internal/store"
)

func chainhookSwap(t *testing.T, s *store.Store, n int, bbt int64) competition.Swap {
	t.Helper()
	sw := competition.Swap{TxID: fmt.Sprintf("0x%064x", n), Sender: fmt.Sprintf("SPAGENT%d", n),
		ContractID: "SP1.pool", FunctionName: "swap-x-for-y", TokenIn: "stx", AmountIn: "100",
		TokenOut: "SP2.tok::tok", AmountOut: "7", BurnBlockTime: bbt, TxStatus: "success",
		Source: competition.SourceSweep, RawEventJSON: []byte(`{"legsIn":[]}`)}
	ok, err := s.InsertSwap(t.Context(), sw)
	require.NoError(t, err)
	require.True(t, ok)
	return sw
}

func swapIDs(t *testing.T, s *store.Store) []string {
	t.Helper()
	swaps, err := s.Swaps(t.Context())
	require.NoError(t, err)
	ids := make([]string, len(swaps))
	for i, sw := range swaps {
		ids[i] = sw.TxID
	}
	return ids
}

func TestRollbackBlock(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	// 2026-05-14 19:30:00 and 20:10:00 UTC.
	const early, late = int64(1778787000), int64(1778789400)
	a := chainhookSwap(t, s, 1, early)
	b := chainhookSwap(t, s, 2, late)
	c := chainhookSwap(t, s, 3, late)

	unknown := fmt.Sprintf("0x%064x", 99)
	moved, err := s.RollbackBlock(ctx, "0xb1", 100, []string{a.TxID, b.TxID, unknown})
	require.NoError(t, err)
	require.Equal(t, []store.RolledBackSwap{{TxID: a.TxID, Sender: a.Sender, BurnBlockTime: early},
		{TxID: b.TxID, Sender: b.Sender, BurnBlockTime: late}}, moved)
	require.Equal(t, []string{c.TxID}, swapIDs(t, s), "exactly the rolled-back swaps left")

	var kept int
	var amount, source string
	require.NoError(t, s.Pool().QueryRow(ctx, `select count(*), min(amount_in::text), min(source) from swap_rollbacks where block_hash = '0xb1'`).Scan(&kept, &amount, &source))
	require.Equal(t, 2, kept)
	require.Equal(t, "100", amount)
	require.Equal(t, competition.SourceSweep, source)

	hours, err := s.DirtyHours(ctx)
	require.NoError(t, err)
	require.Equal(t, []time.Time{time.Date(2026, 5, 14, 19, 0, 0, 0, time.UTC), time.Date(2026, 5, 14, 20, 0, 0, 0, time.UTC)},
		utc(hours))

	// A replay changes nothing.
	moved, err = s.RollbackBlock(ctx, "0xb1", 100, []string{a.TxID, b.TxID})
	require.NoError(t, err)
	require.Empty(t, moved)
	require.NoError(t, s.Pool().QueryRow(ctx, `select count(*) from swap_rollbacks`).Scan(&kept))
	require.Equal(t, 2, kept)

	// a is re-applied in another block and inserted again: the stale
	// rollback of its old block leaves it alone, and its hour is dirty.
	first, err := s.NoteApplied(ctx, []store.ChainhookTx{{TxID: a.TxID, BlockHash: "0xb2", BlockHeight: 101}})
	require.NoError(t, err)
	require.Empty(t, first, "a's rollback named it before")
	ok, err := s.InsertSwap(ctx, a)
	require.NoError(t, err)
	require.True(t, ok)
	_, err = s.Pool().Exec(ctx, `delete from rollup_dirty`)
	require.NoError(t, err)
	marked, err := s.MarkReapplied(ctx, a.TxID, a.BurnBlockTime)
	require.NoError(t, err)
	require.True(t, marked)
	marked, err = s.MarkReapplied(ctx, c.TxID, c.BurnBlockTime)
	require.NoError(t, err)
	require.False(t, marked, "c was never rolled back")
	hours, err = s.DirtyHours(ctx)
	require.NoError(t, err)
	require.Equal(t, []time.Time{time.Date(2026, 5, 14, 19, 0, 0, 0, time.UTC)}, utc(hours))

	moved, err = s.RollbackBlock(ctx, "0xb1", 100, []string{a.TxID})
	require.NoError(t, err)
	require.Empty(t, moved, "a stale rollback of the old block")
	require.ElementsMatch(t, []string{a.TxID, c.TxID}, swapIDs(t, s))

	// Rolling back its new block moves it again, kept under that block.
	moved, err = s.RollbackBlock(ctx, "0xb2", 101, []string{a.TxID})
	require.NoError(t, err)
	require.Len(t, moved, 1)
	require.NoError(t, s.Pool().QueryRow(ctx, `select count(*) from swap_rollbacks where txid = $1`, a.TxID).Scan(&kept))
	require.Equal(t, 2, kept)
}

func TestNoteAppliedForgetsNotCanonical(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	id, other := fmt.Sprintf("0x%064x", 7), fmt.Sprintf("0x%064x", 8)
	require.NoError(t, s.RecordRejection(ctx, competition.Rejection{TxID: id, Reason: competition.ReasonNotCanonical}))
	require.NoError(t, s.RecordRejection(ctx, competition.Rejection{TxID: other, Reason: competition.ReasonTxFailed}))
	first, err := s.NoteApplied(ctx, []store.ChainhookTx{{TxID: id, BlockHash: "0xb", BlockHeight: 1}, {TxID: other, BlockHash: "0xb", BlockHeight: 1}})
	require.NoError(t, err)
	require.Equal(t, map[string]bool{id: true, other: true}, first)
	_, found, err := s.KnownRejection(ctx, id)
	require.NoError(t, err)
	require.False(t, found, "back on the canonical chain: verified anew")
	_, found, err = s.KnownRejection(ctx, other)
	require.NoError(t, err)
	require.True(t, found, "a failed transaction stays failed")
}

func TestChainhookStateAndAgents(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	_, _, found, err := s.ChainhookState(ctx)
	require.NoError(t, err)
	require.False(t, found)
	at := time.Date(2026, 5, 14, 19, 0, 0, 0, time.UTC)
	require.NoError(t, s.NoteChainhookDelivery(ctx, at))
	require.NoError(t, s.NoteChainhookDelivery(ctx, at.Add(-time.Minute)))
	last, n, found, err := s.ChainhookState(ctx)
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, int64(2), n)
	require.True(t, last.Equal(at), "a late delivery never moves the time back")

	require.NoError(t, s.UpsertAgent(ctx, competition.Agent{STXAddress: "SPA"}, ""))
	got, err := s.RegisteredAgents(ctx, []string{"SPA", "SPB"})
	require.NoError(t, err)
	require.Equal(t, []string{"SPA"}, got)
}

func utc(ts []time.Time) []time.Time {
	out := make([]time.Time, len(ts))
	for i, t := range ts {
		out[i] = t.UTC()
	}
	return out
}
