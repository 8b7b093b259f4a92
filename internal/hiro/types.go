package hiro

import "encoding/json"

// Transaction types and statuses pacer reads. Hiro has more of both; these are
// the ones the competition logic compares against.
const (
	TxTypeContractCall = "contract_call"

	StatusSuccess = "success"
	StatusPending = "pending"
)

// terminalStatuses are the tx_status values that will never change again
// (SPEC §9): the mined outcomes and the ways a mempool tx is dropped.
var terminalStatuses = map[string]bool{
	"success":                       true,
	"abort_by_response":             true,
	"abort_by_post_condition":       true,
	"problematic_skipped":           true,
	"dropped_replace_by_fee":        true,
	"dropped_replace_across_fork":   true,
	"dropped_too_expensive":         true,
	"dropped_stale_garbage_collect": true,
	"dropped_problematic":           true,
}

// IsTerminalStatus reports whether a tx_status is a known final one. pending
// is known but not final; anything else is a status pacer has never seen.
func IsTerminalStatus(status string) bool {
	return terminalStatuses[status]
}

// Page is one page of an address's transactions from the v1 list endpoint,
// newest first. Hiro leaves list results without events, so only the
// summary fields are kept.
type Page struct {
	Limit   int         `json:"limit"`
	Offset  int         `json:"offset"`
	Total   int         `json:"total"`
	Results []TxSummary `json:"results"`
	Quota   Quota       `json:"-"`
}

// TxSummary is a transaction as the v1 list endpoint returns it: every
// field of the detail but the events.
type TxSummary struct {
	TxID          string `json:"tx_id"`
	TxType        string `json:"tx_type"`
	TxStatus      string `json:"tx_status"`
	SenderAddress string `json:"sender_address"`
	// BlockHeight and TxIndex are zero for a transaction never mined.
	BlockHeight int64 `json:"block_height"`
	// BlockHash is the hash of the block the answer places it in ("" when
	// not mined, or not said).
	BlockHash     string `json:"block_hash,omitempty"`
	TxIndex       int64  `json:"tx_index"`
	BurnBlockTime int64  `json:"burn_block_time"`
	// BlockTime is the Stacks block's own time (Nakamoto blocks come
	// seconds apart, burn blocks minutes); 0 when Hiro leaves it out.
	BlockTime int64 `json:"block_time"`
	// Canonical and MicroblockCanonical are nil when Hiro leaves them out
	// (mempool transactions); only an explicit false means another fork won.
	Canonical           *bool         `json:"canonical"`
	MicroblockCanonical *bool         `json:"microblock_canonical"`
	ContractCall        *ContractCall `json:"contract_call"`
}

// IsCanonical reports whether the transaction belongs to the winning fork:
// false only when Hiro says so (canonical or microblock_canonical false).
func (t TxSummary) IsCanonical() bool {
	return (t.Canonical == nil || *t.Canonical) && (t.MicroblockCanonical == nil || *t.MicroblockCanonical)
}

// Tx is one transaction with its events, as /extended/v1/tx/{txid} returns
// it, with every page of its events gathered by Client.Tx.
type Tx struct {
	TxSummary
	// EventCount is how many events the transaction has in all; Events may
	// hold fewer when paging could not read them all (see EventsComplete).
	EventCount int     `json:"event_count"`
	Events     []Event `json:"events"`

	// Raw is the first page's body exactly as Hiro sent it, for audits and
	// for fields this type does not decode.
	Raw   json.RawMessage `json:"-"`
	Quota Quota           `json:"-"`
	// Requests is how many requests reading the transaction took (one per
	// page of events), so a caller can account for its budget.
	Requests int `json:"-"`
}

// EventsComplete reports whether every event Hiro counts was read. A swap
// parsed from fewer events could name the wrong tokens or amounts.
func (t Tx) EventsComplete() bool {
	return len(t.Events) >= t.EventCount
}

// ContractCall is the payload of a contract_call transaction.
type ContractCall struct {
	ContractID   string        `json:"contract_id"`
	FunctionName string        `json:"function_name"`
	FunctionArgs []FunctionArg `json:"function_args,omitempty"`
}

// FunctionArg is one argument of a contract call, in Clarity notation.
type FunctionArg struct {
	Name string `json:"name"`
	Repr string `json:"repr"`
	Type string `json:"type"`
}

// Event is one event of a transaction. Asset is nil for events that move no
// asset (contract logs, for example).
type Event struct {
	EventIndex int    `json:"event_index"`
	EventType  string `json:"event_type"`
	Asset      *Asset `json:"asset"`
}

// Asset is the asset part of an event. Amount stays a string: on-chain amounts
// exceed 64 bits, and the caller decides how to validate them.
type Asset struct {
	AssetEventType string `json:"asset_event_type"`
	AssetID        string `json:"asset_id"`
	Sender         string `json:"sender"`
	Recipient      string `json:"recipient"`
	Amount         string `json:"amount"`
}
