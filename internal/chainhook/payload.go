// Package chainhook reads Hiro Chainhooks 2.0 deliveries and writes the
// chainhook definition operators register (SPEC §11). It does no I/O: the
// API decides what a delivery changes, this package only says what it holds.
//
// A delivery is {"event":{"apply":[blocks],"rollback":[blocks],"chain",
// "network"},"chainhook":{"name","uuid"}}; a block carries block_identifier
// {index, hash}, parent_block_identifier, timestamp (unix seconds) and
// transactions, each with transaction_identifier.hash, metadata (type,
// status, sender_address, canonical, result, position, and for a contract
// call its contract_identifier and function_name) and operations. Fields
// pacer does not read are ignored; a field it reads with the wrong JSON type
// is an error naming the field.
package chainhook

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Bounds of one delivery. Chainhooks sends a block (or a reorg's few) per
// delivery, and a busy block's passes 1 MiB (teams running it set 32 MiB);
// the body's bound (PACER_CHAINHOOK_MAX_BYTES, the API's) keeps a hostile
// or broken sender from making pacer hold more, these keep it from making
// pacer walk more than such a body holds.
const (
	// DefaultMaxBodyBytes is PACER_CHAINHOOK_MAX_BYTES's default.
	DefaultMaxBodyBytes = 32 << 20
	// MaxBlocks bounds apply + rollback blocks of a delivery.
	MaxBlocks = 500
	// MaxTransactions bounds the transactions of a delivery, all blocks
	// together: about what 32 MiB of the smallest transactions holds.
	MaxTransactions = 200_000
	// maxHashLen bounds a block hash ("0x" + hex).
	maxHashLen = 130
)

// Payload is one delivery.
type Payload struct {
	Event     Event `json:"event"`
	Chainhook Meta  `json:"chainhook"`
}

// Event holds the blocks: rolled back first, then applied, as Chainhooks
// reports a reorg.
type Event struct {
	Apply    []Block `json:"apply"`
	Rollback []Block `json:"rollback"`
	Chain    string  `json:"chain"`
	Network  string  `json:"network"`
}

// Meta names the chainhook that matched.
type Meta struct {
	Name string `json:"name"`
	UUID string `json:"uuid"`
}

// BlockIdentifier is a block's height (index) and hash.
type BlockIdentifier struct {
	Index int64  `json:"index"`
	Hash  string `json:"hash"`
}

// Block is one applied or rolled-back block.
type Block struct {
	BlockIdentifier       BlockIdentifier  `json:"block_identifier"`
	ParentBlockIdentifier *BlockIdentifier `json:"parent_block_identifier"`
	// Timestamp is the block's time, unix seconds.
	Timestamp    int64         `json:"timestamp"`
	Transactions []Transaction `json:"transactions"`
}

// Transaction is one transaction of a block.
type Transaction struct {
	TransactionIdentifier struct {
		Hash string `json:"hash"`
	} `json:"transaction_identifier"`
	Metadata   TxMetadata  `json:"metadata"`
	Operations []Operation `json:"operations"`
}

// TxMetadata is what pacer reads of a transaction's metadata.
type TxMetadata struct {
	Type                string       `json:"type"`
	Status              string       `json:"status"`
	SenderAddress       string       `json:"sender_address"`
	Canonical           *bool        `json:"canonical"`
	MicroblockCanonical *bool        `json:"microblock_canonical"`
	Result              *ClarityRepr `json:"result"`
	Position            *struct {
		Index int64 `json:"index"`
	} `json:"position"`
	// A contract call's target, when the metadata carries it.
	ContractIdentifier string `json:"contract_identifier"`
	FunctionName       string `json:"function_name"`
}

// ClarityRepr is a Clarity value as Chainhooks encodes it.
type ClarityRepr struct {
	Hex  string `json:"hex"`
	Repr string `json:"repr"`
}

// Operation is one state change of a transaction. Its metadata depends on
// its type; only a contract_call's is read (ContractCall). A
// token_transfer moves Amount into (a positive value) or out of (a
// negative one) Account: one side of a transfer per operation.
type Operation struct {
	Type     string          `json:"type"`
	Status   string          `json:"status"`
	Account  *Account        `json:"account"`
	Amount   *Amount         `json:"amount"`
	Metadata json.RawMessage `json:"metadata"`
}

// Account is the principal an operation concerns.
type Account struct {
	Address string `json:"address"`
}

// Amount is what a token_transfer moves: Value is a signed decimal integer
// in the asset's smallest unit. STX has the symbol STX and no asset
// identifier; a fungible token has token_type ft and its asset identifier
// (CONTRACT::name); a non-fungible one token_type nft.
type Amount struct {
	Value    string `json:"value"`
	Currency struct {
		Symbol   string `json:"symbol"`
		Decimals int    `json:"decimals"`
		Metadata *struct {
			TokenType       string `json:"token_type"`
			AssetIdentifier string `json:"asset_identifier"`
		} `json:"metadata"`
	} `json:"currency"`
}

// ContractCallMetadata is the metadata of a contract_call operation.
type ContractCallMetadata struct {
	ContractIdentifier string `json:"contract_identifier"`
	FunctionName       string `json:"function_name"`
}

// Transaction and operation types and statuses pacer looks at.
const (
	TypeContractCall  = "contract_call"
	TypeTokenTransfer = "token_transfer"
	StatusSuccess     = "success"
)

// ErrPayload is the class of every problem with a delivery's content.
var ErrPayload = errors.New("chainhook payload")

func payloadErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrPayload, fmt.Sprintf(format, args...))
}

// Parse reads one delivery: a JSON object with an event object; anything
// after it but white space, a field of the wrong type, a block without a
// hash, a transaction id that is not 64 hex digits or a delivery past the
// bounds is an error wrapping ErrPayload that says where. Hashes and ids
// come back as 0x + lower-case hex, the form the ledger keeps.
func Parse(r io.Reader) (Payload, error) {
	dec := json.NewDecoder(r)
	var wire struct {
		// A pointer tells a missing (or null) event from an empty one.
		Event     *Event `json:"event"`
		Chainhook Meta   `json:"chainhook"`
	}
	if err := dec.Decode(&wire); err != nil {
		return Payload{}, decodeErr(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		// A reader's own failure (a body too large) passes through; a
		// cut-off or malformed second value is the payload's fault.
		if err != nil && !isSyntax(err) && !errors.Is(err, io.ErrUnexpectedEOF) {
			return Payload{}, err
		}
		return Payload{}, payloadErr("more than one JSON value in the body")
	}
	if wire.Event == nil {
		return Payload{}, payloadErr("missing event")
	}
	p := Payload{Event: *wire.Event, Chainhook: wire.Chainhook}
	return p, p.normalize()
}

// decodeErr turns a decoding failure into a payload error naming the field,
// or passes a reader's own failure (a body too large) through unchanged.
func decodeErr(err error) error {
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &te):
		field := te.Field
		if field == "" {
			field = "the body"
		}
		return payloadErr("%s: JSON %s where %s belongs", field, te.Value, goTypeName(te.Type.String()))
	case isSyntax(err), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return payloadErr("not a JSON object: %v", err)
	}
	return err
}

func isSyntax(err error) bool {
	var se *json.SyntaxError
	return errors.As(err, &se)
}

// goTypeName says a Go type the way a JSON reader thinks of it.
func goTypeName(t string) string {
	switch {
	case strings.HasPrefix(t, "int"), strings.HasPrefix(t, "uint"), strings.HasPrefix(t, "float"):
		return "a number"
	case t == "string":
		return "a string"
	case t == "bool":
		return "true or false"
	case strings.HasPrefix(t, "[]"):
		return "an array"
	}
	return "an object"
}

// normalize checks the bounds and identifiers and rewrites them canonically.
func (p *Payload) normalize() error {
	if n := len(p.Event.Apply) + len(p.Event.Rollback); n > MaxBlocks {
		return payloadErr("%d blocks, at most %d a delivery", n, MaxBlocks)
	}
	txs := 0
	for _, side := range []struct {
		name   string
		blocks []Block
	}{{"apply", p.Event.Apply}, {"rollback", p.Event.Rollback}} {
		for i := range side.blocks {
			b := &side.blocks[i]
			where := fmt.Sprintf("event.%s[%d]", side.name, i)
			h, ok := normalizeHex(b.BlockIdentifier.Hash, 0)
			if !ok || len(h) > maxHashLen {
				return payloadErr("%s.block_identifier.hash: want 0x and hex digits", where)
			}
			b.BlockIdentifier.Hash = h
			if b.BlockIdentifier.Index < 0 {
				return payloadErr("%s.block_identifier.index: negative", where)
			}
			txs += len(b.Transactions)
			if txs > MaxTransactions {
				return payloadErr("more than %d transactions", MaxTransactions)
			}
			for j := range b.Transactions {
				tx := &b.Transactions[j]
				id, ok := normalizeHex(tx.TransactionIdentifier.Hash, 64)
				if !ok {
					return payloadErr("%s.transactions[%d].transaction_identifier.hash: want 0x and 64 hex digits", where, j)
				}
				tx.TransactionIdentifier.Hash = id
			}
		}
	}
	return nil
}

// normalizeHex returns s as 0x + lower-case hex; digits is the exact number
// of hex digits wanted, 0 for any positive number.
func normalizeHex(s string, digits int) (string, bool) {
	h := strings.ToLower(strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X"))
	if h == "" || (digits > 0 && len(h) != digits) || strings.TrimLeft(h, "0123456789abcdef") != "" {
		return "", false
	}
	return "0x" + h, true
}

// ContractCall returns the (contract, function) a transaction calls, from
// its metadata or else from its contract_call operation; ok is false when
// it is not a contract call. A contract_call operation whose metadata is
// not an object of strings is an error.
func (tx Transaction) ContractCall() (contractID, function string, ok bool, err error) {
	m := tx.Metadata
	if m.ContractIdentifier != "" && m.FunctionName != "" {
		return m.ContractIdentifier, m.FunctionName, true, nil
	}
	for i, op := range tx.Operations {
		if op.Type != TypeContractCall || len(op.Metadata) == 0 {
			continue
		}
		var cm ContractCallMetadata
		if err := json.Unmarshal(op.Metadata, &cm); err != nil {
			return "", "", false, payloadErr("transaction %s: operations[%d].metadata: %v", tx.TransactionIdentifier.Hash, i, decodeErr(err))
		}
		if cm.ContractIdentifier != "" && cm.FunctionName != "" {
			return cm.ContractIdentifier, cm.FunctionName, true, nil
		}
	}
	return "", "", false, nil
}
