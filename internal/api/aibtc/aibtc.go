// Package aibtc is the AIBTC competition's own HTTP contract: the routes
// the landing page (aibtcdev/landing-page, app/api/competition) serves and
// the agents' MCP client (aibtcdev/aibtc-mcp-server, its competition_*
// tools) reads. pacer serves it unchanged under Prefix (SPEC §7.1) as a
// second encoding of its own reads: this package holds the shapes and the
// conversions from pacer's rows, nothing that queries. Field names,
// statuses and error codes are theirs; where pacer knows better (amounts
// above 2^53) it keeps their shape and writes the exact value.
package aibtc

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"

	"github.com/pacer-dev/pacer/internal/competition"
	"github.com/pacer-dev/pacer/internal/store"
)

// Prefix is where pacer serves the contract: pointing the client's
// AIBTC_CAMPAIGN_API_URL at https://HOST/aibtc/api/competition is the whole
// migration.
const Prefix = "/aibtc/api/competition"

// Row is one swap as the landing page's swaps table had it (its migration
// 005, the client's CompetitionSwapRow).
type Row struct {
	TxID         string `json:"txid"`
	Sender       string `json:"sender"`
	ContractID   string `json:"contract_id"`
	FunctionName string `json:"function_name"`
	TokenIn      string `json:"token_in"`
	// AmountIn and AmountOut are JSON integers with every digit: the
	// landing page typed them number (and lost digits above 2^53).
	AmountIn      json.Number `json:"amount_in"`
	TokenOut      string      `json:"token_out"`
	AmountOut     json.Number `json:"amount_out"`
	BurnBlockTime int64       `json:"burn_block_time"`
	// TxStatus is "success" for every row pacer keeps (SPEC §6); the client
	// counts only those.
	TxStatus string `json:"tx_status"`
	Source   string `json:"source"`
	// ScoredValue and ScoredAt were the landing page's nightly scoring,
	// which pacer does not run: always null.
	ScoredValue *float64 `json:"scored_value"`
	ScoredAt    *string  `json:"scored_at"`
}

// The sources the contract names. pacer's readers (the sweep) are the
// landing page's "cron", its catch-up scheduler.
const (
	SourceAgent     = "agent"
	SourceCron      = "cron"
	SourceChainhook = "chainhook"
)

// Source is a swaps.source as the contract names it.
func Source(s string) string {
	if s == competition.SourceSweep {
		return SourceCron
	}
	return s
}

// FromTrade is a row of pacer's trades list in the contract's shape.
func FromTrade(t store.TradeRow) Row {
	return Row{TxID: t.TxID, Sender: t.Sender, ContractID: t.ContractID, FunctionName: t.FunctionName,
		TokenIn: t.TokenIn, AmountIn: json.Number(t.AmountIn), TokenOut: t.TokenOut, AmountOut: json.Number(t.AmountOut),
		BurnBlockTime: t.BurnBlockTime, TxStatus: t.TxStatus, Source: Source(t.Source)}
}

// FromSwap is a swap the verifier wrote (or found) in the contract's shape.
func FromSwap(sw competition.Swap) Row {
	return Row{TxID: sw.TxID, Sender: sw.Sender, ContractID: sw.ContractID, FunctionName: sw.FunctionName,
		TokenIn: sw.TokenIn, AmountIn: json.Number(sw.AmountIn), TokenOut: sw.TokenOut, AmountOut: json.Number(sw.AmountOut),
		BurnBlockTime: sw.BurnBlockTime, TxStatus: sw.TxStatus, Source: Source(sw.Source)}
}

// Trades answers GET /trades.
type Trades struct {
	Trades     []Row   `json:"trades"`
	NextCursor *string `json:"next_cursor"`
}

// cursor is the landing page's trades cursor: base64url (unpadded) of
// {"t": burn_block_time, "x": txid}, the last row of the page before.
type cursor struct {
	T *int64  `json:"t"`
	X *string `json:"x"`
}

// EncodeCursor is the cursor that continues after k, written as the landing
// page writes it, so a client that kept one from there may keep going.
func EncodeCursor(k store.TradeKey) string {
	b, _ := json.Marshal(cursor{T: &k.BurnBlockTime, X: &k.TxID}) // two scalars: cannot fail
	return base64.RawURLEncoding.EncodeToString(b)
}

// ErrCursor is a cursor this contract did not give.
var ErrCursor = errors.New("invalid cursor: pass the opaque value from a previous next_cursor")

// DecodeCursor reads a cursor EncodeCursor (or the landing page) wrote.
func DecodeCursor(c string) (store.TradeKey, error) {
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(c, "="))
	if err != nil {
		return store.TradeKey{}, ErrCursor
	}
	var cur cursor
	if json.Unmarshal(raw, &cur) != nil || cur.T == nil || cur.X == nil || len(*cur.X) > 66 {
		return store.TradeKey{}, ErrCursor
	}
	return store.TradeKey{BurnBlockTime: *cur.T, TxID: *cur.X}, nil
}

// Status answers GET /status.
type Status struct {
	Address string `json:"address"`
	// AgentID is the agent's ERC-8004 identity; null until it registers
	// one (the client then tells its model to call identity_register).
	AgentID            *int64 `json:"agent_id"`
	Registered         bool   `json:"registered"`
	TradeCount         int64  `json:"trade_count"`
	VerifiedTradeCount int64  `json:"verified_trade_count"`
	FirstTradeAt       *int64 `json:"first_trade_at"`
	LastTradeAt        *int64 `json:"last_trade_at"`
	// LatestRoundResult is the agent's result in the newest finalized
	// round it placed in; absent (not null) when it has none.
	LatestRoundResult *Result `json:"latestRoundResult,omitempty"`
}

// FromStatus is an address's status in the contract's shape: an address
// that is not a registered agent reads as the landing page's unregistered
// row (no id, no counts), whatever pacer holds about it.
func FromStatus(addr string, st store.AgentStatus) Status {
	out := Status{Address: addr}
	if !st.Registered {
		return out
	}
	out.Registered, out.AgentID = true, st.ERC8004
	// Every row pacer keeps is a successful swap (SPEC §6).
	out.TradeCount, out.VerifiedTradeCount = st.Trades, st.Trades
	out.FirstTradeAt, out.LastTradeAt = st.FirstTrade, st.LatestTrade
	return out
}

// Allowlist answers GET /allowlist.
type Allowlist struct {
	Entries         []Entry `json:"entries"`
	TotalContracts  int     `json:"total_contracts"`
	TotalFunctions  int     `json:"total_functions"`
	ProviderAddress string  `json:"provider_address"`
	// Protocols counts the entries of each protocol.
	Protocols map[string]int `json:"protocols"`
}

// Entry is one allowlisted contract and its swap functions.
type Entry struct {
	ContractID string   `json:"contract_id"`
	Functions  []string `json:"functions"`
}

// ProtocolBitflow is the protocol of every route in pacer's allowlist (the
// catalog's swap-allowlist.json: "Bitflow routes"), as on the landing page.
const ProtocolBitflow = "bitflow"

// NewAllowlist is the allowlist in the contract's shape.
func NewAllowlist(entries []Entry, provider string) Allowlist {
	out := Allowlist{Entries: entries, TotalContracts: len(entries), ProviderAddress: provider,
		Protocols: map[string]int{ProtocolBitflow: len(entries)}}
	if out.Entries == nil {
		out.Entries = []Entry{}
	}
	for _, e := range entries {
		out.TotalFunctions += len(e.Functions)
	}
	return out
}
