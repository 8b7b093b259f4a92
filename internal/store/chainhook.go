package store

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pacer-dev/pacer/internal/competition"
)

// Reasons a UTC hour is marked in rollup_dirty by a chainhook delivery.
const (
	DirtyRollback = "rollback"
	DirtyReapply  = "reapply"
)

// NoteChainhookDelivery records one accepted delivery in chainhook_state.
func (s *Store) NoteChainhookDelivery(ctx context.Context, at time.Time) error {
	_, err := s.pool.Exec(ctx, `
insert into chainhook_state (id, last_received_at, deliveries) values (true, $1, 1)
on conflict (id) do update set
    last_received_at = greatest(chainhook_state.last_received_at, excluded.last_received_at),
    deliveries       = chainhook_state.deliveries + 1`, at)
	if err != nil {
		return fmt.Errorf("note chainhook delivery: %w", err)
	}
	return nil
}

// ChainhookState is what chainhook_state says: when the last delivery came
// and how many came; found is false before the first.
func (s *Store) ChainhookState(ctx context.Context) (lastReceivedAt time.Time, deliveries int64, found bool, err error) {
	err = s.pool.QueryRow(ctx, `select last_received_at, deliveries from chainhook_state`).Scan(&lastReceivedAt, &deliveries)
	if errors.Is(err, pgx.ErrNoRows) {
		return time.Time{}, 0, false, nil
	}
	if err != nil {
		return time.Time{}, 0, false, fmt.Errorf("chainhook state: %w", err)
	}
	return lastReceivedAt, deliveries, true, nil
}

// RegisteredAgents returns those of addrs that are registered agents.
func (s *Store) RegisteredAgents(ctx context.Context, addrs []string) ([]string, error) {
	return collect(ctx, s.pool, "registered agents", pgx.RowTo[string], `select stx_address from agents where stx_address = any($1::text[]) and deregistered_at is null`, addrs)
}

// ChainhookTx is a transaction as a delivery placed it in a block.
type ChainhookTx struct {
	TxID        string
	BlockHash   string
	BlockHeight int64
}

// NoteApplied records that txs were applied in their blocks, so that a
// stale rollback of another block leaves them alone (an apply below the
// block a transaction is applied in now is itself stale and moves
// nothing), and forgets a
// not_canonical verdict kept for any of them: the transaction is on the
// canonical chain again and must be verified anew (Hiro still decides).
// first holds the transactions no delivery had named before.
func (s *Store) NoteApplied(ctx context.Context, txs []ChainhookTx) (first map[string]bool, err error) {
	if len(txs) == 0 {
		return nil, nil
	}
	ids, hashes, heights := make([]string, len(txs)), make([]string, len(txs)), make([]int64, len(txs))
	for i, tx := range txs {
		ids[i], hashes[i], heights[i] = tx.TxID, tx.BlockHash, tx.BlockHeight
	}
	rows, err := s.pool.Query(ctx, `
with noted as (
    insert into chainhook_txs (txid, block_hash, block_height, applied)
    select txid, hash, height, true from unnest($1::text[], $2::text[], $3::bigint[]) as u(txid, hash, height)
    on conflict (txid) do update set
        block_hash = excluded.block_hash, block_height = excluded.block_height,
        applied = true, updated_at = now()
    -- An apply below the block the transaction is applied in now is a
    -- stale replay: moving the record back would let a replayed rollback
    -- of that old block remove the swap. So is an apply of a block a
    -- rollback already took the transaction out of: replayed with that
    -- rollback, it would re-arm it (Hiro decides whether the block came
    -- back).
    where (not chainhook_txs.applied or excluded.block_height >= chainhook_txs.block_height)
      and not exists (select 1 from swap_rollbacks r where r.txid = excluded.txid and r.block_hash = excluded.block_hash)
    returning txid, xmax = 0 as fresh
), forgot as (
    delete from swap_rejections where txid = any($1::text[]) and reason = 'not_canonical'
)
select txid from noted where fresh`, ids, hashes, heights)
	if err != nil {
		return nil, fmt.Errorf("note applied: %w", err)
	}
	fresh, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("note applied: %w", err)
	}
	first = make(map[string]bool, len(fresh))
	for _, id := range fresh {
		first[id] = true
	}
	return first, nil
}

// RolledBackSwap is a swap a rollback moved out of swaps.
type RolledBackSwap struct {
	TxID          string
	Sender        string
	BurnBlockTime int64
}

// RollbackBlock moves the swaps among txids out of swaps into
// swap_rollbacks with the rolled-back block, and marks the UTC hours of
// their burn_block_time dirty, in one transaction. It acts only on
// transactions applied in this block by the record (chainhook_txs), or
// with no record and never rolled back from it: one re-applied in another
// block since is left alone, and so is one this block's rollback already
// took out, whatever happened since. Replaying it changes nothing, at any
// time: a captured rollback replayed after a reader put the swap back
// neither removes it again nor restarts its hold (SPEC §11). It returns
// the swaps it moved.
func (s *Store) RollbackBlock(ctx context.Context, blockHash string, blockHeight int64, txids []string) ([]RolledBackSwap, error) {
	if len(txids) == 0 {
		return nil, nil
	}
	var moved []RolledBackSwap
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// The upsert locks each row it writes until the commit and checks
		// its condition against the latest version: a concurrent apply
		// either waits for the rollback (and verifies after it) or has
		// moved the transaction to its block, and the rollback skips it.
		rows, err := tx.Query(ctx, `
insert into chainhook_txs (txid, block_hash, block_height, applied)
select i.txid, $2, $3, false
from unnest($1::text[]) as i(txid)
where (exists (select 1 from swaps w where w.txid = i.txid)
       or exists (select 1 from chainhook_txs c where c.txid = i.txid and c.block_hash = $2))
  and not exists (select 1 from swap_rollbacks r where r.txid = i.txid and r.block_hash = $2)
on conflict (txid) do update set
    block_hash = excluded.block_hash, block_height = excluded.block_height,
    applied = false, updated_at = now()
where chainhook_txs.block_hash = excluded.block_hash and chainhook_txs.applied
returning txid`, txids, blockHash, blockHeight)
		if err != nil {
			return err
		}
		acting, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil || len(acting) == 0 {
			return err
		}
		rows, err = tx.Query(ctx, `
with moved as (
    delete from swaps where txid = any($1::text[])
    returning *
), kept as (
    insert into swap_rollbacks (txid, sender, contract_id, function_name, token_in, amount_in,
                                token_out, amount_out, burn_block_time, tx_status, source,
                                raw_event_json, inserted_at, block_hash, block_height, block_time)
    select txid, sender, contract_id, function_name, token_in, amount_in,
           token_out, amount_out, burn_block_time, tx_status, source,
           raw_event_json, inserted_at, $2, $3, block_time
    from moved
    on conflict (txid, block_hash) do update set
        sender = excluded.sender, contract_id = excluded.contract_id, function_name = excluded.function_name,
        token_in = excluded.token_in, amount_in = excluded.amount_in,
        token_out = excluded.token_out, amount_out = excluded.amount_out,
        burn_block_time = excluded.burn_block_time, block_time = excluded.block_time, tx_status = excluded.tx_status,
        source = excluded.source, raw_event_json = excluded.raw_event_json,
        inserted_at = excluded.inserted_at, block_height = excluded.block_height,
        rolled_back_at = now()
)
select txid, sender, burn_block_time from moved order by txid collate "C"`, acting, blockHash, blockHeight)
		if err != nil {
			return err
		}
		moved, err = pgx.CollectRows(rows, pgx.RowToStructByPos[RolledBackSwap])
		if err != nil {
			return err
		}
		times := make([]int64, len(moved))
		for i, m := range moved {
			times[i] = m.BurnBlockTime
		}
		return markDirty(ctx, tx, times, DirtyRollback)
	})
	if err != nil {
		return nil, fmt.Errorf("rollback block %s: %w", blockHash, err)
	}
	return moved, nil
}

// MarkReapplied marks the UTC hour of burnBlockTime dirty when txid had
// been rolled back before: its swap is back, so the hour's rollups changed
// again. marked is false when it never was rolled back.
func (s *Store) MarkReapplied(ctx context.Context, txid string, burnBlockTime int64) (marked bool, err error) {
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `select exists (select 1 from swap_rollbacks where txid = $1)`, txid).Scan(&marked); err != nil || !marked {
			return err
		}
		return markDirty(ctx, tx, []int64{burnBlockTime}, DirtyReapply)
	})
	if err != nil {
		return false, fmt.Errorf("mark reapplied %s: %w", txid, err)
	}
	return marked, nil
}

// markDirty inserts the UTC hours holding times into rollup_dirty; an
// hour already marked is marked again (its marked_at moves on), so a
// rollup that started before this change computes it once more.
func markDirty(ctx context.Context, tx pgx.Tx, times []int64, reason string) error {
	if len(times) == 0 {
		return nil
	}
	_, err := tx.Exec(ctx, `
insert into rollup_dirty (hour_start, reason)
select distinct to_timestamp(t - (t % 3600 + 3600) % 3600), $2 from unnest($1::bigint[]) as u(t)
on conflict (hour_start) do update set reason = excluded.reason, marked_at = now()`, times, reason)
	return err
}

// DirtyHours returns the hours marked in rollup_dirty, oldest first.
func (s *Store) DirtyHours(ctx context.Context) ([]time.Time, error) {
	return collect(ctx, s.pool, "dirty hours", pgx.RowTo[time.Time], `select hour_start from rollup_dirty order by hour_start`)
}

// Rollbacks returns the blocks txid was rolled back from, newest first:
// the verifier holds the transaction back until Hiro shows it elsewhere.
func (s *Store) Rollbacks(ctx context.Context, txid string) ([]competition.Rollback, error) {
	return collect(ctx, s.pool, "rollbacks of "+txid, pgx.RowToStructByPos[competition.Rollback], `
select block_hash, block_height, make_interval(secs => extract(epoch from now() - rolled_back_at)) from swap_rollbacks where txid = $1
order by block_height desc, block_hash collate "C"`, txid)
}

// Unconfirmed reports whether txid's swap was recorded from a chainhook
// delivery and no reader has confirmed it against Hiro yet.
func (s *Store) Unconfirmed(ctx context.Context, txid string) (bool, error) {
	var pushed bool
	if err := s.pool.QueryRow(ctx, `select exists (select 1 from chainhook_pushed where txid = $1)`, txid).Scan(&pushed); err != nil {
		return false, fmt.Errorf("unconfirmed %s: %w", txid, err)
	}
	return pushed, nil
}

// ConfirmSwap settles a row a chainhook delivery recorded with the swap a
// reader built from Hiro's answer: the chain's values replace the
// delivery's, and diff names the columns that differed (the raw legs are
// replaced but not compared: a delivery does not say every counterparty).
// The hours of both times are marked dirty when the time moved. confirmed
// is false when txid has no unconfirmed pushed row.
func (s *Store) ConfirmSwap(ctx context.Context, sw competition.Swap) (diff []string, confirmed bool, err error) {
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var old competition.Swap
		err := tx.QueryRow(ctx, `
select s.sender, s.contract_id, s.function_name, s.token_in, s.amount_in::text, s.token_out, s.amount_out::text,
       s.burn_block_time, coalesce(s.block_time, 0), s.tx_status
from swaps s join chainhook_pushed p on p.txid = s.txid
where s.txid = $1 for update of s`, sw.TxID).Scan(&old.Sender, &old.ContractID, &old.FunctionName,
			&old.TokenIn, &old.AmountIn, &old.TokenOut, &old.AmountOut, &old.BurnBlockTime, &old.BlockTime, &old.TxStatus)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		confirmed = true
		diff = swapDiff(old, sw)
		if _, err := tx.Exec(ctx, `
update swaps set sender = $2, contract_id = $3, function_name = $4, token_in = $5, amount_in = $6::text::numeric,
    token_out = $7, amount_out = $8::text::numeric, burn_block_time = $9, tx_status = $10,
    raw_event_json = $11::text::jsonb, block_time = nullif($12, 0)
where txid = $1`, sw.TxID, sw.Sender, sw.ContractID, sw.FunctionName, sw.TokenIn, sw.AmountIn, sw.TokenOut, sw.AmountOut,
			sw.BurnBlockTime, sw.TxStatus, rawJSON(sw.RawEventJSON), sw.BlockTime); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `delete from chainhook_pushed where txid = $1`, sw.TxID); err != nil {
			return err
		}
		if old.BurnBlockTime != sw.BurnBlockTime {
			return markDirty(ctx, tx, []int64{old.BurnBlockTime, sw.BurnBlockTime}, DirtyReapply)
		}
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("confirm swap %s: %w", sw.TxID, err)
	}
	return diff, confirmed, nil
}

// swapDiff names the columns of a and b that differ, amounts compared as
// numbers.
func swapDiff(a, b competition.Swap) []string {
	var diff []string
	for _, c := range []struct {
		name string
		same bool
	}{
		{"sender", a.Sender == b.Sender},
		{"contract_id", a.ContractID == b.ContractID},
		{"function_name", a.FunctionName == b.FunctionName},
		{"token_in", a.TokenIn == b.TokenIn},
		{"amount_in", sameNumber(a.AmountIn, b.AmountIn)},
		{"token_out", a.TokenOut == b.TokenOut},
		{"amount_out", sameNumber(a.AmountOut, b.AmountOut)},
		{"block_time", a.BlockTime == b.BlockTime || b.BlockTime == 0},
		{"tx_status", a.TxStatus == b.TxStatus},
	} {
		if !c.same {
			diff = append(diff, c.name)
		}
	}
	return diff
}

func sameNumber(a, b string) bool {
	x, okA := new(big.Int).SetString(a, 10)
	y, okB := new(big.Int).SetString(b, 10)
	return okA && okB && x.Cmp(y) == 0
}

// DropPushed removes txid's swap when a chainhook delivery recorded it and
// no reader confirmed it: the chain's answer contradicts the delivery.
// dropped is false when there was no such row.
func (s *Store) DropPushed(ctx context.Context, txid string) (dropped bool, err error) {
	tag, err := s.pool.Exec(ctx, `delete from swaps s using chainhook_pushed p where s.txid = $1 and p.txid = s.txid`, txid)
	if err != nil {
		return false, fmt.Errorf("drop pushed %s: %w", txid, err)
	}
	return tag.RowsAffected() == 1, nil
}
