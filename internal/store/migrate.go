package store

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
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

// migrateTo migrates to version, or to the newest when version is
// negative. Tests use it to put data in an older schema and watch a
// migration carry it forward.
func (s *Store) migrateTo(ctx context.Context, version int32) error {
	// A dedicated connection rather than one from the pool: closing it is what
	// guarantees the advisory lock is released, however the migration ends, and
	// the pool's connections are not tied up meanwhile.
	cfg := s.pool.Config().ConnConfig // a copy
	if s.ownStatementTimeout {
		// A migration may rewrite a large table: pacer's guard against
		// runaway queries is not meant for it (an operator's URL setting is).
		delete(cfg.RuntimeParams, statementTimeout)
	}
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
