package competition

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/fault"
	"github.com/pacer-dev/pacer/internal/hiro"
)

// fakeBatch serves one good transaction under any id it knows, in batches,
// and counts what it was asked.
type fakeBatch struct {
	fakeTxs
	known   map[string]bool
	batches [][]string
}

func (f *fakeBatch) Txs(_ context.Context, ids []string) (map[string]hiro.TxResult, int, error) {
	f.batches = append(f.batches, ids)
	out := map[string]hiro.TxResult{}
	for _, id := range ids {
		if !f.known[id] {
			out[id] = hiro.TxResult{Err: fault.Errorf(pacer.ClassNotFound, "fake", "no %s", id)}
			continue
		}
		tx := f.tx
		tx.TxID = id
		out[id] = hiro.TxResult{Tx: tx}
	}
	return out, 1, nil
}

func TestVerifyManyFetchesOnceInOneBatch(t *testing.T) {
	t.Parallel()
	ledger := &fakeLedger{agents: map[string]Agent{agentAddr: genesisAgent()}}
	second := "0x" + strings.Repeat("b", 64)
	missing := "0x" + strings.Repeat("c", 64)
	src := &fakeBatch{fakeTxs: fakeTxs{tx: loadTx(t, "hiro-tx-stableswap-stx-ststx.json")}, known: map[string]bool{goodTxID: true, second: true}}
	v := &Verifier{Ledger: ledger, Txs: src, Allowlist: loadAllowlist(t), CompetitionStart: compStart}

	got := v.VerifyMany(t.Context(), []string{goodTxID, second, strings.ToUpper(goodTxID[2:]), missing, "zz"}, SourceSweep)

	require.Len(t, src.batches, 1, "one request for every transaction the ledger could not answer")
	require.Equal(t, []string{goodTxID, second, missing}, src.batches[0], "each once, however it was written")
	require.Equal(t, StatusInserted, got[0].Status)
	require.Equal(t, StatusInserted, got[1].Status)
	require.Equal(t, got[0], got[2], "a repeat shares its first outcome")
	require.Equal(t, ReasonTxNotFound, got[3].Reason)
	require.Equal(t, ReasonMalformedTx, got[4].Reason)
	require.Equal(t, 1, got[0].Requests+got[1].Requests+got[3].Requests)
	require.Zero(t, src.calls, "no single request")

	again := v.VerifyMany(t.Context(), []string{goodTxID, second}, SourceSweep)
	require.Len(t, src.batches, 1, "the ledger answers a second pass")
	require.Equal(t, StatusAlreadyKnown, again[0].Status)
}

// A listing's entries: the listing decides what it can, a pending one
// waits, and the rest are fetched in one batch, a repeat once.
func TestVerifyEntriesDecidesFromTheListingAndFetchesEachOnce(t *testing.T) {
	t.Parallel()
	ledger := &fakeLedger{agents: map[string]Agent{agentAddr: genesisAgent()}}
	second, failed, pending := "0x"+strings.Repeat("b", 64), "0x"+strings.Repeat("d", 64), "0x"+strings.Repeat("e", 64)
	src := &fakeBatch{fakeTxs: fakeTxs{tx: loadTx(t, "hiro-tx-stableswap-stx-ststx.json")}, known: map[string]bool{goodTxID: true, second: true}}
	v := &Verifier{Ledger: ledger, Txs: src, Allowlist: loadAllowlist(t), CompetitionStart: compStart}
	mined := func(id, status string) hiro.Entry {
		return hiro.Entry{TxID: id, TxStatus: status, BlockHeight: 9, Canonical: true, BurnBlockTime: compStart.Unix() + 60}
	}

	got := v.VerifyEntries(t.Context(), []hiro.Entry{mined(goodTxID, hiro.StatusSuccess), mined(failed, "abort_by_response"),
		{TxID: pending, TxStatus: hiro.StatusPending}, mined(goodTxID, hiro.StatusSuccess), mined(second, hiro.StatusSuccess)}, SourceSweep)

	require.Equal(t, [][]string{{goodTxID, second}}, src.batches, "one batch, the repeat and the listing's verdicts left out")
	require.Equal(t, StatusInserted, got[0].Status)
	require.Equal(t, ReasonTxFailed, got[1].Reason, "decided from the listing")
	require.Equal(t, StatusPending, got[2].Status)
	require.Equal(t, StatusAlreadyKnown, got[3].Status, "a repeat counts once")
	require.Zero(t, got[3].Requests)
	require.Equal(t, StatusInserted, got[4].Status)
}
