package store

import (
	"context"
	"fmt"
	"time"
)

type retentionRule struct {
	table string
	// at is the column that dates a row.
	at string
	// keep is how long a row is kept; max how many rows at most (the
	// newest by at).
	keep time.Duration
	max  int
}

// Retention of the tables public input writes (SPEC §5.6, §11): the fast
// path and chainhook deliveries can add rows to them at will, so each is
// bounded by age and by count. Run by the rollup task's tail, hourly.
var retentionRules = []retentionRule{
	// A transaction pending a week has left the mempool one way or the
	// other; the sender's listing finds it if it was mined.
	{"pending_txs", "first_seen_at", 7 * 24 * time.Hour, 100_000},
	// A verdict not asked about for a month is cheaper to re-derive
	// (one Hiro call) than to keep for everyone's made-up txids.
	{"swap_rejections", "last_seen_at", 30 * 24 * time.Hour, 200_000},
	// Replay and reorg bookkeeping: no Stacks reorg reaches back a week.
	{"chainhook_txs", "updated_at", 7 * 24 * time.Hour, 200_000},
	// What rollbacks removed, kept for the operators and re-applies.
	{"swap_rollbacks", "rolled_back_at", 30 * 24 * time.Hour, 100_000},
}

// pruneBatch bounds one delete: short transactions, short locks.
const pruneBatch = 5000

// maxPruneBatches bounds one run's deletes per table; what is left goes
// at the next run.
const maxPruneBatches = 40

// PrunePublicInput deletes, from each table public input writes, the rows
// older than its retention and those past its row bound (oldest first),
// in batches. It returns the rows deleted per table.
func (s *Store) PrunePublicInput(ctx context.Context, now time.Time) (map[string]int64, error) {
	out := map[string]int64{}
	for _, r := range retentionRules {
		for _, q := range []struct {
			sql  string
			args []any
		}{
			// Old rows.
			{`delete from ` + r.table + ` where ctid in (
    select ctid from ` + r.table + ` where ` + r.at + ` < $1 limit $2)`, []any{now.Add(-r.keep), pruneBatch}},
			// Rows past the bound, oldest first.
			{`delete from ` + r.table + ` where ctid in (
    select ctid from ` + r.table + ` order by ` + r.at + ` desc offset $1 limit $2)`, []any{s.retentionMax(r), pruneBatch}},
		} {
			for range maxPruneBatches {
				tag, err := s.pool.Exec(ctx, q.sql, q.args...)
				if err != nil {
					return out, fmt.Errorf("prune %s: %w", r.table, err)
				}
				out[r.table] += tag.RowsAffected()
				if tag.RowsAffected() < pruneBatch {
					break
				}
			}
		}
	}
	// A rotated secret is forgotten once its overlap ends: it signs
	// nothing after that, and a secret not stored cannot leak.
	tag, err := s.pool.Exec(ctx, `
update subscribers set previous_secret = null, previous_secret_until = null
where previous_secret is not null and (previous_secret_until is null or previous_secret_until <= $1)`, now)
	if err != nil {
		return out, fmt.Errorf("forget expired secrets: %w", err)
	}
	out[ExpiredSecrets] = tag.RowsAffected()
	return out, nil
}

// ExpiredSecrets is PrunePublicInput's count of rotated secrets forgotten
// once their overlap ended.
const ExpiredSecrets = "subscribers.previous_secret"

func (s *Store) retentionMax(r retentionRule) int {
	if m, ok := s.retentionMaxFor[r.table]; ok {
		return m
	}
	return r.max
}
