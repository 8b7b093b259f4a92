package store

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/tern/v2/migrate"
)

//go:embed migrations/*.sql
var migrations embed.FS

// versionTable is left unqualified so that it lives in the first schema of
// search_path, beside the tables it versions: a test's private schema then
// carries its own migration state.
const versionTable = "schema_version"

// Migrate applies the pending embedded migrations.
//
// Several workers may start at once. tern serialises them itself: it holds a
// session-level pg_advisory_lock (one fixed key per database) while it creates
// the version table and again while it migrates, and a migrator that waited
// finds the work done. Each migration runs in its own transaction.
func (s *Store) Migrate(ctx context.Context) error {
	return s.migrateTo(ctx, -1)
}

// MigrateLockTimeout is how long one migration statement waits for a lock
// (lock_timeout) before it gives up and the migration is retried. During a
// rolling deploy the old version still serves: a DDL waiting for its
// ACCESS EXCLUSIVE lock behind a long read would otherwise queue every
// query on the table behind it. Giving up releases the queue; retrying
// later finds a gap.
const MigrateLockTimeout = 3 * time.Second

// migrateLockRetryFor bounds the retries: a table that stays locked this
// long is an operator's problem, reported as the last lock timeout.
const migrateLockRetryFor = 5 * time.Minute

// migrateTo migrates to version, or to the newest when version is
// negative, retrying while a statement times out waiting for a lock (each
// migration is its own transaction, so a retry starts from the last one
// applied). Tests use it to put data in an older schema and watch a
// migration carry it forward.
func (s *Store) migrateTo(ctx context.Context, version int32) error {
	if version < 0 && s.upToDate(ctx) {
		return nil
	}
	deadline := time.Now().Add(migrateLockRetryFor)
	backoff := 250 * time.Millisecond
	for {
		err := s.migrateOnce(ctx, version)
		if !isPgCode(err, lockNotAvailable) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("migrate: %w (after: %w)", ctx.Err(), err)
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// lockNotAvailable is SQLSTATE 55P03, what lock_timeout raises.
const lockNotAvailable = "55P03"

func (s *Store) migrateOnce(ctx context.Context, version int32) error {
	// A dedicated connection rather than one from the pool: closing it is what
	// guarantees the advisory lock is released, however the migration ends, and
	// the pool's connections are not tied up meanwhile.
	cfg := s.pool.Config().ConnConfig // a copy
	if s.ownStatementTimeout {
		// A migration may rewrite a large table: pacer's guard against
		// runaway queries is not meant for it (an operator's URL setting is).
		delete(cfg.RuntimeParams, statementTimeout)
	}
	// Also bounds the wait for tern's advisory lock: a worker that finds
	// another migrating retries rather than blocks.
	cfg.RuntimeParams["lock_timeout"] = strconv.FormatInt(s.migrateLockTimeout().Milliseconds(), 10)
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer func() {
		// The caller's context may be done by now; closing must still say goodbye.
		closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = conn.Close(closeCtx) // the server drops the session, and its lock, either way
	}()

	m, err := migrate.NewMigrator(ctx, conn, versionTable)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	files, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if err := m.LoadMigrations(files); err != nil {
		return fmt.Errorf("migrate: load: %w", err)
	}
	if version < 0 {
		err = m.Migrate(ctx)
	} else {
		err = m.MigrateTo(ctx, version)
	}
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

// upToDate says whether the schema has every embedded migration already,
// read without tern's lock: a worker that restarts (or a second one
// started beside it) then neither waits for that lock nor holds it.
// tern's lock is one key per database, so every schema of a database
// (each test's, or deployments that share one) queues on it; a waiter
// whose lock_timeout ends goes to the back of the queue. Anything short
// of a clear "up to date" (no version table yet, an older version, an
// error) takes the locked path, which decides.
func (s *Store) upToDate(ctx context.Context) bool {
	files, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return false
	}
	var current int32
	err = s.pool.QueryRow(ctx, `select version from `+versionTable).Scan(&current)
	return err == nil && int(current) == len(files)
}

func (s *Store) migrateLockTimeout() time.Duration {
	if s.lockTimeout > 0 {
		return s.lockTimeout
	}
	return MigrateLockTimeout
}
