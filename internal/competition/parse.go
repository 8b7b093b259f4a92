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
	AmountIn      string          `json:"amount_in"`
	TokenOut      string          `json:"token_out"`
	AmountOut     string          `json:"amount_out"`
	BurnBlockTime int64           `json:"burn_block_time"`
	TxStatus      string          `json:"tx_status"`
	Source        string          `json:"source"`
	RawEventJSON  json.RawMessage `json:"raw_event_json"`
}

// Leg is one transfer into or out of the agent.
type Leg struct {
	AssetID      string `json:"asset_id"`
	Amount       string `json:"amount"`
	Counterparty string `json:"counterparty"`
}

// Legs is the content of swaps.raw_event_json: every leg, so the choice of the
// largest ones can be audited and redone, plus the provider that referred
// the swap on contracts that record one.
type Legs struct {
	LegsOut  []Leg  `json:"legsOut"`
	LegsIn   []Leg  `json:"legsIn"`
	Provider string `json:"provider,omitempty"`
}

// Event types that move STX, under their Hiro API name and the node event
// stream names, and those that move fungible tokens.
var (
	stxEventTypes = map[string]bool{"stx_asset": true, "stx_transfer_event": true, "stx_transfer": true}
	ftEventTypes  = map[string]bool{"fungible_token_asset": true, "ft_transfer_event": true}
)

// ParseSwap turns a contract call's transfer events into a swap (SPEC §5.6).
// The agent is the sender; what left the agent is the swap's input and what
// reached it the output, the largest leg of each direction winning, because
// multi-hop routes move small amounts of intermediate tokens both ways.
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
		legs                  Legs
		largestOut, largestIn *big.Int
		out, in               Leg
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

		var leg Leg
		switch {
		case a.Sender == agent && a.Recipient != agent:
			leg = Leg{AssetID: asset, Amount: amount.String(), Counterparty: a.Recipient}
		case a.Recipient == agent && a.Sender != agent:
			leg = Leg{AssetID: asset, Amount: amount.String(), Counterparty: a.Sender}
		default:
			continue // not the agent's, or the agent paying itself
		}
		if asset == "" {
			return Swap{}, fmt.Errorf("%w: events[%d] moves a fungible token without an asset_id", ErrIncompleteEvents, i)
		}

		// Strictly greater keeps the first of equal legs, so the choice does
		// not depend on anything but event order.
		if a.Sender == agent {
			legs.LegsOut = append(legs.LegsOut, leg)
			if largestOut == nil || amount.Cmp(largestOut) > 0 {
				largestOut, out = amount, leg
			}
		} else {
			legs.LegsIn = append(legs.LegsIn, leg)
			if largestIn == nil || amount.Cmp(largestIn) > 0 {
				largestIn, in = amount, leg
			}
		}
	}

	switch {
	case len(legs.LegsOut) == 0 && len(legs.LegsIn) == 0:
		return Swap{}, ErrNoTransferEvents
	case len(legs.LegsOut) == 0:
		return Swap{}, fmt.Errorf("%w: nothing left the agent", ErrIncompleteEvents)
	case len(legs.LegsIn) == 0:
		return Swap{}, fmt.Errorf("%w: nothing reached the agent", ErrIncompleteEvents)
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
		TokenIn:       out.AssetID,
		AmountIn:      out.Amount,
		TokenOut:      in.AssetID,
		AmountOut:     in.Amount,
		BurnBlockTime: tx.BurnBlockTime,
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
