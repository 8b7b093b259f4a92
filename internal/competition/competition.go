// Package competition decides which on-chain transactions count as swaps of
// the trading competition: it picks candidates out of an address's history,
// runs the verification gates and turns a transaction's events into a swap
// row. It does no I/O of its own; the ledger, Hiro and the allowlist come in
// through small interfaces so every rule is testable with fakes.
package competition

import "github.com/pacer-dev/pacer/internal/hiro"

// Allowlist is what the competition needs from the swap catalogue.
type Allowlist interface {
	// Allowed reports whether calls of function on contractID count.
	Allowed(contractID, function string) bool
	// ProviderAttribution reports whether contractID's swaps name a
	// provider in their arguments that the swap row must keep.
	ProviderAttribution(contractID string) bool
}

// Where a swap was found; the values are stored in swaps.source.
const (
	SourceAgent     = "agent"
	SourceSweep     = "sweep"
	SourceChainhook = "chainhook"
)

func validSource(s string) bool {
	return s == SourceAgent || s == SourceSweep || s == SourceChainhook
}

// Found reports whether a listing entry is one the sweep counts as found: a
// contract call to an allowlisted (contract, function) pair (SPEC §5.2).
func Found(e hiro.Entry, allow Allowlist) bool {
	return e.TxType == hiro.TxTypeContractCall && e.ContractCall != nil && e.TxID != "" &&
		allow.Allowed(e.ContractCall.ContractID, e.ContractCall.FunctionName)
}

// FoundInPage returns the ids of the page's contract calls to allowlisted
// (contract, function) pairs, in page order and without repeats. These are
// the sweep's "found" transactions (SPEC §5.4).
func FoundInPage(page hiro.Page, allow Allowlist) []string {
	var found []string
	seen := make(map[string]bool)
	for _, tx := range page.Results {
		if tx.TxType != hiro.TxTypeContractCall || tx.ContractCall == nil || tx.TxID == "" || seen[tx.TxID] {
			continue
		}
		if allow.Allowed(tx.ContractCall.ContractID, tx.ContractCall.FunctionName) {
			seen[tx.TxID] = true
			found = append(found, tx.TxID)
		}
	}
	return found
}
