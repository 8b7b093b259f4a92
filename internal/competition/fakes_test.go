package competition

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/hiro"
)

// fakeAllowlist reads the catalogue's JSON the way internal/catalog will, so
// the tests exercise real contract ids.
type fakeAllowlist struct {
	pairs    map[string]map[string]bool
	provider map[string]bool
}

func (a fakeAllowlist) Allowed(contractID, function string) bool {
	return a.pairs[contractID][function]
}
func (a fakeAllowlist) ProviderAttribution(contractID string) bool {
	return a.provider[contractID]
}

func loadAllowlist(t *testing.T) fakeAllowlist {
	t.Helper()
	var doc struct {
		ProviderAttributionContracts []string `json:"provider_attribution_contracts"`
		Allowlist                    []struct {
			ContractID string   `json:"contract_id"`
			Functions  []string `json:"functions"`
		} `json:"allowlist"`
	}
	b, err := os.ReadFile(filepath.Join("testdata", "swap-allowlist.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &doc))

	a := fakeAllowlist{pairs: map[string]map[string]bool{}, provider: map[string]bool{}}
	for _, e := range doc.Allowlist {
		a.pairs[e.ContractID] = map[string]bool{}
		for _, f := range e.Functions {
			a.pairs[e.ContractID][f] = true
		}
	}
	for _, c := range doc.ProviderAttributionContracts {
		a.provider[c] = true
	}
	return a
}

func loadTx(t *testing.T, name string) hiro.Tx {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	var tx hiro.Tx
	require.NoError(t, json.Unmarshal(b, &tx))
	return tx
}

func loadPage(t *testing.T, name string) hiro.Page {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	var p hiro.Page
	require.NoError(t, json.Unmarshal(b, &p))
	return p
}

// fakeLedger is an in-memory ledger whose every call can be made to fail.
type fakeLedger struct {
	mu         sync.Mutex
	swaps      map[string]Swap
	agents     map[string]Agent
	rejections map[string]Rejection
	pending    map[string]string // txid → sender
	existsErr  error
	agentErr   error
	insertErr  error
	knownErr   error
	recordErr  error
	// loseRace makes InsertSwap behave as if another writer inserted first.
	loseRace bool
	// panicIn names a method that panics, to prove the verifier survives.
	panicIn string
	lookups []string
}

func (l *fakeLedger) SwapExists(_ context.Context, txid string) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lookups = append(l.lookups, txid)
	if l.panicIn == "SwapExists" {
		panic("boom")
	}
	_, ok := l.swaps[txid]
	return ok, l.existsErr
}

func (l *fakeLedger) Agent(_ context.Context, stx string) (Agent, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.panicIn == "Agent" {
		panic("boom")
	}
	a, ok := l.agents[stx]
	return a, ok, l.agentErr
}

func (l *fakeLedger) InsertSwap(_ context.Context, s Swap) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.insertErr != nil {
		return false, l.insertErr
	}
	if l.loseRace {
		return false, nil
	}
	delete(l.pending, s.TxID)
	if _, ok := l.swaps[s.TxID]; ok {
		return false, nil
	}
	if l.swaps == nil {
		l.swaps = map[string]Swap{}
	}
	l.swaps[s.TxID] = s
	return true, nil
}

func (l *fakeLedger) KnownRejection(_ context.Context, txid string) (Rejection, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r, ok := l.rejections[txid]
	return r, ok, l.knownErr
}

func (l *fakeLedger) RecordRejection(_ context.Context, r Rejection) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.recordErr != nil {
		return l.recordErr
	}
	if l.rejections == nil {
		l.rejections = map[string]Rejection{}
	}
	l.rejections[r.TxID] = r
	delete(l.pending, r.TxID)
	return nil
}

func (l *fakeLedger) RecordPending(_ context.Context, txid, sender string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.recordErr != nil {
		return l.recordErr
	}
	if l.pending == nil {
		l.pending = map[string]string{}
	}
	l.pending[txid] = sender
	return nil
}

// fakeTxs serves one transaction, or an error, and counts calls.
type fakeTxs struct {
	mu    sync.Mutex
	tx    hiro.Tx
	err   error
	calls int
}

func (f *fakeTxs) Tx(context.Context, string) (hiro.Tx, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	return f.tx, f.err
}
