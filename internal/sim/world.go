package sim

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/pacer-dev/pacer/internal/competition"
	"github.com/pacer-dev/pacer/internal/store"
)

// Agent is a registered agent of the world.
type Agent struct {
	STXAddress     string `json:"stxAddress"`
	BTCAddress     string `json:"btcAddress"`
	DisplayName    string `json:"displayName"`
	ERC8004AgentID *int64 `json:"erc8004AgentId"`
	// ClaimStatus is the status of the claim filed under BTCAddress, ""
	// when there is none.
	ClaimStatus string `json:"claimStatus,omitempty"`
	// Tier and SwapsPerDay are the agent's activity level in a world with
	// Activity: "hot", "warm" or "cold", and the rate its swaps arrive at.
	Tier        string  `json:"tier,omitempty"`
	SwapsPerDay float64 `json:"swapsPerDay,omitempty"`
}

// Competition returns the agent as the verifier sees it.
func (a Agent) Competition() competition.Agent {
	return competition.Agent{
		STXAddress:     a.STXAddress,
		BTCAddress:     a.BTCAddress,
		ERC8004AgentID: a.ERC8004AgentID,
		ClaimStatus:    a.ClaimStatus,
	}
}

// Claim is a row of the claims table.
type Claim struct {
	BTCAddress string `json:"btcAddress"`
	Status     string `json:"status"`
}

// TxCase is what a transaction was generated to exercise.
type TxCase string

// The cases. The comment is the outcome a verifier must reach, with an
// empty ledger, once the transaction exists (and, for CaseConfirmsLater,
// once it is mined).
const (
	CaseSwap          TxCase = "swap"                 // inserted: a single-hop swap
	CaseMultiHop      TxCase = "multi_hop"            // inserted: a route through intermediate tokens
	CaseProvider      TxCase = "provider"             // inserted: a swap naming its liquidity provider
	CaseHuge          TxCase = "huge_amounts"         // inserted: an amount past 2^64
	CaseAtStart       TxCase = "at_start"             // inserted: mined in the competition's first second
	CaseThroughAgent  TxCase = "through_agent"        // inserted: STX → token → sBTC, the middle token passing through the agent
	CaseManyEvents    TxCase = "many_events"          // inserted: 21–100 events, the agent's last leg past the first 20
	CaseBusy          TxCase = "busy"                 // inserted: one of a busy agent's burst of swaps
	CaseConfirmsLater TxCase = "pending_then_success" // pending, then inserted once mined
	CasePending       TxCase = "pending"              // pending, for good
	CaseFailed        TxCase = "failed"               // tx_failed: aborted on chain
	CaseDropped       TxCase = "dropped"              // tx_failed: dropped from the mempool
	CaseBeforeStart   TxCase = "before_start"         // before_comp_start
	CaseNotGenesis    TxCase = "not_genesis"          // sender_not_genesis: no verified or rewarded claim
	CaseNoERC8004     TxCase = "no_erc8004"           // sender_not_registered: genesis without an ERC-8004 id
	CaseOutsider      TxCase = "outsider"             // sender_not_registered: listed under an agent it pays, sent by a stranger
	CaseOneWay        TxCase = "one_way_events"       // incomplete_events: nothing came back to the agent
	CaseNoTransfers   TxCase = "no_transfers"         // incomplete_events: no transfer events at all
	CaseBadAmount     TxCase = "bad_amount"           // invalid_amount
	CaseNotFound      TxCase = "tx_not_found"         // tx_not_found: listed, but /tx/ answers 404
	CaseFetchFails    TxCase = "fetch_fails"          // tx_fetch_failed: /tx/ answers 500, always
	CaseUnknownStatus TxCase = "unknown_status"       // malformed_tx: a tx_status pacer has never seen
	CaseFork          TxCase = "fork"                 // not_canonical: mined on a fork that lost (never a row)
	CaseOffList       TxCase = "not_allowlisted"      // contract_not_allowlisted (the sweep skips it)
	CaseTransfer      TxCase = "token_transfer"       // malformed_tx: not a contract call (the sweep skips it)
	CaseDeploy        TxCase = "smart_contract"       // malformed_tx: not a contract call (the sweep skips it)
)

// WorldTx describes one transaction of the world.
type WorldTx struct {
	TxID   string `json:"txid"`
	Case   TxCase `json:"case"`
	Sender string `json:"sender"`
	// ContractID and FunctionName are set for contract calls.
	ContractID   string `json:"contractId,omitempty"`
	FunctionName string `json:"functionName,omitempty"`
	// ListedUnder are the agents whose transaction lists show it. A
	// transaction the sweep counts as found is listed under one agent only,
	// so a sweep's found count is the number of found outcomes.
	ListedUnder []string `json:"listedUnder"`
	// AppearsAt is when the transaction starts to exist: listed and
	// answered by /tx/. A mined one was mined then, unless SettlesAt is
	// set: it is pending from AppearsAt and mined at SettlesAt.
	AppearsAt time.Time `json:"appearsAt"`
	SettlesAt time.Time `json:"settlesAt,omitzero"`
	// Events is how many events /tx/ serves for it once mined.
	Events int `json:"events"`
}

// Outcome is what verifying a transaction against an empty ledger must give.
type Outcome struct {
	TxID string `json:"txid"`
	// Found says the sweep considers it: a listed contract call to an
	// allowlisted (contract, function) pair.
	Found  bool               `json:"found"`
	Status competition.Status `json:"status"`
	// Reason is set when Status is rejected.
	Reason competition.Reason `json:"reason,omitempty"`
}

// World is what the Hiro simulation serves: registered agents, their
// claims, and the transactions on their addresses over time. The seed and
// the configuration fix it; the clock only decides which part of it exists.
// Its fixed part is built at once; with Activity, agents' swaps keep
// arriving for as long as the clock runs, generated a day at a time when
// first asked about, each day from its own seed, so the answer never
// depends on the order of the questions. It is safe for concurrent use.
//
// Every outcome of the verification gates (SPEC §5.5) happens on some
// transaction, and the world knows which and what its swap row must be,
// from what it generated: the route's tokens and amounts and every leg it
// made the agent pay or receive. It never asks pacer's parser, so tests can
// hold a sweep's results against ExpectedSwaps and ExpectedOutcomes.
type World struct {
	start  time.Time
	origin time.Time
	allow  competition.Allowlist

	agents  []Agent // by STX address, byte order
	claims  []Claim // by BTC address; some belong to no registered agent
	byAgent map[string]Agent

	mu   sync.Mutex // guards what the activity streams add to
	txs  []*worldTx // in the order they were made
	byID map[string]*worldTx
	// lists holds each agent's transactions, unsorted: the order of a list
	// depends on the time it is read at.
	lists map[string][]*worldTx
	// streams generate the Activity swaps, per agent.
	streams map[string]*stream
	// reorgs are the rolled-back blocks, oldest first (fixed at New).
	reorgs []*Reorg
	// chain is the strangers' traffic around the agents' (chain.go).
	chain *chain
}

// CompetitionStart is the first second whose swaps count.
func (w *World) CompetitionStart() time.Time { return w.start }

// Origin is the world's present when the simulator started: transactions
// before it are history, the ones after it arrive as the clock moves.
func (w *World) Origin() time.Time { return w.origin }

// Agents returns the registered agents in STX address order (byte order).
func (w *World) Agents() []Agent { return slices.Clone(w.agents) }

// Transactions describes every transaction generated so far, whenever it
// appears, in txid order: the whole fixed world, and the Activity swaps up
// to the latest moment any question reached (ExpectedSwaps(at) and
// ExpectedOutcomes(at) reach at).
func (w *World) Transactions() []WorldTx {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]WorldTx, len(w.txs))
	for i, tx := range w.txs {
		out[i] = tx.WorldTx
		out[i].ListedUnder = slices.Clone(tx.ListedUnder)
	}
	slices.SortFunc(out, func(a, b WorldTx) int { return strings.Compare(a.TxID, b.TxID) })
	return out
}

// ExpectedOutcomes returns the outcome of verifying each transaction that
// exists at at, keyed by txid, as if the ledger were empty. The gates are
// those of SPEC §5.5, applied here to what the world made, independently of
// the competition package, so a test comparing the two checks both.
func (w *World) ExpectedOutcomes(at time.Time) map[string]Outcome {
	out := make(map[string]Outcome)
	for _, tx := range w.existing(at) {
		out[tx.TxID] = w.verdict(tx, at)
	}
	return out
}

// ExpectedSwaps returns, in txid order, exactly the rows a correct sweep of
// every agent at at inserts into an empty ledger (source sweep): every
// swap the world made that passes the gates, with the tokens and amounts of
// its route and the legs it made the agent pay and receive.
func (w *World) ExpectedSwaps(at time.Time) []competition.Swap {
	var swaps []competition.Swap
	for _, tx := range w.rows(at) {
		swaps = append(swaps, tx.row())
	}
	return swaps
}

// SwapTime is when an agent's swap that must become a row was mined: the
// start of its discovery delay.
type SwapTime struct {
	TxID   string `json:"txid"`
	Sender string `json:"sender"`
	// MinedAt is its block's time, the first time it was mined
	// (burn_block_time). CanonicalAt is when it was last mined into the
	// canonical chain: later than MinedAt only after a reorg re-applied it.
	MinedAt     time.Time `json:"minedAt"`
	CanonicalAt time.Time `json:"canonicalAt"`
	Height      int64     `json:"height"`
}

// SwapTimes returns, in txid order, the mining times of the swaps
// ExpectedSwaps(at) holds: the oracle's side of a discovery-delay
// measurement (row time minus MinedAt).
func (w *World) SwapTimes(at time.Time) []SwapTime {
	var out []SwapTime
	for _, tx := range w.rows(at) {
		out = append(out, SwapTime{TxID: tx.TxID, Sender: tx.Sender, MinedAt: tx.minedAt(),
			CanonicalAt: tx.blockTime(at), Height: tx.position(at).height})
	}
	return out
}

// rows returns, in txid order, the transactions existing at at that a
// correct sweep turns into rows.
func (w *World) rows(at time.Time) []*worldTx {
	out := slices.DeleteFunc(w.existing(at), func(tx *worldTx) bool { return !w.makesRow(tx, at) })
	slices.SortFunc(out, func(a, b *worldTx) int { return strings.Compare(a.TxID, b.TxID) })
	return out
}

// makesRow reports whether verifying tx at at inserts a row.
func (w *World) makesRow(tx *worldTx, at time.Time) bool {
	o := w.verdict(tx, at)
	return o.Found && o.Status == competition.StatusInserted
}

// existing generates the world up to at and returns what exists then.
func (w *World) existing(at time.Time) []*worldTx {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.generateAll(at)
	var out []*worldTx
	for _, tx := range w.txs {
		if tx.exists(at) {
			out = append(out, tx)
		}
	}
	return out
}

// Statuses the world gives transactions; the final ones are those of SPEC §9.
const (
	statusSuccess = "success"
	statusPending = "pending"
)

var finalStatuses = map[string]bool{
	"success": true, "abort_by_response": true, "abort_by_post_condition": true, "problematic_skipped": true,
	"dropped_replace_by_fee": true, "dropped_replace_across_fork": true, "dropped_too_expensive": true,
	"dropped_stale_garbage_collect": true, "dropped_problematic": true,
}

// verdict runs the gates on tx as the world made it, at at.
func (w *World) verdict(tx *worldTx, at time.Time) Outcome {
	o := Outcome{TxID: tx.TxID, Found: tx.found(w.allow)}
	reject := func(r competition.Reason) Outcome {
		o.Status, o.Reason = competition.StatusRejected, r
		return o
	}
	switch tx.detail {
	case detailNotFound:
		return reject(competition.ReasonTxNotFound)
	case detailFails:
		return reject(competition.ReasonTxFetchFailed)
	}

	status := tx.statusAt(at)
	switch {
	case status == statusPending:
		o.Status = competition.StatusPending
		return o
	case tx.fork:
		return reject(competition.ReasonNotCanonical)
	case !finalStatuses[status]:
		return reject(competition.ReasonMalformedTx)
	case status != statusSuccess:
		return reject(competition.ReasonTxFailed)
	case tx.minedAt().Before(w.start):
		return reject(competition.ReasonBeforeCompStart)
	case tx.call == nil:
		return reject(competition.ReasonMalformedTx)
	}

	agent, registered := w.byAgent[tx.Sender]
	switch {
	case !registered:
		return reject(competition.ReasonSenderNotRegistered)
	case agent.ClaimStatus != competition.ClaimVerified && agent.ClaimStatus != competition.ClaimRewarded:
		return reject(competition.ReasonSenderNotGenesis)
	case agent.ERC8004AgentID == nil:
		return reject(competition.ReasonSenderNotRegistered)
	case !w.allow.Allowed(tx.call.ContractID, tx.call.FunctionName):
		return reject(competition.ReasonContractNotAllowlisted)
	case tx.parseFail != "":
		return reject(tx.parseFail)
	}
	o.Status = competition.StatusInserted
	return o
}

// AgentWriter is where Seed writes; *store.Store is one.
type AgentWriter interface {
	UpsertAgent(ctx context.Context, a competition.Agent, displayName string) error
	UpsertClaim(ctx context.Context, btcAddress, status string) error
}

var _ AgentWriter = (*store.Store)(nil)

// Seed writes the world's claims and agents, so that a sweep against the
// simulator finds them. It upserts, so running it again (or after a
// restart) is harmless; it removes nothing another seed wrote.
func (w *World) Seed(ctx context.Context, dst AgentWriter) error {
	for _, c := range w.claims {
		if err := dst.UpsertClaim(ctx, c.BTCAddress, c.Status); err != nil {
			return fmt.Errorf("seed world: %w", err)
		}
	}
	for _, a := range w.agents {
		if err := dst.UpsertAgent(ctx, a.Competition(), a.DisplayName); err != nil {
			return fmt.Errorf("seed world: %w", err)
		}
	}
	return nil
}

// tx returns the transaction with txid (0x + lower-case hex), if it exists
// at at and /tx/ knows it (it may be one /tx/ fails on: detailFails).
func (w *World) tx(txid string, at time.Time) (*worldTx, bool) {
	w.mu.Lock()
	tx, ok := w.byID[txid]
	if !ok && w.streams != nil {
		// Maybe a swap of a stream no question has reached yet.
		w.generateAll(at)
		tx, ok = w.byID[txid]
	}
	w.mu.Unlock()
	if !ok {
		return w.chain.lookup(txid, at)
	}
	return tx, tx.exists(at) && tx.detail != detailNotFound
}

// add records a generated transaction. w.mu is held (or the world is not
// shared yet).
func (w *World) add(tx *worldTx) {
	w.txs = append(w.txs, tx)
	w.byID[tx.TxID] = tx
	for _, a := range tx.ListedUnder {
		w.lists[a] = append(w.lists[a], tx)
	}
}

// detailMode is how /extended/v1/tx/{txid} treats a transaction.
type detailMode int

const (
	// detailServed: served as it is (the zero value).
	_ detailMode = iota
	// detailNotFound: listed, yet unknown to /tx/, as when the list and the
	// detail come from replicas that disagree.
	detailNotFound
	// detailFails: /tx/ answers 500 every time.
	detailFails
)

// worldTx is a transaction with everything needed to render it.
type worldTx struct {
	WorldTx
	// status is the final status, reached at SettlesAt when that is set.
	status   string
	txType   string
	call     *contractCallJSON
	transfer *tokenTransferJSON
	deploy   *smartContractJSON
	// events are served once the transaction is mined with success.
	events []eventJSON
	result clarityValue
	detail detailMode
	// fork marks a transaction mined on a fork that lost: canonical false.
	fork    bool
	nonce   int
	feeRate int64
	// index is the transaction's place in its block; with the block (one a
	// second) it makes a position no other transaction has.
	index int64
	// expect is the swap the world made, for the row it must become:
	// what the route moved and every leg the agent paid or received.
	expect *swapExpect
	// parseFail is the reason its events cannot make a row (the world
	// spoiled them on purpose), "" when they can.
	parseFail competition.Reason
	// reorg is set when the transaction's block is rolled back (reorg.go).
	reorg *Reorg
}

// swapExpect is what the world knows about a swap it made: the route's
// ends and amounts, and the legs as it made them (raw_event_json).
type swapExpect struct {
	tokenIn, amountIn, tokenOut, amountOut string
	legs                                   competition.Legs
}

// row is the swap row a correct sweep writes for tx.
func (tx *worldTx) row() competition.Swap {
	raw, err := json.Marshal(tx.expect.legs)
	if err != nil {
		panic(fmt.Sprintf("sim: encode legs of %s: %v", tx.TxID, err)) // the simulator's own types always encode
	}
	return competition.Swap{
		TxID:          tx.TxID,
		Sender:        tx.Sender,
		ContractID:    tx.call.ContractID,
		FunctionName:  tx.call.FunctionName,
		TokenIn:       tx.expect.tokenIn,
		AmountIn:      tx.expect.amountIn,
		TokenOut:      tx.expect.tokenOut,
		AmountOut:     tx.expect.amountOut,
		BurnBlockTime: BurnBlockOf(tx.minedAt()).Unix(),
		BlockTime:     tx.minedAt().Unix(),
		TxStatus:      statusSuccess,
		Source:        competition.SourceSweep,
		RawEventJSON:  raw,
	}
}

func (tx *worldTx) exists(at time.Time) bool { return !at.Before(tx.AppearsAt) }

// statusAt is the tx_status at at. A transaction of a rolled-back block
// is back in the mempool until its re-apply, as after a real reorg.
func (tx *worldTx) statusAt(at time.Time) string {
	if !tx.SettlesAt.IsZero() && at.Before(tx.SettlesAt) || tx.reorg.rolledBack(at) {
		return statusPending
	}
	return tx.status
}

// minedAt is when the transaction is mined: its Stacks block's time. Its
// burn block (BurnBlockOf) began the tenure, up to burnBlockPeriod before.
func (tx *worldTx) minedAt() time.Time {
	if !tx.SettlesAt.IsZero() {
		return tx.SettlesAt
	}
	return tx.AppearsAt
}

// BurnBlockOf is the time of the Bitcoin block whose tenure holds the
// Stacks block of t: every Stacks block of a tenure (one every
// stacksBlockPeriod seconds) shares it, as burn_block_time (SPEC §5.0
// "Times").
func BurnBlockOf(t time.Time) time.Time {
	return time.Unix(heightEpoch+floorDiv(t.Unix()-heightEpoch, burnBlockPeriod)*burnBlockPeriod, 0).UTC()
}

// position is where the transaction sits once mined: its block (one a
// second) and its index there.
type position struct{ height, index int64 }

func (p position) compare(o position) int {
	return cmp.Or(cmp.Compare(p.height, o.height), cmp.Compare(p.index, o.index))
}

// position is where the transaction sits at at, once mined: a re-applied
// one in its new block from its re-apply on.
func (tx *worldTx) position(at time.Time) position {
	if tx.reorg.reapplied(at) {
		return position{height: tx.reorg.NewHeight, index: reorgIndexBase + tx.index}
	}
	return position{height: heightAt(tx.minedAt()), index: tx.index}
}

// blockTime is when the transaction's block at at became canonical: when
// it was mined, or re-applied. Hiro's block_time stays the first block's
// (minedAt): the simulator's simplification, so that a ledger that never
// heard of a rollback (a dropped delivery) still holds the right row.
func (tx *worldTx) blockTime(at time.Time) time.Time {
	if tx.reorg.reapplied(at) {
		return tx.reorg.ReapplyAt
	}
	return tx.minedAt()
}

func (tx *worldTx) found(allow competition.Allowlist) bool {
	return tx.call != nil && allow.Allowed(tx.call.ContractID, tx.call.FunctionName)
}

// inMempool reports whether a status belongs to a transaction that was never
// mined: Hiro renders those without block fields.
func inMempool(status string) bool {
	return status == statusPending || strings.HasPrefix(status, "dropped_")
}
