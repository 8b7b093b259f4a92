package competition

// Reason is why a found transaction did not become a swap. The values are
// the keys of the sweep result's rejectionReasons (SPEC §5.5) and of the fast
// path's 422 answers, so they are fixed.
type Reason string

// The rejection reasons (SPEC §5.5).
const (
	ReasonSenderNotRegistered    Reason = "sender_not_registered"
	ReasonSenderNotGenesis       Reason = "sender_not_genesis"
	ReasonContractNotAllowlisted Reason = "contract_not_allowlisted"
	ReasonTxNotFound             Reason = "tx_not_found"
	ReasonTxFetchFailed          Reason = "tx_fetch_failed"
	ReasonTxFailed               Reason = "tx_failed"
	ReasonBeforeCompStart        Reason = "before_comp_start"
	ReasonMalformedTx            Reason = "malformed_tx"
	ReasonInvalidAmount          Reason = "invalid_amount"
	ReasonIncompleteEvents       Reason = "incomplete_events"
	ReasonNotCanonical           Reason = "not_canonical"
	ReasonDBUnavailable          Reason = "db_unavailable"
	ReasonVerifyThrew            Reason = "verify_threw"
)

// AllReasons returns every reason in SPEC order. It is a fresh slice each
// call, so callers may keep or change it.
func AllReasons() []Reason {
	return []Reason{
		ReasonSenderNotRegistered,
		ReasonSenderNotGenesis,
		ReasonContractNotAllowlisted,
		ReasonTxNotFound,
		ReasonTxFetchFailed,
		ReasonTxFailed,
		ReasonBeforeCompStart,
		ReasonMalformedTx,
		ReasonInvalidAmount,
		ReasonIncompleteEvents,
		ReasonNotCanonical,
		ReasonDBUnavailable,
		ReasonVerifyThrew,
	}
}

// Valid reports whether r is one of the thirteen reasons.
func (r Reason) Valid() bool {
	for _, known := range AllReasons() {
		if r == known {
			return true
		}
	}
	return false
}

// Final reports whether r is a verdict about the transaction itself, which
// no later look can change: it is kept in swap_rejections and the
// transaction is never fetched again. The others (Hiro or the database
// failing, a bug) say nothing about the transaction.
func (r Reason) Final() bool {
	switch r {
	case ReasonTxNotFound, ReasonTxFetchFailed, ReasonDBUnavailable, ReasonVerifyThrew:
		return false
	}
	return r.Valid()
}

// SenderDependent reports whether r depends on who the sender is rather
// than on the transaction (SPEC §5.5): kept in swap_rejections, but looked
// at again when the sender's agents row or claim changes.
func (r Reason) SenderDependent() bool {
	return r == ReasonSenderNotRegistered || r == ReasonSenderNotGenesis
}

// Revisited reports whether r is a verdict from a passing upstream state
// (a fork that lost, an indexer still writing the events): kept in
// swap_rejections, but it stands only for RevisitAfter from when it was
// reached; a look after that verifies the transaction again (SPEC §5.5).
// Otherwise anyone could name a rival's txid during a fork window or an
// indexer lag and exclude that swap for good.
func (r Reason) Revisited() bool {
	return r == ReasonNotCanonical || r == ReasonIncompleteEvents
}

// RejectionReasons returns the rejectionReasons map of a sweep result: every
// reason present, zero when unused, as the contract requires. counts may be
// nil; a count under an unknown reason is dropped rather than leaking a key
// the contract does not define.
func RejectionReasons(counts map[Reason]int) map[string]int {
	out := make(map[string]int, len(AllReasons()))
	for _, r := range AllReasons() {
		out[string(r)] = counts[r]
	}
	return out
}
