package chainhook

import (
	"github.com/pacer-dev/pacer/internal/competition"
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
// a sender. Whether the sender is a registered agent, and whether it is a
// swap at all, the verify path decides.
type Candidate struct {
	TxID         string
	Sender       string
	ContractID   string
	FunctionName string
	Block        BlockRef
}

// RolledBack is a rolled-back block and the ids of its transactions.
type RolledBack struct {
	Block BlockRef
	TxIDs []string
}

// Extract returns the candidates of the applied blocks, in delivery order
// without repeats, and every rolled-back block with its transaction ids.
// A transaction whose metadata says it failed or left the canonical chain
// is no candidate: it can never be a swap row.
func Extract(p Payload, allow competition.Allowlist) (applied []Candidate, rolledBack []RolledBack, err error) {
	for _, b := range p.Event.Rollback {
		rb := RolledBack{Block: ref(b), TxIDs: make([]string, 0, len(b.Transactions))}
		for _, tx := range b.Transactions {
			rb.TxIDs = append(rb.TxIDs, tx.TransactionIdentifier.Hash)
		}
		rolledBack = append(rolledBack, rb)
	}
	seen := make(map[string]bool)
	for _, b := range p.Event.Apply {
		for _, tx := range b.Transactions {
			m := tx.Metadata
			id := tx.TransactionIdentifier.Hash
			if seen[id] || m.SenderAddress == "" || (m.Status != "" && m.Status != StatusSuccess) ||
				isFalse(m.Canonical) || isFalse(m.MicroblockCanonical) {
				continue
			}
			contract, function, ok, err := tx.ContractCall()
			if err != nil {
				return nil, nil, err
			}
			if !ok || !allow.Allowed(contract, function) {
				continue
			}
			seen[id] = true
			applied = append(applied, Candidate{TxID: id, Sender: m.SenderAddress,
				ContractID: contract, FunctionName: function, Block: ref(b)})
		}
	}
	return applied, rolledBack, nil
}

func ref(b Block) BlockRef {
	return BlockRef{Hash: b.BlockIdentifier.Hash, Height: b.BlockIdentifier.Index, Timestamp: b.Timestamp}
}

func isFalse(b *bool) bool { return b != nil && !*b }
