package store_test

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/testenv"
)

// TestMigrationGivesWayToReaders: during a rolling deploy a long read holds
// a table a migration alters. The DDL's lock request must not queue every
// later query behind it: it gives up after lock_timeout, the queries pass,
// and the migration is retried until the read ends.
func TestMigrationGivesWayToReaders(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	app := "pacer-locktest-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	url := testenv.PostgresURL(t) + "&application_name=" + app
	s := openStore(t, url)
	s.SetMigrateLockTimeout(time.Second)
	files, err := filepath.Glob("migrations/*_public_surface.sql")
	require.NoError(t, err)
	require.Len(t, files, 1)
	n, err := strconv.Atoi(strings.SplitN(filepath.Base(files[0]), "_", 2)[0])
	require.NoError(t, err)
	require.NoError(t, s.MigrateTo(ctx, int32(n-1)))

	// The old version's long read: ACCESS SHARE on agent_ingest until it
	// commits.
	reader, err := s.Pool().Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = reader.Rollback(context.Background()) }()
	_, err = reader.Exec(ctx, `select count(*) from agent_ingest`)
	require.NoError(t, err)

	done := make(chan error, 1)
	go func() { done <- s.MigrateTo(ctx, int32(n)) }()
	// Wait until the migration's ALTER waits for its lock.
	for waiting := false; !waiting; {
		require.NoError(t, s.Pool().QueryRow(ctx, `
select exists (select 1 from pg_stat_activity
where application_name = $1 and wait_event_type = 'Lock' and query ilike '%alter table agent_ingest%')`, app).Scan(&waiting))
		select {
		case err := <-done:
			t.Fatalf("the migration ended while the table was held: %v", err)
		default:
		}
	}
	// A query of the serving version, arriving behind the waiting DDL. The
	// generous bound only keeps a broken build from hanging: without
	// lock_timeout it waits for the long read, which never ends here.
	qctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var n2 int
	require.NoError(t, s.Pool().QueryRow(qctx, `select count(*) from agent_ingest`).Scan(&n2),
		"a read queued behind the migration's lock request passes once it gives up")
	select {
	case err := <-done:
		t.Fatalf("the migration ended while the table was held: %v", err)
	default:
	}

	// The long read ends; a retry applies the migration.
	require.NoError(t, reader.Commit(ctx))
	require.NoError(t, <-done)
	var has bool
	require.NoError(t, s.Pool().QueryRow(ctx, `
select exists (select 1 from information_schema.columns
where table_schema = current_schema() and table_name = 'agent_ingest' and column_name = 'last_hint_at')`).Scan(&has))
	require.True(t, has)
}
