package chainhook

import (
	"encoding/json"
	"strings"

	"github.com/pacer-dev/pacer/internal/competition"
	"github.com/pacer-dev/pacer/internal/hiro"
)

// Event types a token_transfer operation becomes in the Hiro shape
// competition.ParseSwap reads: the node event stream's names.
const (
	eventSTX = "stx_transfer_event"
	eventFT  = "ft_transfer_event"
	eventNFT = "nft_transfer_event"
)

// transfers reports whether the transaction moves a token at all.
func (tx Transaction) transfers() bool {
	for _, op := range tx.Operations {
		if op.Type == TypeTokenTransfer && op.Amount != nil && op.Account != nil {
			return true
		}
	}
	return false
}

// side is one token_transfer operation: an account's signed move of an
// asset.
type side struct {
	account, asset, kind string
	negative             bool
	// digits is the amount without its sign, as given: a value that is
	// not an integer stays as it is, for ParseSwap to refuse.
	digits string
}

// hiroTx describes the transaction in the shape Hiro's detail answers with
// (SPEC §5.5 reads it): the block's hash, height and time, and an event per
// transfer. A Chainhooks 2.0 token_transfer operation is one side of a
// transfer (the account's signed amount); the two sides of one transfer
// (the same asset and amount, one out and one in, other accounts) are
// paired into one event with its sender and recipient, and a side without
// its pair becomes an event whose other party is unknown (""), which
// nets the same way. The block's timestamp stands for burn_block_time,
// which deliveries do not carry: the readers' confirmation replaces it
// with Hiro's.
func (tx Transaction) hiroTx(b Block, contract, function string) hiro.Tx {
	m := tx.Metadata
	status := m.Status
	if status == "" {
		status = hiro.StatusSuccess
	}
	t := hiro.Tx{TxSummary: hiro.TxSummary{
		TxID: tx.TransactionIdentifier.Hash, TxType: hiro.TxTypeContractCall, TxStatus: status,
		SenderAddress: m.SenderAddress, BlockHeight: b.BlockIdentifier.Index, BlockHash: b.BlockIdentifier.Hash,
		BurnBlockTime: b.Timestamp, BlockTime: b.Timestamp,
		Canonical: m.Canonical, MicroblockCanonical: m.MicroblockCanonical,
		ContractCall: &hiro.ContractCall{ContractID: contract, FunctionName: function, FunctionArgs: tx.args()},
	}}
	if m.Position != nil {
		t.TxIndex = m.Position.Index
	}
	var sides []side
	for _, op := range tx.Operations {
		if op.Type != TypeTokenTransfer || op.Amount == nil || op.Account == nil ||
			(op.Status != "" && op.Status != StatusSuccess) {
			continue
		}
		sides = append(sides, sideOf(op))
	}
	paired := make([]bool, len(sides))
	for i, s := range sides {
		if paired[i] {
			continue
		}
		paired[i] = true
		ev := hiro.Event{EventIndex: len(t.Events), EventType: s.kind,
			Asset: &hiro.Asset{AssetEventType: "transfer", AssetID: s.asset, Amount: s.digits}}
		if s.negative {
			ev.Asset.Sender = s.account
		} else {
			ev.Asset.Recipient = s.account
		}
		for j := i + 1; j < len(sides); j++ {
			o := sides[j]
			if paired[j] || o.negative == s.negative || o.asset != s.asset || o.kind != s.kind ||
				o.digits != s.digits || o.account == s.account {
				continue
			}
			paired[j] = true
			if o.negative {
				ev.Asset.Sender = o.account
			} else {
				ev.Asset.Recipient = o.account
			}
			break
		}
		t.Events = append(t.Events, ev)
	}
	t.EventCount = len(t.Events)
	return t
}

func sideOf(op Operation) side {
	v := strings.TrimSpace(op.Amount.Value)
	s := side{account: op.Account.Address, negative: strings.HasPrefix(v, "-"),
		digits: strings.TrimPrefix(strings.TrimPrefix(v, "-"), "+")}
	c := op.Amount.Currency
	var tokenType, asset string
	if c.Metadata != nil {
		tokenType, asset = c.Metadata.TokenType, c.Metadata.AssetIdentifier
	}
	switch {
	case tokenType == "nft":
		s.kind, s.asset = eventNFT, asset
	case asset != "":
		s.kind, s.asset = eventFT, asset
	case strings.EqualFold(c.Symbol, "STX") || tokenType == "stx":
		s.kind, s.asset = eventSTX, competition.TokenSTX
	default:
		// A fungible token named by nothing: ParseSwap refuses it
		// (incomplete events) rather than guessing.
		s.kind = eventFT
	}
	return s
}

// args are the contract call's arguments as the delivery decodes them
// (decode_clarity_values): the provider attribution reads them.
func (tx Transaction) args() []hiro.FunctionArg {
	for _, op := range tx.Operations {
		if op.Type != TypeContractCall || len(op.Metadata) == 0 {
			continue
		}
		var cm struct {
			Args []json.RawMessage `json:"args"`
		}
		if json.Unmarshal(op.Metadata, &cm) != nil {
			return nil
		}
		var out []hiro.FunctionArg
		for _, raw := range cm.Args {
			var a hiro.FunctionArg
			if json.Unmarshal(raw, &a) == nil && a.Name != "" {
				out = append(out, a)
			}
		}
		return out
	}
	return nil
}
