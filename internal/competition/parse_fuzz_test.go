package competition_test

import (
	"context"
	"encoding/json"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/catalog"
	"github.com/pacer-dev/pacer/internal/competition"
	"github.com/pacer-dev/pacer/internal/hiro"
)

// canonicalAmount is how the ledger must hold an amount: an unsigned decimal
// integer without leading zeros, so that equal amounts compare equal as text.
var canonicalAmount = regexp.MustCompile(`^(0|[1-9][0-9]*)$`)

// addFixtureSeeds seeds a fuzz target with the recorded Hiro transactions, so
// mutations start from real shapes rather than from nothing.
func addFixtureSeeds(f *testing.F) {
	f.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "hiro-tx-*.json"))
	require.NoError(f, err)
	require.NotEmpty(f, paths)
	for _, p := range paths {
		b, err := os.ReadFile(p)
		require.NoError(f, err)
		f.Add(b)
	}
}

// FuzzParseSwap feeds arbitrary transaction JSON through the decoder the
// Hiro client uses and then the swap parser. The parser must never panic,
// must fail only with its documented sentinels, and every swap it returns
// must be internally consistent: exact canonical amounts, the largest net
// flow of each direction, and raw legs and net flows that can be audited.
func FuzzParseSwap(f *testing.F) {
	addFixtureSeeds(f)
	allow := catalog.Default()
	f.Fuzz(func(t *testing.T, body []byte) {
		var tx hiro.Tx
		if json.Unmarshal(body, &tx) != nil {
			return // the client refuses such a body before parsing
		}
		swap, err := competition.ParseSwap(tx, allow)
		again, errAgain := competition.ParseSwap(tx, allow)
		require.Equal(t, err, errAgain, "parsing is deterministic")
		require.Equal(t, swap, again, "parsing is deterministic")
		if err != nil {
			require.True(t, errors.Is(err, competition.ErrNotContractCall) || errors.Is(err, competition.ErrNoTransferEvents) ||
				errors.Is(err, competition.ErrIncompleteEvents) || errors.Is(err, competition.ErrInvalidAmount),
				"undocumented parse error: %v", err)
			require.Equal(t, competition.Swap{}, swap, "a failed parse returns no half-built swap")
			return
		}
		requireConsistentSwap(t, tx, swap)
	})
}

// requireConsistentSwap checks a parsed swap against the transaction it came
// from without re-implementing the parser: it only reads the legs back.
func requireConsistentSwap(t *testing.T, tx hiro.Tx, swap competition.Swap) {
	t.Helper()
	require.Equal(t, hiro.TxTypeContractCall, tx.TxType)
	require.NotNil(t, tx.ContractCall)
	require.NotEmpty(t, swap.Sender)
	require.Equal(t, tx.SenderAddress, swap.Sender)
	require.Equal(t, tx.TxID, swap.TxID)
	require.Equal(t, tx.ContractCall.ContractID, swap.ContractID)
	require.Equal(t, tx.ContractCall.FunctionName, swap.FunctionName)
	require.Equal(t, tx.BurnBlockTime, swap.BurnBlockTime)
	require.Empty(t, swap.Source, "the caller sets the source")
	require.Regexp(t, canonicalAmount, swap.AmountIn)
	require.Regexp(t, canonicalAmount, swap.AmountOut)
	require.NotEmpty(t, swap.TokenIn)
	require.NotEmpty(t, swap.TokenOut)

	require.True(t, json.Valid(swap.RawEventJSON), "raw_event_json is JSON: %s", swap.RawEventJSON)
	var legs competition.Legs
	require.NoError(t, json.Unmarshal(swap.RawEventJSON, &legs))
	require.NotEmpty(t, legs.LegsOut)
	require.NotEmpty(t, legs.LegsIn)
	require.LessOrEqual(t, len(legs.LegsOut)+len(legs.LegsIn), len(tx.Events), "every leg is one event")
	for _, l := range append(slices.Clone(legs.LegsOut), legs.LegsIn...) {
		require.Regexp(t, canonicalAmount, l.Amount)
		require.NotEmpty(t, l.AssetID)
		require.NotEqual(t, swap.Sender, l.Counterparty, "a self-transfer is never a leg")
	}

	// The net flows are the legs added up per asset, and the chosen tokens
	// the largest of each sign.
	sums := map[string]*big.Int{}
	add := func(ls []competition.Leg, sign int64) {
		for _, l := range ls {
			n, ok := new(big.Int).SetString(l.Amount, 10)
			require.True(t, ok)
			if sums[l.AssetID] == nil {
				sums[l.AssetID] = new(big.Int)
			}
			sums[l.AssetID].Add(sums[l.AssetID], n.Mul(n, big.NewInt(sign)))
		}
	}
	add(legs.LegsOut, -1)
	add(legs.LegsIn, 1)
	require.Len(t, legs.NetFlows, len(sums), "one net flow per asset")
	nets := map[string]*big.Int{}
	for _, f := range legs.NetFlows {
		n, ok := new(big.Int).SetString(f.Net, 10)
		require.True(t, ok, "net %q", f.Net)
		require.Zero(t, sums[f.AssetID].Cmp(n), "net of %s", f.AssetID)
		nets[f.AssetID] = n
	}
	in, out := nets[swap.TokenIn], nets[swap.TokenOut]
	require.NotNil(t, in)
	require.NotNil(t, out)
	require.Equal(t, -1, in.Sign(), "token_in left the agent on balance")
	require.Equal(t, 1, out.Sign(), "token_out reached the agent on balance")
	require.Equal(t, new(big.Int).Neg(in).String(), swap.AmountIn)
	require.Equal(t, out.String(), swap.AmountOut)
	for asset, n := range nets {
		require.False(t, n.Sign() < 0 && n.Cmp(in) < 0, "%s left the agent more than token_in", asset)
		require.False(t, n.Sign() > 0 && n.Cmp(out) > 0, "%s reached the agent more than token_out", asset)
	}
	if legs.Provider != "" {
		require.False(t, strings.HasPrefix(legs.Provider, "'"), "the Clarity quote is stripped")
	}
}

// FuzzVerify runs arbitrary Hiro answers through every verification gate
// with the sender registered as a genesis agent, so that the parse and
// insert gates are reached. Verify must never panic (verify_threw), must
// answer with a known status, must insert only consistent swaps, must find
// an inserted swap already known the second time, and must answer a final
// rejection the second time from the ledger, without asking Hiro.
func FuzzVerify(f *testing.F) {
	addFixtureSeeds(f)
	allow := catalog.Default()
	f.Fuzz(func(t *testing.T, body []byte) {
		var tx hiro.Tx
		if json.Unmarshal(body, &tx) != nil || tx.TxID == "" {
			return // the client answers parse_error for these
		}
		ledger := &memLedger{swaps: map[string]competition.Swap{}, rejections: map[string]competition.Rejection{}}
		txs := &fixedTx{tx: tx}
		v := &competition.Verifier{Ledger: ledger, Txs: txs, Allowlist: allow,
			CompetitionStart: time.Unix(0, 0)}
		o := v.Verify(context.Background(), tx.TxID, competition.SourceSweep)
		require.NotEqual(t, competition.ReasonVerifyThrew, o.Reason, "verify hit an unexpected error: %v", o.Err)
		switch o.Status {
		case competition.StatusInserted:
			require.NotNil(t, o.Swap)
			require.Len(t, ledger.swaps, 1)
			require.Equal(t, competition.SourceSweep, o.Swap.Source)
			requireConsistentSwap(t, tx, asParsed(*o.Swap, tx.TxID))
			again := v.Verify(context.Background(), tx.TxID, competition.SourceAgent)
			require.Equal(t, competition.StatusAlreadyKnown, again.Status)
			require.Len(t, ledger.swaps, 1, "no duplicate row")
		case competition.StatusRejected:
			require.True(t, o.Reason.Valid(), "unknown reason %q", o.Reason)
			require.Empty(t, ledger.swaps, "a rejected tx writes no swap")
			// A txid that is not one never reaches Hiro nor the ledger.
			kept := o.Reason.Final() && txs.calls == 1
			require.Equal(t, kept, len(ledger.rejections) == 1, "only final rejections are kept")
			if kept {
				again := v.Verify(context.Background(), tx.TxID, competition.SourceAgent)
				require.Equal(t, o.Reason, again.Reason)
				require.True(t, again.Known)
				require.Equal(t, 1, txs.calls, "a kept rejection is not fetched again")
			}
		case competition.StatusPending:
			require.Empty(t, ledger.swaps)
			require.Len(t, ledger.pending, 1)
		case competition.StatusAlreadyKnown:
			require.Empty(t, ledger.swaps)
		default:
			require.Failf(t, "unknown status", "%q", o.Status)
		}
	})
}

// asParsed undoes what the verifier adds to a parsed swap (the normalised
// txid, the source) so it can be checked against the transaction as Hiro
// sent it.
func asParsed(s competition.Swap, id string) competition.Swap {
	s.TxID, s.Source = id, ""
	return s
}

// memLedger registers every sender as a genesis agent.
type memLedger struct {
	mu         sync.Mutex
	swaps      map[string]competition.Swap
	rejections map[string]competition.Rejection
	pending    []string
}

func (l *memLedger) KnownRejection(_ context.Context, txid string) (competition.Rejection, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r, ok := l.rejections[txid]
	return r, ok, nil
}

func (l *memLedger) RecordRejection(_ context.Context, r competition.Rejection) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rejections[r.TxID] = r
	return nil
}

func (l *memLedger) RecordPending(_ context.Context, txid, _ string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pending = append(l.pending, txid)
	return nil
}

func (l *memLedger) SwapExists(_ context.Context, txid string) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.swaps[txid]
	return ok, nil
}

func (l *memLedger) Agent(_ context.Context, stx string) (competition.Agent, bool, error) {
	id := int64(1)
	return competition.Agent{STXAddress: stx, ERC8004AgentID: &id, ClaimStatus: competition.ClaimVerified}, true, nil
}

func (l *memLedger) InsertSwap(_ context.Context, s competition.Swap) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.swaps[s.TxID]; ok {
		return false, nil
	}
	l.swaps[s.TxID] = s
	return true, nil
}

// fixedTx answers every lookup with one transaction, whatever was asked,
// and counts them.
type fixedTx struct {
	tx    hiro.Tx
	calls int
}

func (f *fixedTx) Tx(context.Context, string) (hiro.Tx, error) {
	f.calls++
	return f.tx, nil
}
