package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/store"
)

// One worker at a time holds the push lease; it goes when released.
func TestPushLeaseIsHeldOnce(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	const key = 7_700_001
	first, err := s.TryLease(ctx, key)
	require.NoError(t, err)
	require.NotNil(t, first)
	released := false
	t.Cleanup(func() { // a failed check must not leave the pool waiting on the lease's connection
		if !released {
			first.Release()
		}
	})
	require.NoError(t, first.Check(ctx))
	second, err := s.TryLease(ctx, key)
	require.NoError(t, err)
	require.Nil(t, second, "held by the first session")
	// Another schema of the same database (another deployment, another
	// test) has a lease of its own under the same key.
	other, err := newStore(t).TryLease(ctx, key)
	require.NoError(t, err)
	require.NotNil(t, other, "another schema's lease is its own")
	other.Release()
	first.Release()
	released = true
	second, err = s.TryLease(ctx, key)
	require.NoError(t, err)
	require.NotNil(t, second, "released: the next may take it")
	second.Release()
}

// A pushed transaction of a registered agent waits for the Verify step,
// due at once and marked pushed; a stranger's is not kept; one kept as
// pending becomes due at once. The holder's standing is live only while
// it keeps writing.
func TestRecordPushed(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	const agent, stranger = "SP4DXVEC16FS6QR7RBKGWZYJKTXPC81W49W0ATJE", "SP1M8KHCJXB3SBRQRDBCG3J3859AA1CN0AWDHN17B"
	register(t, s, agent)

	queued, err := s.RecordPushed(ctx, "0x01", stranger)
	require.NoError(t, err)
	require.False(t, queued, "not an agent's")
	require.NoError(t, s.RecordPending(ctx, "0x02", agent)) // seen in the mempool just now: not due
	due, err := s.DuePending(ctx, 15*time.Minute, 10)
	require.NoError(t, err)
	require.Empty(t, due)

	for _, txid := range []string{"0x03", "0x02"} {
		queued, err = s.RecordPushed(ctx, txid, agent)
		require.NoError(t, err)
		require.True(t, queued, txid)
	}
	due, err = s.DuePending(ctx, 15*time.Minute, 10)
	require.NoError(t, err)
	require.ElementsMatch(t, []store.PendingTx{{TxID: "0x02", Sender: agent, Pushed: true}, {TxID: "0x03", Sender: agent, Pushed: true}}, due)

	_, found, err := s.ReadPushState(ctx, 30*time.Second)
	require.NoError(t, err)
	require.False(t, found)
	since := time.Now().Add(-time.Minute).Truncate(time.Microsecond)
	require.NoError(t, s.SavePushState(ctx, store.PushState{Holder: "w:1", Live: true, Since: since, Messages: 9, Sockets: 2, LiveSockets: 2}))
	st, found, err := s.ReadPushState(ctx, 30*time.Second)
	require.NoError(t, err)
	require.True(t, found && st.Live)
	require.Equal(t, int64(9), st.Messages)
	require.True(t, since.Equal(st.Since))
	_, err = s.Pool().Exec(ctx, `update push_state set updated_at = now() - interval '1 minute'`)
	require.NoError(t, err)
	st, _, err = s.ReadPushState(ctx, 30*time.Second)
	require.NoError(t, err)
	require.False(t, st.Live, "its holder stopped writing")
}

// TestListenPushedHearsWhatRecordPushedQueues: a listener hears each
// transaction a push queued, as its row commits, and nothing for a push
// that queued nothing (a stranger's).
func TestListenPushedHearsWhatRecordPushedQueues(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx, cancel := context.WithCancel(t.Context())
	const agent, stranger = "SP4DXVEC16FS6QR7RBKGWZYJKTXPC81W49W0ATJE", "SP1M8KHCJXB3SBRQRDBCG3J3859AA1CN0AWDHN17B"
	register(t, s, agent)
	heard := make(chan string, 8)
	done := make(chan error, 1)
	go func() { done <- s.ListenPushed(ctx, func(txid string) { heard <- txid }) }()
	require.Equal(t, "", <-heard, "listening")

	// Another schema of the same database (another deployment, another
	// test) pushes first: its channel is the database's, its push not ours.
	other := newStore(t)
	register(t, other, agent)
	queued, err := other.RecordPushed(ctx, "0x09", agent)
	require.NoError(t, err)
	require.True(t, queued)
	for _, p := range []struct{ txid, sender string }{{"0x01", stranger}, {"0x02", agent}} {
		_, err := s.RecordPushed(ctx, p.txid, p.sender)
		require.NoError(t, err)
	}
	require.Equal(t, "0x02", <-heard, "the agent's push, not the stranger's or another schema's before it")
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	require.Empty(t, heard)
}
