package competition

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/fault"
	"github.com/pacer-dev/pacer/internal/hiro"
)

// compStart is COMPETITION_START's default; the stableswap fixture is one day
// after it.
var compStart = time.Unix(1778700600, 0)

const goodTxID = "0x46bc5587ae56e5bd4453daa2bf63c2a9e0414953fd21a82eb44f2f926f0ee0e4"

func int64p(n int64) *int64 { return &n }
func boolp(b bool) *bool    { return &b }

func genesisAgent() Agent {
	return Agent{STXAddress: agentAddr, BTCAddress: "bc1qagent", ERC8004AgentID: int64p(42), ClaimStatus: ClaimVerified}
}

// verifyCase is one row of the gate table. Each give… func changes a valid
// setup (a registered genesis agent, a successful allowlisted stableswap one
// day into the competition) in one way.
type verifyCase struct {
	name         string
	giveTxID     string
	giveSource   string
	giveTx       func(*hiro.Tx)
	giveTxErr    error
	giveLedger   func(*fakeLedger)
	wantStatus   Status
	wantReason   Reason
	wantHTTP     int
	wantHiroCall bool
	wantClass    pacer.ErrorClass
	// wantKnown: answered from swap_rejections.
	wantKnown bool
}

// verifyCases is the gate table, shared with the test that checks it covers
// every reason.
func verifyCases() []verifyCase {
	hiroErr := func(class pacer.ErrorClass) error {
		return &fault.Error{Class: class, Op: "hiro GET /extended/v1/tx/x", Err: errors.New("upstream said no")}
	}
	dbDown := errors.New("connection refused")

	return []verifyCase{
		{
			name:         "valid swap is inserted",
			wantStatus:   StatusInserted,
			wantHTTP:     http.StatusOK,
			wantHiroCall: true,
		},
		{
			name:       "already in swaps: no Hiro call at all",
			giveLedger: func(l *fakeLedger) { l.swaps = map[string]Swap{goodTxID: {TxID: goodTxID}} },
			wantStatus: StatusAlreadyKnown,
			wantHTTP:   http.StatusConflict,
		},
		{
			name:       "ledger down before anything else",
			giveLedger: func(l *fakeLedger) { l.existsErr = dbDown },
			wantStatus: StatusRejected,
			wantReason: ReasonDBUnavailable,
			wantHTTP:   http.StatusServiceUnavailable,
			wantClass:  pacer.ClassTransport,
		},
		{
			name: "a kept rejection is answered from the ledger, no Hiro call",
			giveLedger: func(l *fakeLedger) {
				l.rejections = map[string]Rejection{goodTxID: {TxID: goodTxID, Reason: ReasonTxFailed, Detail: "ended with abort_by_response"}}
			},
			wantStatus: StatusRejected,
			wantReason: ReasonTxFailed,
			wantHTTP:   http.StatusUnprocessableEntity,
			wantKnown:  true,
		},
		{
			name: "a kept rejection that is not final is ignored",
			giveLedger: func(l *fakeLedger) {
				l.rejections = map[string]Rejection{goodTxID: {TxID: goodTxID, Reason: ReasonTxFetchFailed}}
			},
			wantStatus:   StatusInserted,
			wantHTTP:     http.StatusOK,
			wantHiroCall: true,
		},
		{
			name:       "rejection lookup fails",
			giveLedger: func(l *fakeLedger) { l.knownErr = dbDown },
			wantStatus: StatusRejected,
			wantReason: ReasonDBUnavailable,
			wantHTTP:   http.StatusServiceUnavailable,
			wantClass:  pacer.ClassTransport,
		},
		{
			name:         "Hiro 404",
			giveTxErr:    hiroErr(pacer.ClassNotFound),
			wantStatus:   StatusRejected,
			wantReason:   ReasonTxNotFound,
			wantHTTP:     http.StatusNotFound,
			wantHiroCall: true,
			wantClass:    pacer.ClassNotFound,
		},
		{
			name:         "Hiro rate limit",
			giveTxErr:    hiroErr(pacer.ClassRateLimit),
			wantStatus:   StatusRejected,
			wantReason:   ReasonTxFetchFailed,
			wantHTTP:     http.StatusBadGateway,
			wantHiroCall: true,
			wantClass:    pacer.ClassRateLimit,
		},
		{
			name:         "Hiro bad JSON",
			giveTxErr:    hiroErr(pacer.ClassParseError),
			wantStatus:   StatusRejected,
			wantReason:   ReasonTxFetchFailed,
			wantHTTP:     http.StatusBadGateway,
			wantHiroCall: true,
			wantClass:    pacer.ClassParseError,
		},
		{
			name:         "Hiro answers about another tx",
			giveTx:       func(tx *hiro.Tx) { tx.TxID = "0xbeef" },
			wantStatus:   StatusRejected,
			wantReason:   ReasonTxFetchFailed,
			wantHTTP:     http.StatusBadGateway,
			wantHiroCall: true,
			wantClass:    pacer.ClassParseError,
		},
		{
			name:         "fewer events than event_count after paging",
			giveTx:       func(tx *hiro.Tx) { tx.EventCount = 30 },
			wantStatus:   StatusRejected,
			wantReason:   ReasonIncompleteEvents,
			wantHTTP:     http.StatusUnprocessableEntity,
			wantHiroCall: true,
		},
		{
			name:         "every event read: event_count equal",
			giveTx:       func(tx *hiro.Tx) { tx.EventCount = len(tx.Events) },
			wantStatus:   StatusInserted,
			wantHTTP:     http.StatusOK,
			wantHiroCall: true,
		},
		{
			name:         "pending: no row, kept as pending",
			giveTx:       func(tx *hiro.Tx) { tx.TxStatus = "pending" },
			wantStatus:   StatusPending,
			wantHTTP:     http.StatusAccepted,
			wantHiroCall: true,
		},
		{
			name:         "on a fork that lost",
			giveTx:       func(tx *hiro.Tx) { tx.Canonical = boolp(false) },
			wantStatus:   StatusRejected,
			wantReason:   ReasonNotCanonical,
			wantHTTP:     http.StatusUnprocessableEntity,
			wantHiroCall: true,
		},
		{
			name:         "in a microblock that lost",
			giveTx:       func(tx *hiro.Tx) { tx.Canonical, tx.MicroblockCanonical = boolp(true), boolp(false) },
			wantStatus:   StatusRejected,
			wantReason:   ReasonNotCanonical,
			wantHTTP:     http.StatusUnprocessableEntity,
			wantHiroCall: true,
		},
		{
			name:         "canonical said true counts",
			giveTx:       func(tx *hiro.Tx) { tx.Canonical, tx.MicroblockCanonical = boolp(true), boolp(true) },
			wantStatus:   StatusInserted,
			wantHTTP:     http.StatusOK,
			wantHiroCall: true,
		},
		{
			name:         "unknown status",
			giveTx:       func(tx *hiro.Tx) { tx.TxStatus = "confirmed" },
			wantStatus:   StatusRejected,
			wantReason:   ReasonMalformedTx,
			wantHTTP:     http.StatusUnprocessableEntity,
			wantHiroCall: true,
		},
		{
			name:         "missing status",
			giveTx:       func(tx *hiro.Tx) { tx.TxStatus = "" },
			wantStatus:   StatusRejected,
			wantReason:   ReasonMalformedTx,
			wantHTTP:     http.StatusUnprocessableEntity,
			wantHiroCall: true,
		},
		{
			name:         "aborted by post-condition",
			giveTx:       func(tx *hiro.Tx) { tx.TxStatus = "abort_by_post_condition" },
			wantStatus:   StatusRejected,
			wantReason:   ReasonTxFailed,
			wantHTTP:     http.StatusUnprocessableEntity,
			wantHiroCall: true,
		},
		{
			name:         "dropped from the mempool",
			giveTx:       func(tx *hiro.Tx) { tx.TxStatus = "dropped_replace_by_fee" },
			wantStatus:   StatusRejected,
			wantReason:   ReasonTxFailed,
			wantHTTP:     http.StatusUnprocessableEntity,
			wantHiroCall: true,
		},
		{
			name:         "one second before the start",
			giveTx:       func(tx *hiro.Tx) { tx.BurnBlockTime = compStart.Unix() - 1 },
			wantStatus:   StatusRejected,
			wantReason:   ReasonBeforeCompStart,
			wantHTTP:     http.StatusUnprocessableEntity,
			wantHiroCall: true,
		},
		{
			name:         "exactly at the start counts",
			giveTx:       func(tx *hiro.Tx) { tx.BurnBlockTime = compStart.Unix() },
			wantStatus:   StatusInserted,
			wantHTTP:     http.StatusOK,
			wantHiroCall: true,
		},
		{
			name:         "in a tenure begun before the start, its own block after it: counts",
			giveTx:       func(tx *hiro.Tx) { tx.BurnBlockTime, tx.BlockTime = compStart.Unix()-400, compStart.Unix()+4 },
			wantStatus:   StatusInserted,
			wantHTTP:     http.StatusOK,
			wantHiroCall: true,
		},
		{
			name:         "in the same tenure, its own block a second before the start",
			giveTx:       func(tx *hiro.Tx) { tx.BurnBlockTime, tx.BlockTime = compStart.Unix()-400, compStart.Unix()-1 },
			wantStatus:   StatusRejected,
			wantReason:   ReasonBeforeCompStart,
			wantHTTP:     http.StatusUnprocessableEntity,
			wantHiroCall: true,
		},
		{
			name:         "not a contract call",
			giveTx:       func(tx *hiro.Tx) { tx.TxType = "token_transfer"; tx.ContractCall = nil },
			wantStatus:   StatusRejected,
			wantReason:   ReasonMalformedTx,
			wantHTTP:     http.StatusUnprocessableEntity,
			wantHiroCall: true,
		},
		{
			name:         "contract call without its payload",
			giveTx:       func(tx *hiro.Tx) { tx.ContractCall = nil },
			wantStatus:   StatusRejected,
			wantReason:   ReasonMalformedTx,
			wantHTTP:     http.StatusUnprocessableEntity,
			wantHiroCall: true,
		},
		{
			name:         "sender not registered",
			giveLedger:   func(l *fakeLedger) { l.agents = nil },
			wantStatus:   StatusRejected,
			wantReason:   ReasonSenderNotRegistered,
			wantHTTP:     http.StatusUnprocessableEntity,
			wantHiroCall: true,
		},
		{
			name:         "agent lookup fails",
			giveLedger:   func(l *fakeLedger) { l.agentErr = dbDown },
			wantStatus:   StatusRejected,
			wantReason:   ReasonDBUnavailable,
			wantHTTP:     http.StatusServiceUnavailable,
			wantHiroCall: true,
			wantClass:    pacer.ClassTransport,
		},
		{
			name:         "registered without a claim",
			giveLedger:   func(l *fakeLedger) { a := genesisAgent(); a.ClaimStatus = ""; l.agents[agentAddr] = a },
			wantStatus:   StatusRejected,
			wantReason:   ReasonSenderNotGenesis,
			wantHTTP:     http.StatusUnprocessableEntity,
			wantHiroCall: true,
		},
		{
			name:         "claim still pending",
			giveLedger:   func(l *fakeLedger) { a := genesisAgent(); a.ClaimStatus = "pending"; l.agents[agentAddr] = a },
			wantStatus:   StatusRejected,
			wantReason:   ReasonSenderNotGenesis,
			wantHTTP:     http.StatusUnprocessableEntity,
			wantHiroCall: true,
		},
		{
			name:         "claim failed",
			giveLedger:   func(l *fakeLedger) { a := genesisAgent(); a.ClaimStatus = "failed"; l.agents[agentAddr] = a },
			wantStatus:   StatusRejected,
			wantReason:   ReasonSenderNotGenesis,
			wantHTTP:     http.StatusUnprocessableEntity,
			wantHiroCall: true,
		},
		{
			name:         "rewarded claim counts",
			giveLedger:   func(l *fakeLedger) { a := genesisAgent(); a.ClaimStatus = ClaimRewarded; l.agents[agentAddr] = a },
			wantStatus:   StatusInserted,
			wantHTTP:     http.StatusOK,
			wantHiroCall: true,
		},
		{
			name:         "genesis without an ERC-8004 id",
			giveLedger:   func(l *fakeLedger) { a := genesisAgent(); a.ERC8004AgentID = nil; l.agents[agentAddr] = a },
			wantStatus:   StatusRejected,
			wantReason:   ReasonSenderNotRegistered,
			wantHTTP:     http.StatusUnprocessableEntity,
			wantHiroCall: true,
		},
		{
			name:         "contract not allowlisted",
			giveTx:       func(tx *hiro.Tx) { tx.ContractCall.ContractID = "SP000000000000000000002Q6VF78.unknown-pool" },
			wantStatus:   StatusRejected,
			wantReason:   ReasonContractNotAllowlisted,
			wantHTTP:     http.StatusUnprocessableEntity,
			wantHiroCall: true,
		},
		{
			name:         "function not allowlisted on an allowlisted contract",
			giveTx:       func(tx *hiro.Tx) { tx.ContractCall.FunctionName = "add-liquidity" },
			wantStatus:   StatusRejected,
			wantReason:   ReasonContractNotAllowlisted,
			wantHTTP:     http.StatusUnprocessableEntity,
			wantHiroCall: true,
		},
		{
			name:         "bad amount",
			giveTx:       func(tx *hiro.Tx) { tx.Events[1].Asset.Amount = "859839.5" },
			wantStatus:   StatusRejected,
			wantReason:   ReasonInvalidAmount,
			wantHTTP:     http.StatusUnprocessableEntity,
			wantHiroCall: true,
		},
		{
			name:         "no transfer events",
			giveTx:       func(tx *hiro.Tx) { tx.Events = nil },
			wantStatus:   StatusRejected,
			wantReason:   ReasonIncompleteEvents,
			wantHTTP:     http.StatusUnprocessableEntity,
			wantHiroCall: true,
		},
		{
			name:         "one direction only",
			giveTx:       func(tx *hiro.Tx) { tx.Events = tx.Events[:1] },
			wantStatus:   StatusRejected,
			wantReason:   ReasonIncompleteEvents,
			wantHTTP:     http.StatusUnprocessableEntity,
			wantHiroCall: true,
		},
		{
			name:         "another writer inserted first",
			giveLedger:   func(l *fakeLedger) { l.loseRace = true },
			wantStatus:   StatusAlreadyKnown,
			wantHTTP:     http.StatusConflict,
			wantHiroCall: true,
		},
		{
			name:         "insert fails",
			giveLedger:   func(l *fakeLedger) { l.insertErr = dbDown },
			wantStatus:   StatusRejected,
			wantReason:   ReasonDBUnavailable,
			wantHTTP:     http.StatusServiceUnavailable,
			wantHiroCall: true,
			wantClass:    pacer.ClassTransport,
		},
		{
			name:         "a panic in a dependency",
			giveLedger:   func(l *fakeLedger) { l.panicIn = "Agent" },
			wantStatus:   StatusRejected,
			wantReason:   ReasonVerifyThrew,
			wantHTTP:     http.StatusInternalServerError,
			wantHiroCall: true,
			wantClass:    pacer.ClassTransport,
		},
		{
			name:       "unknown source",
			giveSource: "webhook",
			wantStatus: StatusRejected,
			wantReason: ReasonVerifyThrew,
			wantHTTP:   http.StatusInternalServerError,
			wantClass:  pacer.ClassTransport,
		},
		{
			name:       "txid that is not hex",
			giveTxID:   "0x46bc/../../v2",
			wantStatus: StatusRejected,
			wantReason: ReasonMalformedTx,
			wantHTTP:   http.StatusUnprocessableEntity,
		},
		{
			name:         "txid typed without 0x and in capitals",
			giveTxID:     "  46BC5587AE56E5BD4453DAA2BF63C2A9E0414953FD21A82EB44F2F926F0EE0E4 ",
			wantStatus:   StatusInserted,
			wantHTTP:     http.StatusOK,
			wantHiroCall: true,
		},
		// The first failing gate wins over every later one.
		{
			name:         "incomplete events beat pending",
			giveTx:       func(tx *hiro.Tx) { tx.TxStatus = "pending"; tx.EventCount = 99 },
			wantStatus:   StatusRejected,
			wantReason:   ReasonIncompleteEvents,
			wantHTTP:     http.StatusUnprocessableEntity,
			wantHiroCall: true,
		},
		{
			name:         "pending beats not canonical",
			giveTx:       func(tx *hiro.Tx) { tx.TxStatus = "pending"; tx.Canonical = boolp(false) },
			wantStatus:   StatusPending,
			wantHTTP:     http.StatusAccepted,
			wantHiroCall: true,
		},
		{
			name: "not canonical beats an unknown status, failure and an early time",
			giveTx: func(tx *hiro.Tx) {
				tx.Canonical = boolp(false)
				tx.TxStatus = "abort_by_response"
				tx.BurnBlockTime = 1
			},
			wantStatus:   StatusRejected,
			wantReason:   ReasonNotCanonical,
			wantHTTP:     http.StatusUnprocessableEntity,
			wantHiroCall: true,
		},
		{
			name: "failed beats early, unregistered and off-list",
			giveTx: func(tx *hiro.Tx) {
				tx.TxStatus = "abort_by_response"
				tx.BurnBlockTime = 1
				tx.ContractCall.ContractID = "SP1.x"
			},
			giveLedger:   func(l *fakeLedger) { l.agents = nil },
			wantStatus:   StatusRejected,
			wantReason:   ReasonTxFailed,
			wantHTTP:     http.StatusUnprocessableEntity,
			wantHiroCall: true,
		},
		{
			name:         "unregistered beats off-list and bad amounts",
			giveTx:       func(tx *hiro.Tx) { tx.ContractCall.ContractID = "SP1.x"; tx.Events[0].Asset.Amount = "-1" },
			giveLedger:   func(l *fakeLedger) { l.agents = nil },
			wantStatus:   StatusRejected,
			wantReason:   ReasonSenderNotRegistered,
			wantHTTP:     http.StatusUnprocessableEntity,
			wantHiroCall: true,
		},
		{
			name:         "off-list beats bad amounts",
			giveTx:       func(tx *hiro.Tx) { tx.ContractCall.FunctionName = "x"; tx.Events[0].Asset.Amount = "-1" },
			wantStatus:   StatusRejected,
			wantReason:   ReasonContractNotAllowlisted,
			wantHTTP:     http.StatusUnprocessableEntity,
			wantHiroCall: true,
		},
	}
}

func TestVerifyGates(t *testing.T) {
	t.Parallel()

	allow := loadAllowlist(t)
	for _, tt := range verifyCases() {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tx := loadTx(t, "hiro-tx-stableswap-stx-ststx.json")
			if tt.giveTx != nil {
				tt.giveTx(&tx)
			}
			txs := &fakeTxs{tx: tx, err: tt.giveTxErr}
			ledger := &fakeLedger{agents: map[string]Agent{agentAddr: genesisAgent()}}
			if tt.giveLedger != nil {
				tt.giveLedger(ledger)
			}
			v := &Verifier{Ledger: ledger, Txs: txs, Allowlist: allow, CompetitionStart: compStart}
			giveTxID, giveSource := tt.giveTxID, tt.giveSource
			if giveTxID == "" {
				giveTxID = goodTxID
			}
			if giveSource == "" {
				giveSource = SourceSweep
			}

			rowsBefore := len(ledger.swaps)
			if tt.giveTxErr == nil {
				txs.tx.Requests = 1
			}

			got := v.Verify(t.Context(), giveTxID, giveSource)

			require.Equal(t, tt.wantStatus, got.Status, "detail: %s, err: %v", got.Detail, got.Err)
			require.Equal(t, tt.wantReason, got.Reason, "detail: %s", got.Detail)
			require.Equal(t, tt.wantHTTP, got.HTTPStatus())
			require.Equal(t, tt.wantClass, got.Class())
			if got.Reason != ReasonVerifyThrew { // a panic loses the count
				require.Equal(t, txs.calls*txs.tx.Requests, got.Requests, "the Hiro requests are counted")
			}
			require.Equal(t, tt.wantHiroCall, txs.calls == 1, "Hiro calls: %d", txs.calls)
			require.Equal(t, tt.wantKnown, got.Known)
			require.NoError(t, got.LedgerErr)
			if got.Status == StatusRejected {
				require.NotEmpty(t, got.Detail)
			}
			// Final verdicts on a transaction Hiro served are kept, and
			// nothing else is; a pending one is kept as pending.
			r, kept := ledger.rejections[got.TxID]
			kept = kept && got.Status == StatusRejected && r.Reason == got.Reason
			require.Equal(t, got.Status == StatusRejected && got.Reason.Final() && (tt.wantHiroCall || tt.wantKnown), kept,
				"kept in swap_rejections: %v", ledger.rejections)
			_, pending := ledger.pending[got.TxID]
			require.Equal(t, got.Status == StatusPending, pending)
			if got.Status != StatusInserted {
				require.Nil(t, got.Swap)
				require.Len(t, ledger.swaps, rowsBefore, "nothing is written")
				return
			}
			require.Equal(t, goodTxID, got.TxID)
			require.Equal(t, SourceSweep, got.Swap.Source)
			require.Equal(t, goodTxID, got.Swap.TxID)
			require.Equal(t, *got.Swap, ledger.swaps[goodTxID], "the outcome carries the inserted row")
			require.Equal(t, []string{goodTxID}, ledger.lookups, "looked up in the normalised form")
		})
	}
}

func TestVerifyInsertsTheParsedSwap(t *testing.T) {
	t.Parallel()
	ledger := &fakeLedger{agents: map[string]Agent{agentAddr: genesisAgent()}}
	v := &Verifier{
		Ledger:           ledger,
		Txs:              &fakeTxs{tx: loadTx(t, "hiro-tx-stableswap-stx-ststx.json")},
		Allowlist:        loadAllowlist(t),
		CompetitionStart: compStart,
	}

	got := v.Verify(t.Context(), goodTxID, SourceAgent)

	require.Equal(t, StatusInserted, got.Status)
	row := *got.Swap
	require.JSONEq(t, `{
		"legsOut":[{"asset_id":"stx","amount":"1000000","counterparty":"`+poolAddr+`"}],
		"legsIn":[{"asset_id":"`+stSTX+`","amount":"859839","counterparty":"`+poolAddr+`"}],
		"netFlows":[{"asset_id":"stx","net":"-1000000"},{"asset_id":"`+stSTX+`","net":"859839"}]
	}`, string(row.RawEventJSON))
	row.RawEventJSON = nil
	require.Equal(t, Swap{
		TxID:          goodTxID,
		Sender:        agentAddr,
		ContractID:    stableswap,
		FunctionName:  "swap-x-for-y",
		TokenIn:       "stx",
		AmountIn:      "1000000",
		TokenOut:      stSTX,
		AmountOut:     "859839",
		BurnBlockTime: 1778787000,
		TxStatus:      "success",
		Source:        SourceAgent,
	}, row)

	again := v.Verify(t.Context(), goodTxID, SourceSweep)
	require.Equal(t, StatusAlreadyKnown, again.Status, "a second pass finds the row")
}

func TestVerifyWithoutDependencies(t *testing.T) {
	t.Parallel()
	got := (&Verifier{}).Verify(t.Context(), goodTxID, SourceSweep)
	require.Equal(t, ReasonVerifyThrew, got.Reason)
	require.Equal(t, http.StatusInternalServerError, got.HTTPStatus())
}

// TestVerifyGatesCoverEveryReason keeps the gate table honest: a reason no
// case produces fails here.
func TestVerifyGatesCoverEveryReason(t *testing.T) {
	t.Parallel()
	covered := map[Reason]bool{}
	for _, tt := range verifyCases() {
		covered[tt.wantReason] = true
	}
	for _, r := range AllReasons() {
		require.True(t, covered[r], "no gate case for %s", r)
	}
}

func TestHTTPStatus(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name        string
		giveOutcome Outcome
		wantHTTP    int
	}{
		{name: "inserted", giveOutcome: Outcome{Status: StatusInserted}, wantHTTP: 200},
		{name: "pending", giveOutcome: Outcome{Status: StatusPending}, wantHTTP: 202},
		{name: "already known", giveOutcome: Outcome{Status: StatusAlreadyKnown}, wantHTTP: 409},
		{name: "tx not found", giveOutcome: Outcome{Status: StatusRejected, Reason: ReasonTxNotFound}, wantHTTP: 404},
		{name: "upstream failure", giveOutcome: Outcome{Status: StatusRejected, Reason: ReasonTxFetchFailed}, wantHTTP: 502},
		{name: "database down", giveOutcome: Outcome{Status: StatusRejected, Reason: ReasonDBUnavailable}, wantHTTP: 503},
		{name: "threw", giveOutcome: Outcome{Status: StatusRejected, Reason: ReasonVerifyThrew}, wantHTTP: 500},
		{name: "verdict", giveOutcome: Outcome{Status: StatusRejected, Reason: ReasonSenderNotGenesis}, wantHTTP: 422},
		{name: "zero outcome", giveOutcome: Outcome{}, wantHTTP: 500},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.wantHTTP, tt.giveOutcome.HTTPStatus())
		})
	}
}

func TestVerifyKeepsVerdictsWhenTheLedgerCannotRecordThem(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		giveStatus string
		wantStatus Status
		wantReason Reason
	}{
		{name: "rejection", giveStatus: "abort_by_response", wantStatus: StatusRejected, wantReason: ReasonTxFailed},
		{name: "pending", giveStatus: "pending", wantStatus: StatusPending},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tx := loadTx(t, "hiro-tx-stableswap-stx-ststx.json")
			tx.TxStatus = tt.giveStatus
			ledger := &fakeLedger{agents: map[string]Agent{agentAddr: genesisAgent()}, recordErr: errors.New("connection refused")}
			v := &Verifier{Ledger: ledger, Txs: &fakeTxs{tx: tx}, Allowlist: loadAllowlist(t), CompetitionStart: compStart}

			got := v.Verify(t.Context(), goodTxID, SourceSweep)
			require.Equal(t, tt.wantStatus, got.Status)
			require.Equal(t, tt.wantReason, got.Reason)
			require.ErrorContains(t, got.LedgerErr, "connection refused")
			require.NoError(t, got.Err, "the verdict itself did not fail")
		})
	}
}

func TestRejectListed(t *testing.T) {
	t.Parallel()
	listed := func(change func(*hiro.Entry)) hiro.Entry {
		e := hiro.Entry{
			TxID: goodTxID, TxType: "contract_call", TxStatus: "success", SenderAddress: agentAddr,
			BlockHeight: 180000, TxIndex: 3, BurnBlockTime: compStart.Unix() + 60, Canonical: true,
			ContractCall: &hiro.ContractCall{ContractID: stableswap, FunctionName: "swap-x-for-y"},
		}
		if change != nil {
			change(&e)
		}
		return e
	}
	dbDown := errors.New("connection refused")

	tests := []struct {
		name       string
		giveEntry  hiro.Entry
		giveLedger func(*fakeLedger)
		wantOK     bool
		wantStatus Status
		wantReason Reason
		wantKept   bool
	}{
		{name: "a successful swap on time needs the detail", giveEntry: listed(nil)},
		{name: "at the start exactly needs the detail", giveEntry: listed(func(e *hiro.Entry) { e.BurnBlockTime = compStart.Unix() })},
		{name: "pending needs the detail", giveEntry: listed(func(e *hiro.Entry) { e.TxStatus = "pending"; e.BlockHeight = 0 })},
		{
			name:       "aborted",
			giveEntry:  listed(func(e *hiro.Entry) { e.TxStatus = "abort_by_post_condition" }),
			wantOK:     true,
			wantStatus: StatusRejected,
			wantReason: ReasonTxFailed,
			wantKept:   true,
		},
		{
			name:       "dropped from the mempool",
			giveEntry:  listed(func(e *hiro.Entry) { e.TxStatus = "dropped_replace_by_fee"; e.BlockHeight, e.BurnBlockTime = 0, 0 }),
			wantOK:     true,
			wantStatus: StatusRejected,
			wantReason: ReasonTxFailed,
			wantKept:   true,
		},
		{
			name:       "an unknown status",
			giveEntry:  listed(func(e *hiro.Entry) { e.TxStatus = "abort_by_reorg" }),
			wantOK:     true,
			wantStatus: StatusRejected,
			wantReason: ReasonMalformedTx,
			wantKept:   true,
		},
		{
			name:       "before the start",
			giveEntry:  listed(func(e *hiro.Entry) { e.BurnBlockTime = compStart.Unix() - 1 }),
			wantOK:     true,
			wantStatus: StatusRejected,
			wantReason: ReasonBeforeCompStart,
			wantKept:   true,
		},
		{
			name:       "on a fork that lost, before anything else",
			giveEntry:  listed(func(e *hiro.Entry) { e.Canonical = false; e.TxStatus = "abort_by_response"; e.BurnBlockTime = 1 }),
			wantOK:     true,
			wantStatus: StatusRejected,
			wantReason: ReasonNotCanonical,
			wantKept:   true,
		},
		{
			name:       "a successful entry without a time is left to the detail",
			giveEntry:  listed(func(e *hiro.Entry) { e.BurnBlockTime = 0 }),
			wantOK:     false,
			wantStatus: "",
		},
		{
			name:       "already a swap",
			giveEntry:  listed(func(e *hiro.Entry) { e.Canonical = false }),
			giveLedger: func(l *fakeLedger) { l.swaps = map[string]Swap{goodTxID: {TxID: goodTxID}} },
			wantOK:     true,
			wantStatus: StatusAlreadyKnown,
		},
		{
			name:       "ledger down",
			giveEntry:  listed(func(e *hiro.Entry) { e.TxStatus = "abort_by_response" }),
			giveLedger: func(l *fakeLedger) { l.existsErr = dbDown },
			wantOK:     true,
			wantStatus: StatusRejected,
			wantReason: ReasonDBUnavailable,
		},
		{
			name:       "a txid that is not one is never recorded",
			giveEntry:  listed(func(e *hiro.Entry) { e.TxID = "0xnothex"; e.TxStatus = "abort_by_response" }),
			wantOK:     true,
			wantStatus: StatusRejected,
			wantReason: ReasonMalformedTx,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ledger := &fakeLedger{}
			if tt.giveLedger != nil {
				tt.giveLedger(ledger)
			}
			txs := &fakeTxs{}
			v := &Verifier{Ledger: ledger, Txs: txs, Allowlist: loadAllowlist(t), CompetitionStart: compStart}

			got, ok := v.RejectListed(t.Context(), tt.giveEntry)
			require.Equal(t, tt.wantOK, ok)
			require.Equal(t, tt.wantStatus, got.Status)
			require.Equal(t, tt.wantReason, got.Reason)
			require.Zero(t, txs.calls, "no detail request")
			require.NoError(t, got.LedgerErr)
			r, kept := ledger.rejections[goodTxID]
			require.Equal(t, tt.wantKept, kept)
			if kept {
				require.Equal(t, Rejection{TxID: goodTxID, Sender: agentAddr, Reason: tt.wantReason, Detail: got.Detail}, r)
				again := v.Verify(t.Context(), goodTxID, SourceAgent)
				require.Equal(t, tt.wantReason, again.Reason, "the fast path answers from the kept rejection")
				require.True(t, again.Known)
				require.Zero(t, txs.calls)
			}
		})
	}
}

// Issue 28 finding 10: not_canonical and incomplete_events come from a
// passing upstream state (a fork window, an indexer lag). Kept, they
// stand for RevisitAfter; a look after that verifies the transaction
// again and inserts it when it now passes. Before, they were final: a
// rival's txid named during a fork window was excluded for good.
func TestPassingVerdictsAreLookedAtAgain(t *testing.T) {
	t.Parallel()
	for _, reason := range []Reason{ReasonNotCanonical, ReasonIncompleteEvents} {
		ledger := &fakeLedger{agents: map[string]Agent{agentAddr: genesisAgent()},
			rejections: map[string]Rejection{goodTxID: {TxID: goodTxID, Sender: agentAddr, Reason: reason, Age: RevisitAfter - time.Second}}}
		v := &Verifier{Ledger: ledger, Txs: &fakeTxs{tx: loadTx(t, "hiro-tx-stableswap-stx-ststx.json")},
			Allowlist: loadAllowlist(t), CompetitionStart: compStart}
		got := v.Verify(t.Context(), goodTxID, SourceSweep)
		require.Equal(t, StatusRejected, got.Status, "%s stands within RevisitAfter", reason)
		require.True(t, got.Known)

		ledger.mu.Lock()
		r := ledger.rejections[goodTxID]
		r.Age = RevisitAfter
		ledger.rejections[goodTxID] = r
		ledger.mu.Unlock()
		got = v.Verify(t.Context(), goodTxID, SourceSweep)
		require.Equal(t, StatusInserted, got.Status, "%s is looked at again after RevisitAfter", reason)
	}
	require.True(t, ReasonNotCanonical.Revisited() && ReasonIncompleteEvents.Revisited())
	require.False(t, ReasonTxFailed.Revisited() || ReasonSenderNotRegistered.Revisited())
}

// rollbackLedger is a fakeLedger that knows rollbacks.
type rollbackLedger struct {
	*fakeLedger
	rbs []Rollback
}

func (l rollbackLedger) Rollbacks(context.Context, string) ([]Rollback, error) { return l.rbs, nil }

// Issue 28 finding 9: a chainhook rollback naming the swap's own block
// holds it out (pending) while Hiro may not have followed it yet, and only
// for RollbackHold: past it, Hiro still showing the transaction canonical
// in that block, it is inserted. Before, it was held out for good.
func TestRollbackHoldsOnlyUntilHiroHadTime(t *testing.T) {
	t.Parallel()
	tx := loadTx(t, "hiro-tx-stableswap-stx-ststx.json")
	tx.BlockHash = "0x" + strings.Repeat("b1", 32)
	ledger := rollbackLedger{fakeLedger: &fakeLedger{agents: map[string]Agent{agentAddr: genesisAgent()}},
		rbs: []Rollback{{BlockHash: tx.BlockHash, BlockHeight: tx.BlockHeight, Age: RollbackHold - time.Second}}}
	v := &Verifier{Ledger: ledger, Txs: &fakeTxs{tx: tx}, Allowlist: loadAllowlist(t), CompetitionStart: compStart}
	got := v.Verify(t.Context(), goodTxID, SourceSweep)
	require.Equal(t, StatusPending, got.Status, "held while Hiro may lag: %s", got.Detail)
	ledger.rbs[0].Age = RollbackHold
	got = v.Verify(t.Context(), goodTxID, SourceSweep)
	require.Equal(t, StatusInserted, got.Status, "past the hold, Hiro's word stands")
}
