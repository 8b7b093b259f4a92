package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// HoldBound is how long a pending transaction can hold completeThrough
// back (SPEC §7, issue 38): longer than Hiro takes to index a mined
// transaction's details or to follow a reorg, short enough that a round
// waiting on completeThrough (SPEC §13) is not held by one transaction
// for long. A hold that lapses is logged and counted (LapseHolds).
const HoldBound = 30 * time.Minute

// HoldPending makes a pending transaction hold completeThrough before
// blockTime (unix seconds): a reader saw it in that block and moved past
// it without settling it. Only a transaction of a registered genesis agent
// (an ERC-8004 id and a verified or rewarded claim) holds; the caller has
// checked its pair against the allowlist. A hold begins once: seeing the
// transaction again keeps the earliest block time and the first start.
func (s *Store) HoldPending(ctx context.Context, txid string, blockTime int64) error {
	_, err := s.pool.Exec(ctx, `
update pending_txs p set held_block_time = least(coalesce(p.held_block_time, $2), $2),
    held_at = coalesce(p.held_at, now())
where p.txid = $1 and exists (
    select 1 from agents a join claims c on c.btc_address = a.btc_address
    where a.stx_address = p.sender and a.deregistered_at is null and a.erc8004_agent_id is not null
      and c.status in ('verified', 'rewarded'))`, txid, blockTime)
	if err != nil {
		return fmt.Errorf("hold pending %s: %w", txid, err)
	}
	return nil
}

// LapsedHold is a pending transaction whose hold on completeThrough
// lapsed.
type LapsedHold struct {
	TxID, Sender string
	BlockTime    int64
	HeldAt       time.Time
}

// LapseHolds ends the holds older than bound (completeThrough already
// ignores them) and returns each once, to be logged and counted.
func (s *Store) LapseHolds(ctx context.Context, bound time.Duration) ([]LapsedHold, error) {
	return collect(ctx, s.pool, "lapse holds", pgx.RowToStructByPos[LapsedHold], `
update pending_txs set hold_lapsed_at = now()
where held_block_time is not null and hold_lapsed_at is null and held_at <= now() - $1::interval
returning txid, sender, held_block_time, held_at`, bound)
}
