package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// ActorPacer is the actor of changes pacer makes by itself (a subscriber
// disabled for a 410 or for failing too long).
const ActorPacer = "pacer"

// AuditEntry is one row of audit_log (SPEC §10.2). Before and After are
// JSON documents of the target's state (never a secret); either may be
// nil.
type AuditEntry struct {
	ID     int64           `json:"id"`
	At     time.Time       `json:"at"`
	Actor  string          `json:"actor"`
	Action string          `json:"action"`
	Target string          `json:"target,omitempty"`
	Before json.RawMessage `json:"before"`
	After  json.RawMessage `json:"after"`
}

// writeAudit inserts e in tx, the transaction of the change it records, so
// that the entry and its change commit together.
func writeAudit(ctx context.Context, tx pgx.Tx, e AuditEntry) error {
	_, err := tx.Exec(ctx, `
insert into audit_log (at, actor, action, target, before, after) values ($1, $2, $3, nullif($4, ''), $5, $6)`,
		e.At, e.Actor, e.Action, e.Target, jsonArg(e.Before), jsonArg(e.After))
	if err != nil {
		return fmt.Errorf("write audit %s: %w", e.Action, err)
	}
	return nil
}

// jsonArg passes a JSON document to a jsonb parameter, nil as SQL null.
func jsonArg(raw json.RawMessage) any {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	return string(raw)
}

// RecordAudit writes one entry on its own: an operator's request refused
// before it changed anything.
func (s *Store) RecordAudit(ctx context.Context, e AuditEntry) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error { return writeAudit(ctx, tx, e) })
}

// StartAudit writes an entry before the change it records is made (a
// change made through Temporal), and returns its id for FinishAudit.
func (s *Store) StartAudit(ctx context.Context, e AuditEntry) (int64, error) {
	var id int64
	err := s.pool.QueryRow(ctx, `
insert into audit_log (at, actor, action, target, before, after) values ($1, $2, $3, nullif($4, ''), $5, $6) returning id`,
		e.At, e.Actor, e.Action, e.Target, jsonArg(e.Before), jsonArg(e.After)).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("write audit %s: %w", e.Action, err)
	}
	return id, nil
}

// FinishAudit records the outcome of an entry's change as its after
// document.
func (s *Store) FinishAudit(ctx context.Context, id int64, after json.RawMessage) error {
	if _, err := s.pool.Exec(ctx, `update audit_log set after = $2 where id = $1`, id, jsonArg(after)); err != nil {
		return fmt.Errorf("finish audit %d: %w", id, err)
	}
	return nil
}

// AuditQuery pages the audit log, newest first, by keyset on id.
type AuditQuery struct {
	// Before is the id of the last entry of the previous page (0: from
	// the newest).
	Before int64
	// Since leaves out entries older than it (zero: none).
	Since time.Time
	// Target narrows to one target (empty: all).
	Target string
	Limit  int
}

// AuditLog reads one page of the audit log.
func (s *Store) AuditLog(ctx context.Context, q AuditQuery) ([]AuditEntry, error) {
	rows, _ := s.pool.Query(ctx, `
select id, at, actor, action, coalesce(target, ''), before::text, after::text from audit_log
where ($1::bigint = 0 or id < $1) and at >= $2 and ($3 = '' or target = $3)
order by id desc
limit $4`, q.Before, q.Since, q.Target, q.Limit)
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (AuditEntry, error) {
		var e AuditEntry
		var before, after *string
		err := row.Scan(&e.ID, &e.At, &e.Actor, &e.Action, &e.Target, &before, &after)
		if before != nil {
			e.Before = json.RawMessage(*before)
		}
		if after != nil {
			e.After = json.RawMessage(*after)
		}
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("read audit log: %w", err)
	}
	return out, nil
}
