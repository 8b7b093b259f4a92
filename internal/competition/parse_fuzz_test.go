package competition_test

import (
	"context"
	"encoding/json"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"regexp"
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
// must be internally consistent: exact canonical amounts, the largest leg of
// each direction, and raw legs that can be audited.
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

	in := largestLeg(t, legs.LegsOut)
	out := largestLeg(t, legs.LegsIn)
	require.Equal(t, in.AssetID, swap.TokenIn)
	require.Equal(t, in.Amount, swap.AmountIn)
	require.Equal(t, out.AssetID, swap.TokenOut)
	require.Equal(t, out.Amount, swap.AmountOut)
	for _, l := range legs.LegsOut {
		require.NotEqual(t, swap.Sender, l.Counterparty, "a self-transfer is never a leg")
	}
	for _, l := range legs.LegsIn {
		require.NotEqual(t, swap.Sender, l.Counterparty, "a self-transfer is never a leg")
	}
	if legs.Provider != "" {
		require.False(t, strings.HasPrefix(legs.Provider, "'"), "the Clarity quote is stripped")
	}
}

// largestLeg returns the first of the largest legs, the parser's documented
// tie-break.
func largestLeg(t *testing.T, legs []competition.Leg) competition.Leg {
	t.Helper()
	var best competition.Leg
	var max *big.Int
	for _, l := range legs {
		require.Regexp(t, canonicalAmount, l.Amount)
		require.NotEmpty(t, l.AssetID)
		n, ok := new(big.Int).SetString(l.Amount, 10)
		require.True(t, ok)
		if max == nil || n.Cmp(max) > 0 {
			best, max = l, n
		}
	}
	return best
}

// FuzzVerify runs arbitrary Hiro answers through every verification gate
// with the sender registered as a genesis agent, so that the parse and
// insert gates are reached. Verify must never panic (verify_threw), must
// answer with a known status, must insert only consistent swaps, and must
// find an inserted swap already known the second time.
func FuzzVerify(f *testing.F) {
	addFixtureSeeds(f)
	allow := catalog.Default()
	f.Fuzz(func(t *testing.T, body []byte) {
		var tx hiro.Tx
		if json.Unmarshal(body, &tx) != nil || tx.TxID == "" {
			return // the client answers parse_error for these
		}
		ledger := &memLedger{swaps: map[string]competition.Swap{}}
		v := &competition.Verifier{Ledger: ledger, Txs: fixedTx{tx}, Allowlist: allow,
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
			require.Empty(t, ledger.swaps, "a rejected tx writes nothing")
		case competition.StatusPending, competition.StatusAlreadyKnown:
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
	mu    sync.Mutex
	swaps map[string]competition.Swap
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

// fixedTx answers every lookup with one transaction, whatever was asked.
type fixedTx struct{ tx hiro.Tx }

func (f fixedTx) Tx(context.Context, string) (hiro.Tx, error) { return f.tx, nil }
