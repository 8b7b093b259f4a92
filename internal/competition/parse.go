package competition

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"

	"github.com/pacer-dev/pacer/internal/hiro"
)

// TokenSTX is the token id of native STX; FT tokens use their asset id.
const TokenSTX = "stx"

// maxAmountDigits is the most digits Postgres numeric keeps before the
// decimal point. A longer amount could not be stored, so it is invalid here
// rather than a database error later.
const maxAmountDigits = 131072

// Parse failures. The verifier maps ErrInvalidAmount to invalid_amount,
// ErrNotContractCall to malformed_tx and the rest to incomplete_events.
var (
	ErrNotContractCall  = errors.New("not a contract call")
	ErrNoTransferEvents = errors.New("no transfer events")
	ErrIncompleteEvents = errors.New("incomplete events")
	ErrInvalidAmount    = errors.New("invalid amount")
)

// Swap is one row of the swaps table.
type Swap struct {
	TxID         string `json:"txid"`
	Sender       string `json:"sender"`
	ContractID   string `json:"contract_id"`
	FunctionName string `json:"function_name"`
	TokenIn      string `json:"token_in"`
	// AmountIn and AmountOut are canonical decimal integers of any size
	// (numeric in Postgres); a string keeps them exact on every path.
	AmountIn      string `json:"amount_in"`
	TokenOut      string `json:"token_out"`
	AmountOut     string `json:"amount_out"`
	BurnBlockTime int64  `json:"burn_block_time"`
	// BlockTime is the Stacks block's own time (SPEC §5.0 "Times"), the
	// swap's time; 0 when Hiro did not give it (null in swaps).
	BlockTime    int64           `json:"block_time,omitempty"`
	TxStatus     string          `json:"tx_status"`
	Source       string          `json:"source"`
	RawEventJSON json.RawMessage `json:"raw_event_json"`
}

// Leg is one transfer into or out of the agent.
type Leg struct {
	AssetID      string `json:"asset_id"`
	Amount       string `json:"amount"`
	Counterparty string `json:"counterparty"`
}

// NetFlow is what one asset did to the agent's balance over the whole
// transaction: Net is a signed decimal integer, positive into the agent.
type NetFlow struct {
	AssetID string `json:"asset_id"`
	Net     string `json:"net"`
}

// Legs is the content of swaps.raw_event_json: every leg and every asset's
// net flow, so the choice of token_in and token_out can be audited and
// redone, plus the provider that referred the swap on contracts that record
// one. NetFlows are in the order each asset first moved; an asset that
// passed through the agent shows with a net of 0.
type Legs struct {
	LegsOut  []Leg     `json:"legsOut"`
	LegsIn   []Leg     `json:"legsIn"`
	NetFlows []NetFlow `json:"netFlows"`
	Provider string    `json:"provider,omitempty"`
}

// Event types that move STX, under their Hiro API name and the node event
// stream names, and those that move fungible tokens.
var (
	stxEventTypes = map[string]bool{"stx_asset": true, "stx_transfer_event": true, "stx_transfer": true}
	ftEventTypes  = map[string]bool{"fungible_token_asset": true, "ft_transfer_event": true}
)

// ParseSwap turns a contract call's transfer events into a swap (SPEC §5.5).
// The agent is the sender. Its legs are netted per asset: token_in is the
// asset with the largest net outflow, token_out the one with the largest
// net inflow (the first to move wins a tie). An asset that nets to zero, an
// intermediate hop of a route through the agent (STX → WELSH → sBTC), is
// neither. Legs are only ever added up within their asset; net amounts of
// different assets are compared only when more than one asset leaves (or
// reaches) the agent on balance, which no allowlisted route does: its fees
// are paid in the input token and net with it.
// Source is left empty for the caller to set.
func ParseSwap(tx hiro.Tx, allow Allowlist) (Swap, error) {
	if tx.TxType != hiro.TxTypeContractCall || tx.ContractCall == nil {
		return Swap{}, fmt.Errorf("%w: tx_type %q", ErrNotContractCall, tx.TxType)
	}
	agent := tx.SenderAddress
	if agent == "" {
		return Swap{}, fmt.Errorf("%w: no sender_address", ErrIncompleteEvents)
	}

	var (
		legs   Legs
		assets []string // in the order they first moved
		net    = map[string]*big.Int{}
	)
	for i, ev := range tx.Events {
		a := ev.Asset
		if a == nil || a.AssetEventType != "transfer" {
			continue
		}
		var asset string
		switch {
		case stxEventTypes[ev.EventType]:
			asset = TokenSTX
		case ftEventTypes[ev.EventType]:
			asset = a.AssetID
		default:
			continue // NFTs and anything new are not swap legs
		}
		amount, err := parseAmount(a.Amount)
		if err != nil {
			return Swap{}, fmt.Errorf("events[%d]: %w", i, err)
		}

		out := a.Sender == agent && a.Recipient != agent
		in := a.Recipient == agent && a.Sender != agent
		if !out && !in {
			continue // not the agent's, or the agent paying itself
		}
		if asset == "" {
			return Swap{}, fmt.Errorf("%w: events[%d] moves a fungible token without an asset_id", ErrIncompleteEvents, i)
		}
		if net[asset] == nil {
			net[asset] = new(big.Int)
			assets = append(assets, asset)
		}
		if out {
			legs.LegsOut = append(legs.LegsOut, Leg{AssetID: asset, Amount: amount.String(), Counterparty: a.Recipient})
			net[asset].Sub(net[asset], amount)
		} else {
			legs.LegsIn = append(legs.LegsIn, Leg{AssetID: asset, Amount: amount.String(), Counterparty: a.Sender})
			net[asset].Add(net[asset], amount)
		}
	}
	if len(assets) == 0 {
		return Swap{}, ErrNoTransferEvents
	}

	// Strictly greater keeps the first of equal flows, so the choice
	// depends on nothing but event order.
	var tokenIn, tokenOut string
	for _, asset := range assets {
		n := net[asset]
		legs.NetFlows = append(legs.NetFlows, NetFlow{AssetID: asset, Net: n.String()})
		switch n.Sign() {
		case -1:
			if tokenIn == "" || n.Cmp(net[tokenIn]) < 0 {
				tokenIn = asset
			}
		case 1:
			if tokenOut == "" || n.Cmp(net[tokenOut]) > 0 {
				tokenOut = asset
			}
		}
	}
	switch {
	case tokenIn == "":
		return Swap{}, fmt.Errorf("%w: nothing left the agent on balance", ErrIncompleteEvents)
	case tokenOut == "":
		return Swap{}, fmt.Errorf("%w: nothing reached the agent on balance", ErrIncompleteEvents)
	}

	if allow.ProviderAttribution(tx.ContractCall.ContractID) {
		legs.Provider = providerArg(tx.ContractCall.FunctionArgs)
	}
	raw, err := json.Marshal(legs)
	if err != nil {
		return Swap{}, fmt.Errorf("encoding legs: %w", err)
	}

	return Swap{
		TxID:          tx.TxID,
		Sender:        agent,
		ContractID:    tx.ContractCall.ContractID,
		FunctionName:  tx.ContractCall.FunctionName,
		TokenIn:       tokenIn,
		AmountIn:      new(big.Int).Neg(net[tokenIn]).String(),
		TokenOut:      tokenOut,
		AmountOut:     net[tokenOut].String(),
		BurnBlockTime: tx.BurnBlockTime,
		BlockTime:     tx.BlockTime,
		TxStatus:      tx.TxStatus,
		RawEventJSON:  raw,
	}, nil
}

// parseAmount accepts only what the chain emits: unsigned decimal digits.
// math/big alone would also take signs, so the digits are checked first.
func parseAmount(s string) (*big.Int, error) {
	if s == "" || len(s) > maxAmountDigits || strings.TrimLeft(s, "0123456789") != "" {
		return nil, fmt.Errorf("%w: %q", ErrInvalidAmount, abbreviate(s))
	}
	n, ok := new(big.Int).SetString(s, 10)
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrInvalidAmount, abbreviate(s))
	}
	return n, nil
}

// providerArg returns the principal of the provider argument. Clarity writes
// principal literals with a leading quote, which the ledger does not keep.
func providerArg(args []hiro.FunctionArg) string {
	for _, arg := range args {
		if arg.Name == "provider" {
			return strings.TrimPrefix(arg.Repr, "'")
		}
	}
	return ""
}

// abbreviate keeps a hostile amount from bloating error messages and logs.
func abbreviate(s string) string {
	const keep = 40
	if len(s) <= keep {
		return s
	}
	return strings.ToValidUTF8(s[:keep], "") + "…"
}

// SwapTime is a transaction's time as COMPETITION_START and the discovery
// delay are measured (SPEC §5.0 "Times"): the Stacks block's block_time,
// or its burn block's where Hiro leaves block_time out. burn_block_time is
// the tenure's Bitcoin block, shared by every Stacks block of the tenure
// and accurate to about two hours.
func SwapTime(blockTime, burnBlockTime int64) int64 {
	if blockTime > 0 {
		return blockTime
	}
	return burnBlockTime
}
