package sim

import (
	"cmp"
	"slices"
	"strings"
	"time"
)

// Reorgs makes the world roll blocks back, as a Stacks fork does: each
// chosen block's transactions leave the canonical chain at its rollback
// (back in the mempool: pending on /tx/ and the v1 list, absent from the
// v3 list) and are mined again in a new block at the re-apply. They keep
// their burn block time (the new block belongs to the same Bitcoin
// block), so the swap rows they make are the same once re-applied: a
// ledger that follows the reorg ends where it started.
type Reorgs struct {
	// Count is how many blocks are rolled back, chosen evenly among the
	// blocks of the fixed world mined in the hour after the present that
	// carry a swap the ledger must hold (a `pacer dev` run sees them
	// soon). 0: none.
	Count int
	// RollbackAfter is how long after its block one is rolled back.
	// Default 5 s.
	RollbackAfter time.Duration
	// ReapplyAfter is how long after the rollback its transactions are
	// mined again. Default 10 s.
	ReapplyAfter time.Duration
}

const (
	defaultRollbackAfter = 5 * time.Second
	defaultReapplyAfter  = 10 * time.Second
	// reorgIndexBase numbers re-applied transactions in their new block,
	// above every index the fixed world and the Activity streams use.
	reorgIndexBase = 1 << 32
	// reorgHorizon is how far after the present rolled-back blocks are
	// chosen.
	reorgHorizon = time.Hour
)

// Reorg is a rolled-back block as the world made it; every transaction of
// the block points at it.
type Reorg struct {
	// Height and Hash name the rolled-back block.
	Height int64  `json:"height"`
	Hash   string `json:"hash"`
	// RollbackAt is when it leaves the chain, ReapplyAt when its
	// transactions are mined again, in block NewHeight (NewHash).
	RollbackAt time.Time `json:"rollbackAt"`
	ReapplyAt  time.Time `json:"reapplyAt"`
	NewHeight  int64     `json:"newHeight"`
	NewHash    string    `json:"newHash"`
	// TxIDs are the block's transactions, in txid order.
	TxIDs []string `json:"txids"`
	txs   []*worldTx
}

// rolledBack reports whether the block is off the chain at at.
func (r *Reorg) rolledBack(at time.Time) bool {
	return r != nil && !at.Before(r.RollbackAt) && at.Before(r.ReapplyAt)
}

// reapplied reports whether the transactions are in their new block at at.
func (r *Reorg) reapplied(at time.Time) bool {
	return r != nil && !at.Before(r.ReapplyAt)
}

// competingHash is the hash of the block that replaced a rolled-back one
// at its height.
func competingHash(height int64) string { return blockHash(height ^ 0x5eed<<40) }

// makeReorgs picks cfg.Count blocks and rolls them back. It draws no
// random number, so a world with reorgs is the same world without them
// until the first rollback.
func (w *World) makeReorgs(cfg Reorgs, txs []*worldTx, present time.Time) {
	if cfg.Count <= 0 {
		return
	}
	rollbackAfter := cmp.Or(cfg.RollbackAfter, defaultRollbackAfter)
	reapplyAfter := cmp.Or(cfg.ReapplyAfter, defaultReapplyAfter)
	blocks := map[int64][]*worldTx{}
	spoilt := map[int64]bool{}
	for _, tx := range txs {
		if inMempool(tx.status) {
			continue // never mined
		}
		h := heightAt(tx.minedAt())
		blocks[h] = append(blocks[h], tx)
		if tx.fork || !tx.minedAt().After(present) || tx.minedAt().After(present.Add(reorgHorizon)) {
			spoilt[h] = true
		}
	}
	far := present.Add(100 * 365 * 24 * time.Hour)
	var heights []int64
	for h, b := range blocks {
		if !spoilt[h] && slices.ContainsFunc(b, func(tx *worldTx) bool { return w.makesRow(tx, far) }) {
			heights = append(heights, h)
		}
	}
	slices.Sort(heights)
	n := min(cfg.Count, len(heights))
	for k := range n {
		h := heights[(2*k+1)*len(heights)/(2*n)]
		block := blocks[h]
		slices.SortFunc(block, func(a, b *worldTx) int { return strings.Compare(a.TxID, b.TxID) })
		r := &Reorg{Height: h, Hash: blockHash(h), RollbackAt: block[0].minedAt().Add(rollbackAfter), txs: block}
		r.ReapplyAt = BlockOf(r.RollbackAt.Add(reapplyAfter))
		r.NewHeight = heightAt(r.ReapplyAt)
		r.NewHash = blockHash(r.NewHeight)
		for _, tx := range block {
			tx.reorg = r
			r.TxIDs = append(r.TxIDs, tx.TxID)
		}
		w.reorgs = append(w.reorgs, r)
	}
}

// Reorgs returns the world's rolled-back blocks, oldest first.
func (w *World) Reorgs() []Reorg {
	out := make([]Reorg, len(w.reorgs))
	for i, r := range w.reorgs {
		out[i] = *r
		out[i].TxIDs, out[i].txs = slices.Clone(r.TxIDs), nil
	}
	return out
}
