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
	// A dedicated connection rather than one from the pool: closing it is what
	// guarantees the advisory lock is released, however the migration ends, and
	// the pool's connections are not tied up meanwhile.
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig)
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
	if err := m.Migrate(ctx); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}
