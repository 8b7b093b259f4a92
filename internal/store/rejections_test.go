package store_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/competition"
	"github.com/pacer-dev/pacer/internal/store"
)

func TestRejections(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	const agent = "SP4DXVEC16FS6QR7RBKGWZYJKTXPC81W49W0ATJE"

	_, found, err := s.KnownRejection(ctx, "0x01")
	require.NoError(t, err)
	require.False(t, found)

	first := competition.Rejection{TxID: "0x01", Sender: agent, Reason: competition.ReasonTxFailed, Detail: "transaction ended with abort_by_response"}
	require.NoError(t, s.RecordRejection(ctx, first))
	got, found, err := s.KnownRejection(ctx, "0x01")
	require.NoError(t, err)
	require.True(t, found)
	require.Less(t, got.Age, time.Minute, "the verdict's age")
	got.Age = 0
	require.Equal(t, first, got)

	// Seen again with another reason: the first verdict stands, only the
	// time moves.
	var firstSeen, lastSeen time.Time
	read := func() {
		require.NoError(t, s.Pool().QueryRow(ctx,
			`select first_seen_at, last_seen_at from swap_rejections where txid = '0x01'`).Scan(&firstSeen, &lastSeen))
	}
	read()
	before := lastSeen
	require.NoError(t, s.RecordRejection(ctx, competition.Rejection{TxID: "0x01", Reason: competition.ReasonNotCanonical}))
	got, _, err = s.KnownRejection(ctx, "0x01")
	require.NoError(t, err)
	got.Age = 0
	require.Equal(t, first, got)
	read()
	require.True(t, lastSeen.After(before) || lastSeen.Equal(before))
	require.True(t, !firstSeen.After(before))

	// No sender, no detail: kept as nulls, read back empty.
	require.NoError(t, s.RecordRejection(ctx, competition.Rejection{TxID: "0x02", Reason: competition.ReasonMalformedTx}))
	got, found, err = s.KnownRejection(ctx, "0x02")
	require.NoError(t, err)
	require.True(t, found)
	got.Age = 0
	require.Equal(t, competition.Rejection{TxID: "0x02", Reason: competition.ReasonMalformedTx}, got)

	for _, r := range []competition.Reason{competition.ReasonTxNotFound, competition.ReasonTxFetchFailed,
		competition.ReasonDBUnavailable, competition.ReasonVerifyThrew, "no_such_reason"} {
		require.Error(t, s.RecordRejection(ctx, competition.Rejection{TxID: "0x03", Reason: r}), string(r))
	}
	_, found, err = s.KnownRejection(ctx, "0x03")
	require.NoError(t, err)
	require.False(t, found, "a failure is never kept as a verdict")
}

// Issue 28 finding 10: a verdict that is looked at again (not_canonical,
// incomplete_events) reads back with its age, and a new verdict on the
// transaction replaces it and stands from now.
func TestRevisitedVerdictsAreReplaced(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	require.NoError(t, s.RecordRejection(ctx, competition.Rejection{TxID: "0x05", Reason: competition.ReasonNotCanonical}))
	_, err := s.Pool().Exec(ctx, `update swap_rejections set first_seen_at = now() - interval '11 minutes' where txid = '0x05'`)
	require.NoError(t, err)
	got, _, err := s.KnownRejection(ctx, "0x05")
	require.NoError(t, err)
	require.GreaterOrEqual(t, got.Age, competition.RevisitAfter)
	require.NoError(t, s.RecordRejection(ctx, competition.Rejection{TxID: "0x05", Reason: competition.ReasonIncompleteEvents, Detail: "read 2 of 4"}))
	got, _, err = s.KnownRejection(ctx, "0x05")
	require.NoError(t, err)
	require.Equal(t, competition.ReasonIncompleteEvents, got.Reason)
	require.Equal(t, "read 2 of 4", got.Detail)
	require.Less(t, got.Age, time.Minute, "the new verdict stands from now")
}

func TestPendingTxs(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	const agent, other = "SP4DXVEC16FS6QR7RBKGWZYJKTXPC81W49W0ATJE", "SP1M8KHCJXB3SBRQRDBCG3J3859AA1CN0AWDHN17B"
	register(t, s, agent)
	register(t, s, other)
	// Anyone's mempool transaction can be named to the fast path: only
	// agents' are kept.
	require.NoError(t, s.RecordPending(ctx, "0x0bad", "SP3STRANGER"))
	var strangers int
	require.NoError(t, s.Pool().QueryRow(ctx, `select count(*) from pending_txs where sender = 'SP3STRANGER'`).Scan(&strangers))
	require.Zero(t, strangers, "a sender that is not an agent gets no row")

	for _, txid := range []string{"0x0a", "0x0b", "0x0c", "0x0d"} {
		require.NoError(t, s.RecordPending(ctx, txid, agent))
	}
	require.NoError(t, s.RecordPending(ctx, "0x0a", agent), "keeping it again changes nothing")
	require.NoError(t, s.RecordPending(ctx, "0x0e", other))

	pending, err := s.PendingTxs(ctx, agent, 10)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"0x0a", "0x0b", "0x0c", "0x0d"}, pending)
	pending, err = s.PendingTxs(ctx, agent, 2)
	require.NoError(t, err)
	require.Len(t, pending, 2)
	_, err = s.PendingTxs(ctx, agent, 0)
	require.Error(t, err)

	// Mined into a swap, rejected, dropped: each stops being pending.
	_, err = s.InsertSwap(ctx, testSwap("0x0a"))
	require.NoError(t, err)
	require.NoError(t, s.RecordRejection(ctx, competition.Rejection{TxID: "0x0b", Sender: agent, Reason: competition.ReasonTxFailed}))
	require.NoError(t, s.ForgetPending(ctx, "0x0c"))
	// A swap another writer inserted first still ends the pending state.
	_, err = s.InsertSwap(ctx, testSwap("0x0f"))
	require.NoError(t, err)
	require.NoError(t, s.RecordPending(ctx, "0x0f", agent))
	inserted, err := s.InsertSwap(ctx, testSwap("0x0f"))
	require.NoError(t, err)
	require.False(t, inserted)

	pending, err = s.PendingTxs(ctx, agent, 10)
	require.NoError(t, err)
	require.Equal(t, []string{"0x0d"}, pending)
}

// The plan's Verify step looks at a pending transaction again once it has
// waited its interval since it was first seen or last looked at; a visit
// of its sender makes it due at once; a deregistered agent's are not due.
func TestDuePending(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	const agent, gone = "SP4DXVEC16FS6QR7RBKGWZYJKTXPC81W49W0ATJE", "SP1M8KHCJXB3SBRQRDBCG3J3859AA1CN0AWDHN17B"
	register(t, s, agent)
	register(t, s, gone)
	for _, txid := range []string{"0x0a", "0x0b", "0x0c"} {
		require.NoError(t, s.RecordPending(ctx, txid, agent))
	}
	require.NoError(t, s.RecordPending(ctx, "0x0d", gone))
	_, err := s.Pool().Exec(ctx, `update pending_txs set first_seen_at = now() - interval '1 hour' where txid in ('0x0a', '0x0d')`)
	require.NoError(t, err)
	_, err = s.Pool().Exec(ctx, `update agents set deregistered_at = now() where stx_address = $1`, gone)
	require.NoError(t, err)

	due, err := s.DuePending(ctx, 15*time.Minute, 10)
	require.NoError(t, err)
	require.Equal(t, []store.PendingTx{{TxID: "0x0a", Sender: agent}}, due, "seen an hour ago; the others too recently, or a former agent's")

	require.NoError(t, s.CheckedPending(ctx, []string{"0x0a"}))
	due, err = s.DuePending(ctx, 15*time.Minute, 10)
	require.NoError(t, err)
	require.Empty(t, due, "looked at just now")

	require.NoError(t, s.PendingDueOf(ctx, agent))
	due, err = s.DuePending(ctx, 15*time.Minute, 2)
	require.NoError(t, err)
	require.Len(t, due, 2, "a visit made the agent's due at once, at most the limit")
	_, err = s.DuePending(ctx, 0, 0)
	require.Error(t, err)
}

// A pending transaction the ledger already judged leaves the table when
// it is looked at again; one still pending stays, looked at.
func TestCheckedPendingForgetsWhatTheLedgerKnows(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	const agent = "SP4DXVEC16FS6QR7RBKGWZYJKTXPC81W49W0ATJE"
	register(t, s, agent)
	for _, txid := range []string{"0x0a", "0x0b", "0x0c"} {
		require.NoError(t, s.RecordPending(ctx, txid, agent))
	}
	_, err := s.Pool().Exec(ctx, `insert into swap_rejections (txid, sender, reason, first_seen_at, last_seen_at) values ('0x0b', $1, 'tx_failed', now(), now())`, agent)
	require.NoError(t, err)
	_, err = s.Pool().Exec(ctx, `insert into swaps (txid, sender, contract_id, function_name, token_in, amount_in,
		token_out, amount_out, burn_block_time, tx_status, source) values ('0x0c', 'SP1', 'SP2.c', 'f', 'stx', 1, 'x', 1, 1, 'success', 'sweep')`)
	require.NoError(t, err)
	require.NoError(t, s.CheckedPending(ctx, []string{"0x0a", "0x0b", "0x0c"}))
	pending, err := s.PendingTxs(ctx, agent, 10)
	require.NoError(t, err)
	require.Equal(t, []string{"0x0a"}, pending)
	var checked bool
	require.NoError(t, s.Pool().QueryRow(ctx, `select checked_at is not null from pending_txs where txid = '0x0a'`).Scan(&checked))
	require.True(t, checked)
}
