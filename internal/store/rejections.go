package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pacer-dev/pacer/internal/competition"
)

// KnownRejection returns the final rejection kept for txid and marks it seen
// again (one round trip: the lookup is the write); found is false when
// there is none (SPEC §5.5).
func (s *Store) KnownRejection(ctx context.Context, txid string) (competition.Rejection, bool, error) {
	var (
		r              competition.Rejection
		sender, detail *string
		age            float64
	)
	err := s.pool.QueryRow(ctx, `
update swap_rejections set last_seen_at = now()
where txid = $1
returning txid, sender, reason, detail, extract(epoch from now() - first_seen_at)`, txid).Scan(&r.TxID, &sender, &r.Reason, &detail, &age)
	if errors.Is(err, pgx.ErrNoRows) {
		return competition.Rejection{}, false, nil
	}
	if err != nil {
		return competition.Rejection{}, false, fmt.Errorf("known rejection %s: %w", txid, err)
	}
	r.Sender, r.Detail, r.Age = deref(sender), deref(detail), time.Duration(age*float64(time.Second))
	return r, true, nil
}

// RecordRejection keeps a final rejection, or marks a kept one seen again
// (its first reason stands), and forgets the transaction as pending, in one
// statement. A reason that is not final is refused before anything is
// written: only verdicts about the transaction itself belong here.
func (s *Store) RecordRejection(ctx context.Context, r competition.Rejection) error {
	if !r.Reason.Final() {
		return fmt.Errorf("record rejection %s: %q is not a final reason", r.TxID, r.Reason)
	}
	_, err := s.pool.Exec(ctx, `
with kept as (
    insert into swap_rejections as r (txid, sender, reason, detail, first_seen_at, last_seen_at)
    values ($1, nullif($2, ''), $3, nullif($4, ''), now(), now())
    on conflict (txid) do update set last_seen_at = excluded.last_seen_at,
        -- A verdict that is looked at again is replaced by the new one,
        -- and stands from now; any other first verdict stands.
        reason = case when r.reason in ('not_canonical', 'incomplete_events') then excluded.reason else r.reason end,
        detail = case when r.reason in ('not_canonical', 'incomplete_events') then excluded.detail else r.detail end,
        first_seen_at = case when r.reason in ('not_canonical', 'incomplete_events') then excluded.first_seen_at else r.first_seen_at end
    returning r.txid
)
delete from pending_txs where txid = (select txid from kept)`,
		r.TxID, r.Sender, string(r.Reason), r.Detail)
	if err != nil {
		return fmt.Errorf("record rejection %s: %w", r.TxID, err)
	}
	return nil
}

// RecordPending keeps a transaction still in the mempool, so the next visit
// of its sender looks at it again. Keeping it again changes nothing, and
// so does keeping one whose sender is not a registered agent: anyone can
// name any mempool transaction to the fast path, and only agents' are
// worth a row (SPEC §5.6).
func (s *Store) RecordPending(ctx context.Context, txid, sender string) error {
	_, err := s.pool.Exec(ctx, `
insert into pending_txs (txid, sender, first_seen_at)
select $1, $2, now() where exists (select 1 from agents where stx_address = $2)
on conflict (txid) do nothing`, txid, sender)
	if err != nil {
		return fmt.Errorf("record pending %s: %w", txid, err)
	}
	return nil
}

// PendingTxs returns the transactions of sender kept as pending, oldest
// first, at most limit of them.
func (s *Store) PendingTxs(ctx context.Context, sender string, limit int) ([]string, error) {
	if limit < 1 {
		return nil, fmt.Errorf("pending txs: limit %d is not positive", limit)
	}
	return collect(ctx, s.pool, "pending txs of "+sender, pgx.RowTo[string], `
select txid from pending_txs where sender = $1
order by first_seen_at, txid collate "C"
limit $2`, sender, limit)
}

// PendingTx is a transaction kept as pending, and its sender; Pushed is
// true when Hiro's WebSocket named it (store.RecordPushed).
type PendingTx struct {
	TxID, Sender string
	Pushed       bool
}

// DuePending returns the pending transactions of registered agents last
// looked at (or first seen) at least every ago, on the database's clock
// (first_seen_at's), longest waiting first, at most limit of them: what
// the sweep plan's Verify step looks at again.
func (s *Store) DuePending(ctx context.Context, every time.Duration, limit int) ([]PendingTx, error) {
	if limit < 1 {
		return nil, fmt.Errorf("due pending txs: limit %d is not positive", limit)
	}
	return collect(ctx, s.pool, "due pending txs", pgx.RowToStructByPos[PendingTx], `
select p.txid, p.sender, p.pushed_at is not null from pending_txs p
join agents a on a.stx_address = p.sender and a.deregistered_at is null
where coalesce(p.checked_at, p.first_seen_at) <= now() - $1::interval
order by coalesce(p.checked_at, p.first_seen_at), p.txid collate "C"
limit $2`, every, limit)
}

// CheckedPending records that the pending transactions txids were looked
// at now: they are due again a reconcile interval later, but for those
// the ledger holds as a swap or a (final) rejection, which leave the
// table (the verifier knew them without a fetch).
func (s *Store) CheckedPending(ctx context.Context, txids []string) error {
	_, err := s.pool.Exec(ctx, `with judged as (
  delete from pending_txs p where p.txid = any($1)
  and (exists (select 1 from swaps s where s.txid = p.txid)
       or exists (select 1 from swap_rejections r where r.txid = p.txid))
  returning p.txid)
update pending_txs set checked_at = now() where txid = any($1) and txid not in (select txid from judged)`, txids)
	if err != nil {
		return fmt.Errorf("checked pending txs: %w", err)
	}
	return nil
}

// PendingDueOf makes the pending transactions of sender due for a look
// at once: a visit of the agent found what its list shows, and the rest
// (the mempool's, or gone) is the plan's Verify step's.
func (s *Store) PendingDueOf(ctx context.Context, sender string) error {
	if _, err := s.pool.Exec(ctx, `update pending_txs set checked_at = '-infinity' where sender = $1`, sender); err != nil {
		return fmt.Errorf("pending txs of %s due: %w", sender, err)
	}
	return nil
}

// ForgetPending drops a pending transaction that will not be looked at again
// through the verifier (one the listing shows dropped, say).
func (s *Store) ForgetPending(ctx context.Context, txid string) error {
	if _, err := s.pool.Exec(ctx, `delete from pending_txs where txid = $1`, txid); err != nil {
		return fmt.Errorf("forget pending %s: %w", txid, err)
	}
	return nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
