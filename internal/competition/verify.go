package competition

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/fault"
	"github.com/pacer-dev/pacer/internal/hiro"
	"github.com/pacer-dev/pacer/internal/tally"
)

// Agent is what the verifier needs to know about a registered agent.
type Agent struct {
	STXAddress     string
	BTCAddress     string
	ERC8004AgentID *int64
	// ClaimStatus is the status of the agent's claim, "" when it has none.
	ClaimStatus string
}

// Claim statuses that make an agent a genesis agent, allowed to compete.
const (
	ClaimVerified = "verified"
	ClaimRewarded = "rewarded"
)

// Ledger is the verifier's view of Postgres.
type Ledger interface {
	SwapExists(ctx context.Context, txid string) (bool, error)
	// KnownRejection returns the final rejection kept for txid, marking it
	// seen again; found is false when there is none.
	KnownRejection(ctx context.Context, txid string) (r Rejection, found bool, err error)
	// Agent looks an agent up by STX address; found is false when none is
	// registered.
	Agent(ctx context.Context, stx string) (agent Agent, found bool, err error)
	// InsertSwap inserts with ON CONFLICT (txid) DO NOTHING; inserted is
	// false when another writer got there first. The transaction stops
	// being pending either way.
	InsertSwap(ctx context.Context, swap Swap) (inserted bool, err error)
	// RecordRejection keeps a final rejection (swap_rejections), or marks
	// a kept one seen again; the transaction stops being pending.
	RecordRejection(ctx context.Context, r Rejection) error
	// RecordPending keeps a transaction still in the mempool
	// (pending_txs), so the next visit of its sender looks at it again.
	RecordPending(ctx context.Context, txid, sender string) error
}

// Rollback is a block a chainhook delivery rolled a transaction back from
// (swap_rollbacks).
type Rollback struct {
	BlockHash   string
	BlockHeight int64
	// Age is how long ago the rollback came.
	Age time.Duration
}

// RollbackHold is how long a rollback holds a transaction out while Hiro
// still shows it canonical in the rolled-back block: Hiro follows a real
// reorg within minutes, so past it Hiro's word stands over the
// delivery's (a rollback naming a swap's real block cannot hold it out
// for good).
const RollbackHold = 30 * time.Minute

// RollbackLedger is a Ledger that knows the rollbacks (*store.Store is one).
// A transaction rolled back is not inserted again until Hiro shows it in a
// block that was not rolled back (SPEC §5.5, §11).
type RollbackLedger interface {
	Rollbacks(ctx context.Context, txid string) ([]Rollback, error)
}

// PushLedger is a Ledger that knows the swaps chainhook deliveries
// recorded from their own operations and no reader has confirmed yet
// (chainhook_pushed; *store.Store is one). A reader verifies such a
// transaction although swaps has it, and the chain's answer settles the
// row: it replaces the delivery's values (ConfirmSwap, a mismatch named)
// or, when the chain does not back it, removes it (DropPushed). One row,
// never two (SPEC §11).
type PushLedger interface {
	Unconfirmed(ctx context.Context, txid string) (bool, error)
	ConfirmSwap(ctx context.Context, swap Swap) (diff []string, confirmed bool, err error)
	DropPushed(ctx context.Context, txid string) (dropped bool, err error)
}

// Rejection is a final verdict on a transaction, as swap_rejections keeps it.
type Rejection struct {
	TxID string
	// Sender is the transaction's sender, "" when unknown.
	Sender string
	Reason Reason
	Detail string
	// Age is how long ago the verdict was reached (KnownRejection sets
	// it): a Revisited one stands for RevisitAfter.
	Age time.Duration
}

// RevisitAfter is how long a Revisited verdict stands before a look at the
// transaction verifies it again: longer than a fork or an indexer lag
// usually lasts, short enough that a swap excluded by one is back within
// the hour's rollup.
const RevisitAfter = 10 * time.Minute

// TxSource fetches a transaction with its events; *hiro.Client is one.
type TxSource interface {
	Tx(ctx context.Context, txid string) (hiro.Tx, error)
}

var _ TxSource = (*hiro.Client)(nil)

// Status is how a verification ended.
type Status string

const (
	// StatusInserted means the swap is new and now in the ledger.
	StatusInserted Status = "inserted"
	// StatusAlreadyKnown means the ledger already had the swap (maybe from a
	// concurrent writer); the caller reads the row if it needs it.
	StatusAlreadyKnown Status = "already_known"
	// StatusPending means still in the mempool; nothing is written, the next
	// pass looks again.
	StatusPending Status = "pending"
	// StatusRejected means Reason says why, including failures of Hiro or the
	// database that make the answer unknown for now.
	StatusRejected Status = "rejected"
)

// Outcome is the result of verifying one transaction.
type Outcome struct {
	// TxID is the id as verified, normalised to 0x + lower-case hex.
	TxID   string
	Status Status
	// Swap is the inserted row (StatusInserted only).
	Swap *Swap
	// Reason and Detail explain a rejection; Detail is for people.
	Reason Reason
	Detail string
	// Err is the cause of a failure (Hiro, the database, a panic), kept so
	// the caller can log it and read its class.
	Err error
	// Known says the rejection was answered from swap_rejections, without
	// asking Hiro.
	Known bool
	// Requests is how many Hiro requests the verification sent (a
	// transaction's event pages, retries included).
	Requests int
	// LedgerErr is set when the verdict stands but could not be recorded
	// (as a rejection or as pending): nothing is lost, the transaction is
	// looked at again next time.
	LedgerErr error
}

// HTTPStatus is the status the fast path answers with (SPEC §5.7).
func (o Outcome) HTTPStatus() int {
	switch o.Status {
	case StatusInserted:
		return http.StatusOK
	case StatusPending:
		return http.StatusAccepted
	case StatusAlreadyKnown:
		return http.StatusConflict
	case StatusRejected:
		switch o.Reason {
		case ReasonTxNotFound:
			return http.StatusNotFound
		case ReasonTxFetchFailed:
			return http.StatusBadGateway
		case ReasonDBUnavailable:
			return http.StatusServiceUnavailable
		case ReasonVerifyThrew:
			return http.StatusInternalServerError
		default:
			return http.StatusUnprocessableEntity
		}
	}
	return http.StatusInternalServerError
}

// Class is the error class of a failure, "" when the outcome is a verdict.
// A sweep uses it to stop early when Hiro says its quota is spent.
func (o Outcome) Class() pacer.ErrorClass {
	if o.Err == nil {
		return ""
	}
	return fault.ClassOf(o.Err)
}

// AddTo counts the outcome into a sweep's result: one allowlisted call
// found, what became of it, and its error's class.
func (o Outcome) AddTo(r *pacer.SweepResult) {
	r.Found++
	tally.Count(&r.Run, o.Class())
	switch o.Status {
	case StatusInserted:
		r.Inserted++
	case StatusAlreadyKnown:
		r.AlreadyKnown++
	case StatusPending:
		r.Pending++
	case StatusRejected:
		r.Rejected++
		if r.RejectionReasons == nil {
			r.RejectionReasons = map[string]int{}
		}
		r.RejectionReasons[string(o.Reason)]++
	}
}

// Verifier runs the gates of SPEC §5.5. The same value serves the sweep and
// the agent fast path; it is safe for concurrent use if its dependencies are.
type Verifier struct {
	Ledger    Ledger
	Txs       TxSource
	Allowlist Allowlist
	// CompetitionStart is the first second whose swaps count; a swap at
	// exactly this second counts.
	CompetitionStart time.Time
}

// Verify checks one transaction and records it when it is a valid swap. The
// gates run in the order of the spec and the first failure wins, so a cheap
// ledger lookup always spares a Hiro call. It never panics: anything
// unexpected becomes verify_threw, and the sweep goes on.
func (v *Verifier) Verify(ctx context.Context, txid, source string) (out Outcome) {
	out.TxID = txid
	defer func() {
		if p := recover(); p != nil {
			out = Outcome{
				TxID:   out.TxID,
				Status: StatusRejected,
				Reason: ReasonVerifyThrew,
				Detail: "verification panicked",
				Err:    fmt.Errorf("panic: %v", p),
			}
		}
	}()
	return v.verify(ctx, txid, source)
}

func (v *Verifier) verify(ctx context.Context, rawID, source string) Outcome {
	txid, out, done := v.precheck(ctx, rawID, source)
	if done {
		return out
	}
	tx, err := v.Txs.Tx(ctx, txid)
	return v.conclude(ctx, txid, source, tx, err)
}

// precheck runs the gates that need no Hiro call: the id, the verifier's
// own dependencies, and the ledger (SPEC §5.5's first gate). done is true
// when they decided.
func (v *Verifier) precheck(ctx context.Context, rawID, source string) (txid string, out Outcome, done bool) {
	txid, ok := normalizeTxID(rawID)
	if !ok {
		return "", reject(abbreviate(rawID), ReasonMalformedTx, "txid is not hexadecimal", nil), true
	}
	if v.Ledger == nil || v.Txs == nil || v.Allowlist == nil {
		return txid, reject(txid, ReasonVerifyThrew, "verifier is missing a dependency", errors.New("nil Ledger, Txs or Allowlist")), true
	}
	if !validSource(source) {
		return txid, reject(txid, ReasonVerifyThrew, "unknown source", fmt.Errorf("source %q is not agent, sweep or chainhook", source)), true
	}
	out, done = v.known(ctx, txid, source)
	return txid, out, done
}

// conclude judges a fetched transaction and records the verdict.
func (v *Verifier) conclude(ctx context.Context, txid, source string, tx hiro.Tx, err error) Outcome {
	out := v.judge(ctx, txid, source, tx, err)
	out.Requests = tx.Requests
	switch {
	case out.Status == StatusPending:
		out.LedgerErr = v.Ledger.RecordPending(ctx, txid, tx.SenderAddress)
	case out.Status == StatusRejected && out.Reason.Final():
		out.LedgerErr = v.Ledger.RecordRejection(ctx, Rejection{TxID: txid, Sender: tx.SenderAddress, Reason: out.Reason, Detail: out.Detail})
		if pl, ok := v.Ledger.(PushLedger); ok && source != SourceChainhook {
			dropped, err := pl.DropPushed(ctx, txid)
			if err != nil && out.LedgerErr == nil {
				out.LedgerErr = err
			}
			if dropped {
				out.Detail += "; the swap a chainhook delivery recorded was removed (the chain's answer wins)"
			}
		}
	}
	return out
}

// BatchSource fetches several transactions with all their events at
// once; *hiro.Client is one (GET /extended/v1/tx/multiple).
type BatchSource interface {
	Txs(ctx context.Context, txids []string) (map[string]hiro.TxResult, int, error)
}

var _ BatchSource = (*hiro.Client)(nil)

// VerifyMany verifies several transactions, in order, each once however
// often it is named: the ledger answers what it can, and the rest are
// fetched together where Txs is a BatchSource (one request for up to
// hiro.MaxBatch), else one by one. Each transaction then meets the same
// gates as Verify. The batch's requests are counted on the first outcome
// that needed Hiro.
func (v *Verifier) VerifyMany(ctx context.Context, txids []string, source string) []Outcome {
	out := make([]Outcome, len(txids))
	first := map[string]int{} // normalised id → index of its first outcome
	var fetch []string
	for i, raw := range txids {
		txid, o, done := v.safePrecheck(ctx, raw, source)
		if j, seen := first[txid]; seen && txid != "" {
			out[i] = out[j]
			continue
		}
		first[txid] = i
		out[i] = o
		if !done {
			fetch = append(fetch, txid)
		}
	}
	if len(fetch) == 0 {
		return out
	}
	batch, isBatch := v.Txs.(BatchSource)
	if !isBatch || len(fetch) == 1 {
		for _, txid := range fetch {
			out[first[txid]] = v.Verify(ctx, txid, source)
		}
		return v.copyRepeats(txids, first, out)
	}
	got, requests, _ := batch.Txs(ctx, fetch)
	for k, txid := range fetch {
		r, ok := got[txid]
		if !ok {
			r.Err = fault.Errorf(pacer.ClassParseError, "verify "+txid, "the batch brought no answer for it")
		}
		o := v.safeConclude(ctx, txid, source, r.Tx, r.Err)
		o.Requests = 0
		if k == 0 {
			o.Requests = requests
		}
		out[first[txid]] = o
	}
	return v.copyRepeats(txids, first, out)
}

func (v *Verifier) copyRepeats(txids []string, first map[string]int, out []Outcome) []Outcome {
	for i, raw := range txids {
		if txid, ok := normalizeTxID(raw); ok && first[txid] != i {
			out[i] = out[first[txid]]
		}
	}
	return out
}

func (v *Verifier) safePrecheck(ctx context.Context, raw, source string) (txid string, out Outcome, done bool) {
	defer func() {
		if p := recover(); p != nil {
			out, done = reject(abbreviate(raw), ReasonVerifyThrew, "verification panicked", fmt.Errorf("panic: %v", p)), true
		}
	}()
	return v.precheck(ctx, raw, source)
}

func (v *Verifier) safeConclude(ctx context.Context, txid, source string, tx hiro.Tx, err error) (out Outcome) {
	defer func() {
		if p := recover(); p != nil {
			out = reject(txid, ReasonVerifyThrew, "verification panicked", fmt.Errorf("panic: %v", p))
		}
	}()
	return v.conclude(ctx, txid, source, tx, err)
}

// known answers from the ledger alone when it can: a swap already there, or
// a final rejection already kept (SPEC §5.5, the first gate). A swap a
// chainhook delivery recorded is not known to a reader until the reader
// has confirmed it against Hiro.
func (v *Verifier) known(ctx context.Context, txid, source string) (Outcome, bool) {
	exists, err := v.Ledger.SwapExists(ctx, txid)
	if err != nil {
		return reject(txid, ReasonDBUnavailable, "could not look the swap up", err), true
	}
	if exists {
		if pl, ok := v.Ledger.(PushLedger); ok && source != SourceChainhook {
			pushed, err := pl.Unconfirmed(ctx, txid)
			if err != nil {
				return reject(txid, ReasonDBUnavailable, "could not look the swap up", err), true
			}
			if pushed {
				return Outcome{}, false
			}
		}
		return Outcome{TxID: txid, Status: StatusAlreadyKnown}, true
	}
	r, found, err := v.Ledger.KnownRejection(ctx, txid)
	switch {
	case err != nil:
		return reject(txid, ReasonDBUnavailable, "could not look the rejection up", err), true
	case found && r.Reason.Revisited() && r.Age >= RevisitAfter:
		// A verdict from a passing upstream state: looked at again.
		return Outcome{}, false
	case found && r.Reason.SenderDependent() && r.Sender != "":
		// Who the sender is can have changed since (a registration, a
		// claim verified): the verdict stands only while it still holds.
		agent, registered, err := v.Ledger.Agent(ctx, r.Sender)
		if err != nil {
			return reject(txid, ReasonDBUnavailable, "could not look the sender up", err), true
		}
		if reason, _ := senderVerdict(agent, registered, r.Sender); reason == "" {
			return Outcome{}, false
		}
		// Still holds: it stands like any final verdict (fallthrough
		// reaches the next case, so the order of these cases matters).
		fallthrough
	case found && r.Reason.Final():
		out := reject(txid, r.Reason, r.Detail, nil)
		out.Known = true
		if out.Detail == "" {
			out.Detail = "rejected before"
		}
		return out, true
	}
	return Outcome{}, false
}

// judge runs the gates that need the transaction, in the spec's order, and
// inserts it when it passes them all.
func (v *Verifier) judge(ctx context.Context, txid, source string, tx hiro.Tx, err error) Outcome {
	switch {
	case fault.ClassOf(err) == pacer.ClassNotFound:
		return reject(txid, ReasonTxNotFound, "Hiro does not know this transaction", err)
	case err != nil:
		return reject(txid, ReasonTxFetchFailed, "could not fetch the transaction from Hiro", err)
	}
	if got, _ := normalizeTxID(tx.TxID); got != txid {
		// Hiro answered about another transaction: the answer is unusable.
		return reject(txid, ReasonTxFetchFailed, "Hiro returned a different transaction",
			fault.Errorf(pacer.ClassParseError, "verify "+txid, "Hiro answered with tx_id %q", abbreviate(tx.TxID)))
	}

	switch {
	case !tx.EventsComplete():
		return reject(txid, ReasonIncompleteEvents, fmt.Sprintf("read %d of the %d events Hiro counts", len(tx.Events), tx.EventCount), nil)
	case tx.TxStatus == hiro.StatusPending:
		return Outcome{TxID: txid, Status: StatusPending}
	}
	if out, done := v.rolledBack(ctx, txid, tx.TxSummary); done {
		return out
	}
	if out, done := statusGates(txid, tx.TxSummary, v.CompetitionStart); done {
		return out
	}
	if tx.TxType != hiro.TxTypeContractCall || tx.ContractCall == nil {
		return reject(txid, ReasonMalformedTx, fmt.Sprintf("tx_type %q is not a contract call", tx.TxType), nil)
	}

	agent, found, err := v.Ledger.Agent(ctx, tx.SenderAddress)
	if err != nil {
		return reject(txid, ReasonDBUnavailable, "could not look the sender up", err)
	}
	if reason, detail := senderVerdict(agent, found, tx.SenderAddress); reason != "" {
		return reject(txid, reason, detail, nil)
	}

	call := tx.ContractCall
	if !v.Allowlist.Allowed(call.ContractID, call.FunctionName) {
		return reject(txid, ReasonContractNotAllowlisted, abbreviate(call.ContractID+"::"+call.FunctionName)+" is not an allowlisted swap", nil)
	}

	swap, err := ParseSwap(tx, v.Allowlist)
	switch {
	case errors.Is(err, ErrInvalidAmount):
		return reject(txid, ReasonInvalidAmount, err.Error(), nil)
	case errors.Is(err, ErrNotContractCall):
		return reject(txid, ReasonMalformedTx, err.Error(), nil)
	case errors.Is(err, ErrNoTransferEvents), errors.Is(err, ErrIncompleteEvents):
		return reject(txid, ReasonIncompleteEvents, err.Error(), nil)
	case err != nil:
		return reject(txid, ReasonVerifyThrew, "could not build the swap", err)
	}
	// Store the id in the same form the ledger is searched by.
	swap.TxID = txid
	swap.Source = source

	if pl, ok := v.Ledger.(PushLedger); ok && source != SourceChainhook {
		diff, confirmed, err := pl.ConfirmSwap(ctx, swap)
		switch {
		case err != nil:
			return reject(txid, ReasonDBUnavailable, "could not confirm the swap", err)
		case confirmed && len(diff) > 0:
			return Outcome{TxID: txid, Status: StatusAlreadyKnown,
				Detail: "the chain corrected the chainhook delivery's " + strings.Join(diff, ", ")}
		case confirmed:
			return Outcome{TxID: txid, Status: StatusAlreadyKnown}
		}
	}
	inserted, err := v.Ledger.InsertSwap(ctx, swap)
	switch {
	case err != nil:
		return reject(txid, ReasonDBUnavailable, "could not insert the swap", err)
	case !inserted:
		return Outcome{TxID: txid, Status: StatusAlreadyKnown}
	}
	return Outcome{TxID: txid, Status: StatusInserted, Swap: &swap}
}

// senderVerdict is the sender gate (SPEC §5.5): "" when the sender may
// compete, else the reason and its detail.
func senderVerdict(agent Agent, registered bool, sender string) (Reason, string) {
	switch {
	case !registered:
		return ReasonSenderNotRegistered, "sender " + abbreviate(sender) + " is not a registered agent"
	case agent.ClaimStatus != ClaimVerified && agent.ClaimStatus != ClaimRewarded:
		return ReasonSenderNotGenesis, "sender has no verified or rewarded claim"
	case agent.ERC8004AgentID == nil:
		return ReasonSenderNotRegistered, "sender has no ERC-8004 agent id"
	}
	return "", ""
}

// rolledBack holds back a transaction a chainhook delivery rolled back
// until Hiro places it in a block that was not rolled back (by hash; by a
// greater height when Hiro does not say the hash), or for RollbackHold at
// most while Hiro still shows it canonical: until then Hiro's
// "canonical: true" can be the old block's, not yet caught up with the
// rollback. The outcome is pending (kept in pending_txs, looked at again),
// never a final verdict: the transaction may well come back.
func (v *Verifier) rolledBack(ctx context.Context, txid string, tx hiro.TxSummary) (Outcome, bool) {
	rl, ok := v.Ledger.(RollbackLedger)
	if !ok {
		return Outcome{}, false
	}
	rbs, err := rl.Rollbacks(ctx, txid)
	if err != nil {
		return reject(txid, ReasonDBUnavailable, "could not look the rollbacks up", err), true
	}
	for _, rb := range rbs {
		if tx.IsCanonical() && rb.Age >= RollbackHold {
			// Hiro has had time to follow the rollback, and has not.
			continue
		}
		same := tx.BlockHash != "" && strings.EqualFold(tx.BlockHash, rb.BlockHash)
		if !tx.IsCanonical() || same || (tx.BlockHash == "" && tx.BlockHeight <= rb.BlockHeight) {
			return Outcome{TxID: txid, Status: StatusPending,
				Detail: fmt.Sprintf("rolled back from block %d; waiting for Hiro to show it in another block", rb.BlockHeight)}, true
		}
	}
	return Outcome{}, false
}

// statusGates are the gates a mined or dropped transaction's summary
// decides, whether it came from the detail or from a listing: the fork it
// is on, its status and its time. done is false when they all pass.
func statusGates(txid string, tx hiro.TxSummary, start time.Time) (out Outcome, done bool) {
	switch {
	case !tx.IsCanonical():
		return reject(txid, ReasonNotCanonical, "the transaction is on a fork that lost (canonical false)", nil), true
	case !hiro.IsTerminalStatus(tx.TxStatus):
		return reject(txid, ReasonMalformedTx, fmt.Sprintf("unknown tx_status %q", abbreviate(tx.TxStatus)), nil), true
	case tx.TxStatus != hiro.StatusSuccess:
		return reject(txid, ReasonTxFailed, "transaction ended with "+tx.TxStatus, nil), true
	case SwapTime(tx.BlockTime, tx.BurnBlockTime) < start.Unix():
		return reject(txid, ReasonBeforeCompStart, fmt.Sprintf("block_time %d (burn_block_time %d) is before the competition start %d",
			tx.BlockTime, tx.BurnBlockTime, start.Unix()), nil), true
	}
	return Outcome{}, false
}

// RejectListed decides what a listing entry alone can (SPEC §5.2): an entry
// on a fork that lost, one that already ended in failure (any status but
// success and pending) or one mined before the competition start is
// rejected, and the rejection recorded, without a detail request. ok is
// false when the entry needs Verify: pending or successful, on time.
// A transaction already in swaps is StatusAlreadyKnown. The outcome's
// LedgerErr says a rejection could not be recorded; a failing lookup is
// db_unavailable. It never panics.
func (v *Verifier) RejectListed(ctx context.Context, e hiro.Entry) (out Outcome, ok bool) {
	defer func() {
		if p := recover(); p != nil {
			out, ok = reject(abbreviate(e.TxID), ReasonVerifyThrew, "verification panicked", fmt.Errorf("panic: %v", p)), true
		}
	}()
	txid, valid := normalizeTxID(e.TxID)
	if !valid {
		return reject(abbreviate(e.TxID), ReasonMalformedTx, "txid is not hexadecimal", nil), true
	}
	if e.TxStatus == hiro.StatusPending {
		return Outcome{}, false
	}
	verdict, decided := statusGates(txid, listingSummary(txid, e), v.CompetitionStart)
	if !decided {
		return Outcome{}, false
	}
	if v.Ledger == nil {
		return reject(txid, ReasonVerifyThrew, "verifier is missing a dependency", errors.New("nil Ledger")), true
	}
	exists, err := v.Ledger.SwapExists(ctx, txid)
	switch {
	case err != nil:
		return reject(txid, ReasonDBUnavailable, "could not look the swap up", err), true
	case exists:
		return Outcome{TxID: txid, Status: StatusAlreadyKnown}, true
	}
	verdict.LedgerErr = v.Ledger.RecordRejection(ctx, Rejection{TxID: txid, Sender: e.SenderAddress, Reason: verdict.Reason, Detail: verdict.Detail})
	return verdict, true
}

// VerifyEntries gives each entry of a listing its outcome: the listing
// alone decides a call that failed, came too early or lies on a fork that
// lost (RejectListed), and one still pending; the rest are verified
// together (VerifyMany). A transaction listed twice (two agents' pages)
// is fetched once and counts once: its repeats cost no request and find
// it already known.
func (v *Verifier) VerifyEntries(ctx context.Context, entries []hiro.Entry, source string) []Outcome {
	outs := make([]Outcome, len(entries))
	var ids []string
	var at []int
	for i, e := range entries {
		if o, decided := v.RejectListed(ctx, e); decided {
			outs[i] = o
		} else if e.TxStatus == hiro.StatusPending {
			outs[i] = Outcome{TxID: e.TxID, Status: StatusPending}
		} else {
			ids, at = append(ids, e.TxID), append(at, i)
		}
	}
	first := map[string]bool{}
	for k, o := range v.VerifyMany(ctx, ids, source) {
		if first[ids[k]] {
			o.Requests = 0
			if o.Status == StatusInserted {
				o.Status, o.Swap = StatusAlreadyKnown, nil
			}
		}
		first[ids[k]], outs[at[k]] = true, o
	}
	return outs
}

// listingSummary is what a listing entry says of the status gates.
func listingSummary(txid string, e hiro.Entry) hiro.TxSummary {
	summary := hiro.TxSummary{TxID: txid, TxStatus: e.TxStatus, BurnBlockTime: e.BurnBlockTime, BlockTime: e.BlockTime, Canonical: &e.Canonical}
	if e.TxStatus == hiro.StatusSuccess && e.Mined() && SwapTime(e.BlockTime, e.BurnBlockTime) == 0 {
		// A listing without the time: the detail will tell.
		summary.BurnBlockTime = math.MaxInt64
	}
	return summary
}

func reject(txid string, reason Reason, detail string, err error) Outcome {
	return Outcome{TxID: txid, Status: StatusRejected, Reason: reason, Detail: detail, Err: err}
}

// normalizeTxID returns a txid as Hiro writes it (0x + lower-case hex), so
// the ledger lookup finds a swap however an agent typed its id.
func normalizeTxID(s string) (string, bool) {
	s = strings.ToLower(strings.TrimSpace(s))
	hex := strings.TrimPrefix(s, "0x")
	if hex == "" || strings.TrimLeft(hex, "0123456789abcdef") != "" {
		return "", false
	}
	return "0x" + hex, true
}
