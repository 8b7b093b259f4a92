package chainhook

import (
	"github.com/pacer-dev/pacer/internal/competition"
	"github.com/pacer-dev/pacer/internal/hiro"
)

// BlockRef names a block as a delivery gave it.
type BlockRef struct {
	Hash   string
	Height int64
	// Timestamp is the block's time, unix seconds (0 when not given).
	Timestamp int64
}

// Candidate is an applied transaction that may be a competition swap: a
// successful contract call to an allowlisted (contract, function) pair with
// a sender and token transfers. Whether the sender is a registered agent,
// and whether it is a swap at all, the verify path decides, from Tx: the
// transaction as the delivery describes it, in the shape Hiro's detail
// has, so the gates and the netting of SPEC §5.5 are the readers' own.
type Candidate struct {
	TxID         string
	Sender       string
	ContractID   string
	FunctionName string
	Block        BlockRef
	Tx           hiro.Tx
}

// RolledBack is a rolled-back block and the ids of its transactions.
type RolledBack struct {
	Block BlockRef
	TxIDs []string
}

// Why an allowlisted call of a delivery is no candidate.
const (
	SkipFailed       = "failed"
	SkipNotCanonical = "not_canonical"
	SkipNoTransfers  = "no_transfers"
)

// Skip is an applied allowlisted call that is no candidate, and why: a
// delivery that names one says something pacer cannot record from it,
// which is logged, never passed over in silence (SPEC §11).
type Skip struct {
	TxID   string
	Sender string
	Reason string
	// Status is the transaction's status as the delivery gave it.
	Status string
}

// Extracted is what a delivery holds for pacer.
type Extracted struct {
	// Applied are the candidates of the applied blocks, in delivery order
	// without repeats.
	Applied []Candidate
	// RolledBack is every rolled-back block with its transaction ids.
	RolledBack []RolledBack
	// Skipped are the applied allowlisted calls that are no candidate.
	Skipped []Skip
	// Transactions counts the applied blocks' transactions; Other those
	// that are no allowlisted call with a sender (a hook pacer did not
	// define, or a payload shape it does not know).
	Transactions, Other int
}

// Extract reads the candidates, the rollbacks and the skipped calls out of
// a delivery. A transaction whose metadata says it failed or left the
// canonical chain is no candidate: it can never be a swap row; one without
// a token transfer cannot be recorded from the delivery (the sweep reads
// it from Hiro).
func Extract(p Payload, allow competition.Allowlist) (Extracted, error) {
	var out Extracted
	for _, b := range p.Event.Rollback {
		rb := RolledBack{Block: ref(b), TxIDs: make([]string, 0, len(b.Transactions))}
		for _, tx := range b.Transactions {
			rb.TxIDs = append(rb.TxIDs, tx.TransactionIdentifier.Hash)
		}
		out.RolledBack = append(out.RolledBack, rb)
	}
	seen := make(map[string]bool)
	for _, b := range p.Event.Apply {
		for _, tx := range b.Transactions {
			out.Transactions++
			m := tx.Metadata
			id := tx.TransactionIdentifier.Hash
			if seen[id] {
				continue
			}
			contract, function, ok, err := tx.ContractCall()
			if err != nil {
				return Extracted{}, err
			}
			if !ok || m.SenderAddress == "" || !allow.Allowed(contract, function) {
				out.Other++
				continue
			}
			seen[id] = true
			skip := Skip{TxID: id, Sender: m.SenderAddress, Status: m.Status}
			switch {
			case m.Status != "" && m.Status != StatusSuccess:
				skip.Reason = SkipFailed
			case isFalse(m.Canonical) || isFalse(m.MicroblockCanonical):
				skip.Reason = SkipNotCanonical
			case !tx.transfers():
				skip.Reason = SkipNoTransfers
			}
			if skip.Reason != "" {
				out.Skipped = append(out.Skipped, skip)
				continue
			}
			out.Applied = append(out.Applied, Candidate{TxID: id, Sender: m.SenderAddress,
				ContractID: contract, FunctionName: function, Block: ref(b), Tx: tx.hiroTx(b, contract, function)})
		}
	}
	return out, nil
}

func ref(b Block) BlockRef {
	return BlockRef{Hash: b.BlockIdentifier.Hash, Height: b.BlockIdentifier.Index, Timestamp: b.Timestamp}
}

func isFalse(b *bool) bool { return b != nil && !*b }
