package api_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/sim"
)

// senderOf returns the sender of a world transaction.
func (f *tradeFixture) senderOf(t *testing.T, txid string) string {
	t.Helper()
	for _, tx := range f.world.Transactions() {
		if tx.TxID == txid {
			return tx.Sender
		}
	}
	t.Fatalf("no transaction %s in the world", txid)
	return ""
}

// A sender rejected as sender_not_genesis whose claim is then verified has
// its swap recorded: the rejection is not final (SPEC §5.5). The claim's
// change queues the transaction for the agent's next visit and makes the
// agent due; the fast path, asked again, verifies it anew.
func TestSenderRejectionIsLookedAtAgainWhenTheClaimChanges(t *testing.T) {
	t.Parallel()
	f := newTradeFixture(t)
	ctx := context.Background()
	txid := f.txOf(t, sim.CaseNotGenesis)
	sender := f.senderOf(t, txid)

	code, tr, _ := f.post(t, `{"txid":"`+txid+`"}`)
	require.Equal(t, http.StatusUnprocessableEntity, code)
	require.Equal(t, "sender_not_genesis", tr.Reason)
	code, tr, _ = f.post(t, `{"txid":"`+txid+`"}`)
	require.Equal(t, http.StatusUnprocessableEntity, code, "answered from swap_rejections while nothing changed")
	require.Equal(t, "sender_not_genesis", tr.Reason)

	_, err := f.st.Pool().Exec(ctx, `update agent_ingest set next_run_at = now() + interval '1 hour' where stx_address = $1`, sender)
	require.NoError(t, err)
	_, err = f.st.Pool().Exec(ctx, `update agents set erc8004_agent_id = coalesce(erc8004_agent_id, 4242) where stx_address = $1`, sender)
	require.NoError(t, err)
	_, err = f.st.Pool().Exec(ctx, `
insert into claims (btc_address, status) select btc_address, 'verified' from agents where stx_address = $1
on conflict (btc_address) do update set status = 'verified'`, sender)
	require.NoError(t, err)

	pending, err := f.st.PendingTxs(ctx, sender, 10)
	require.NoError(t, err)
	require.Contains(t, pending, txid, "queued for the agent's next visit")
	row, _, err := f.st.AgentIngestRow(ctx, sender)
	require.NoError(t, err)
	require.False(t, row.NextRunAt.After(time.Now()), "the agent is due now")

	code, tr, _ = f.post(t, `{"txid":"`+txid+`"}`)
	require.Equal(t, http.StatusOK, code, "%+v", tr)
	require.Equal(t, "verified", tr.Status)
}

// Nobody rules a future agent's swaps out by submitting them before the
// agent registers.
func TestEarlySubmissionDoesNotPoisonAFutureAgent(t *testing.T) {
	t.Parallel()
	f := newTradeFixture(t)
	ctx := context.Background()
	txid := f.txOf(t, sim.CaseSwap)
	sender := f.senderOf(t, txid)
	var btc string
	var id *int64
	require.NoError(t, f.st.Pool().QueryRow(ctx, `select btc_address, erc8004_agent_id from agents where stx_address = $1`, sender).Scan(&btc, &id))
	_, err := f.st.Pool().Exec(ctx, `delete from agents where stx_address = $1`, sender)
	require.NoError(t, err)

	code, tr, _ := f.post(t, `{"txid":"`+txid+`"}`)
	require.Equal(t, http.StatusUnprocessableEntity, code)
	require.Equal(t, "sender_not_registered", tr.Reason)

	_, err = f.st.Pool().Exec(ctx, `insert into agents (stx_address, btc_address, erc8004_agent_id) values ($1, $2, $3)`, sender, btc, id)
	require.NoError(t, err)
	pending, err := f.st.PendingTxs(ctx, sender, 10)
	require.NoError(t, err)
	require.Contains(t, pending, txid, "the registration queues the early rejection for the agent's first visit")

	code, tr, _ = f.post(t, `{"txid":"`+txid+`"}`)
	require.Equal(t, http.StatusOK, code, "%+v", tr)
}

// A transaction a chainhook delivery rolled back is not inserted again while
// Hiro still places it in the rolled-back block, even though Hiro says
// canonical: true there (it has not caught up with the rollback yet).
func TestRolledBackSwapWaitsForAnotherBlock(t *testing.T) {
	t.Parallel()
	f := newHookFixture(t, hookSecret)
	ctx := context.Background()
	tx := f.worldTxs(t, 1)[0]
	onHiro, err := f.acts.Hiro.Tx(ctx, tx.TxID)
	require.NoError(t, err)
	require.NotEmpty(t, onHiro.BlockHash)
	b := block{hash: onHiro.BlockHash, height: onHiro.BlockHeight, txs: []sim.WorldTx{tx}}

	resp := f.ok(t, f.delivery(t, []block{b}, nil))
	require.Equal(t, 1, resp.Inserted)
	resp = f.ok(t, f.delivery(t, nil, []block{b}))
	require.Equal(t, 1, resp.SwapsRolledBack)
	require.Empty(t, f.swapSources(t))

	code, tr, _ := f.post(t, `{"txid":"`+tx.TxID+`"}`)
	require.Equal(t, http.StatusAccepted, code, "%+v", tr)
	require.Empty(t, f.swapSources(t), "not inserted while Hiro shows the rolled-back block")
	pending, err := f.st.PendingTxs(ctx, tx.Sender, 10)
	require.NoError(t, err)
	require.Contains(t, pending, tx.TxID, "looked at again at the agent's next visit")

	// Mined again in another block: Hiro shows that block, and it counts.
	_, err = f.st.Pool().Exec(ctx, `update swap_rollbacks set block_hash = '0xother', block_height = block_height - 1 where txid = $1`, tx.TxID)
	require.NoError(t, err)
	code, tr, _ = f.post(t, `{"txid":"`+tx.TxID+`"}`)
	require.Equal(t, http.StatusOK, code, "%+v", tr)
}
