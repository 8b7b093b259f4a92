package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Lease is a session advisory lock held on a connection of its own: held
// while the connection lives, released when it closes, whatever ends the
// process. One worker of the deployment holds it.
type Lease struct {
	conn *pgxpool.Conn
	key  int64
}

// leaseLockKey is a lease's advisory lock: key within the schema.
// Advisory locks are the database's, so a database that holds several
// pacer schemas (deployments side by side, tests) keeps their leases apart
// by the schema's name, as HoldRun does.
const leaseLockKey = `hashtextextended(current_schema() || ':lease:' || $1::bigint::text, 3)`

// TryLease takes the advisory lock key on a connection kept for it; nil
// (and no error) when another session holds it.
func (s *Store) TryLease(ctx context.Context, key int64) (*Lease, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("lease %d: %w", key, err)
	}
	var held bool
	if err := conn.QueryRow(ctx, `select pg_try_advisory_lock(`+leaseLockKey+`)`, key).Scan(&held); err != nil {
		conn.Release()
		return nil, fmt.Errorf("lease %d: %w", key, err)
	}
	if !held {
		conn.Release()
		return nil, nil
	}
	return &Lease{conn: conn, key: key}, nil
}

// Check reports whether the lease's connection still answers: when it
// does not, the lock may be another's already.
func (l *Lease) Check(ctx context.Context) error {
	if _, err := l.conn.Exec(ctx, `select 1`); err != nil {
		return fmt.Errorf("lease %d: %w", l.key, err)
	}
	return nil
}

// Release lets the lock go: unlocked first, so the next holder may take
// it as soon as Release returns (a closed session's locks go only when
// the server has noticed), then the connection is closed rather than
// returned, so no lock can outlive the lease in the pool.
func (l *Lease) Release() {
	conn := l.conn.Hijack()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _ = conn.Exec(ctx, `select pg_advisory_unlock(`+leaseLockKey+`)`, l.key) // a dead connection's lock is gone already
	_ = conn.Close(ctx)
}

// PushState is where Hiro's WebSocket stands (push_state), as its holder
// last wrote it.
type PushState struct {
	// Holder names the worker holding the subscriptions.
	Holder string `json:"holder"`
	// Live is true while every socket has had a block within the silence
	// bound; Since is when it last turned live or down.
	Live  bool      `json:"live"`
	Since time.Time `json:"since"`
	// LastBlockAt is when the last block message came.
	LastBlockAt *time.Time `json:"lastBlockAt,omitempty"`
	Messages    int64      `json:"messages"`
	Reconnects  int64      `json:"reconnects"`
	Sockets     int        `json:"sockets"`
	LiveSockets int        `json:"liveSockets"`
	LastError   string     `json:"lastError,omitempty"`
	UpdatedAt   time.Time  `json:"updatedAt"`
}

// SavePushState writes the holder's standing.
func (s *Store) SavePushState(ctx context.Context, st PushState) error {
	_, err := s.pool.Exec(ctx, `
insert into push_state (id, holder, live, since, last_block_at, messages, reconnects, sockets, live_sockets, last_error, updated_at)
values (true, $1, $2, $3, $4, $5, $6, $7, $8, nullif($9, ''), now())
on conflict (id) do update set holder = excluded.holder, live = excluded.live, since = excluded.since,
    last_block_at = excluded.last_block_at, messages = excluded.messages, reconnects = excluded.reconnects,
    sockets = excluded.sockets, live_sockets = excluded.live_sockets, last_error = excluded.last_error,
    updated_at = excluded.updated_at`,
		st.Holder, st.Live, st.Since, st.LastBlockAt, st.Messages, st.Reconnects, st.Sockets, st.LiveSockets, st.LastError)
	if err != nil {
		return fmt.Errorf("save push state: %w", err)
	}
	return nil
}

// ReadPushState is the holder's standing, with Live true only while the
// holder wrote within fresh (a holder that died says nothing more); found
// is false before any holder wrote.
func (s *Store) ReadPushState(ctx context.Context, fresh time.Duration) (st PushState, found bool, err error) {
	err = s.pool.QueryRow(ctx, `
select holder, live and updated_at > now() - $1::interval, since, last_block_at, messages, reconnects,
       sockets, live_sockets, coalesce(last_error, ''), updated_at
from push_state where id`, fresh).Scan(&st.Holder, &st.Live, &st.Since, &st.LastBlockAt, &st.Messages, &st.Reconnects,
		&st.Sockets, &st.LiveSockets, &st.LastError, &st.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return st, false, nil
	}
	if err != nil {
		return st, false, fmt.Errorf("read push state: %w", err)
	}
	return st, true, nil
}

// PushedChannel is the channel RecordPushed notifies (the txid as the
// payload) when it queued a transaction: a sweep run in flight, in any
// process, verifies it then rather than at its next run (ListenPushed).
const PushedChannel = "pacer_pushed"

// RecordPushed keeps a transaction a push named, due for the plan's
// Verify step at once: only a registered agent's, and not one the ledger
// holds already. One kept as pending before becomes due at once. It
// reports whether the transaction waits now; when it does, PushedChannel
// hears so as the row commits.
func (s *Store) RecordPushed(ctx context.Context, txid, sender string) (queued bool, err error) {
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `
insert into pending_txs (txid, sender, first_seen_at, checked_at, pushed_at)
select $1, $2, now(), '-infinity', now()
where exists (select 1 from agents where stx_address = $2 and deregistered_at is null)
  and not exists (select 1 from swaps where txid = $1)
on conflict (txid) do update set checked_at = '-infinity', pushed_at = coalesce(pending_txs.pushed_at, now())`, txid, sender)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		queued = true
		// The payload names the schema: channels are the database's, and
		// a database may hold several pacer schemas (ListenPushed).
		_, err = tx.Exec(ctx, `select pg_notify($1, current_schema() || '/' || $2)`, PushedChannel, txid)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("record pushed %s: %w", txid, err)
	}
	return queued, nil
}

// ListenPushed calls heard for each transaction RecordPushed queues, in
// any process, until ctx ends or its connection (one of its own, outside
// the pool) fails: the error says which. It calls heard("") first, once
// it listens: what was queued before it may not have been heard, so a
// waiter looks again. heard runs on the listening goroutine and must not
// block.
func (s *Store) ListenPushed(ctx context.Context, heard func(txid string)) error {
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig.Copy())
	if err != nil {
		return fmt.Errorf("listen %s: %w", PushedChannel, err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = conn.Close(cctx)
	}()
	var schema string
	if err := conn.QueryRow(ctx, `select current_schema()`).Scan(&schema); err != nil {
		return fmt.Errorf("listen %s: %w", PushedChannel, err)
	}
	if _, err := conn.Exec(ctx, "listen "+PushedChannel); err != nil {
		return fmt.Errorf("listen %s: %w", PushedChannel, err)
	}
	heard("")
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return fmt.Errorf("listen %s: %w", PushedChannel, err)
		}
		// Another schema's pushes (another deployment of the database)
		// are not this one's.
		if i := strings.LastIndexByte(n.Payload, '/'); i >= 0 && n.Payload[:i] == schema {
			heard(n.Payload[i+1:])
		}
	}
}
