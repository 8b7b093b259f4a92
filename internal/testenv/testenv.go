// Package testenv gives tests the real services they need. It is test support
// only: production code must not import it.
//
// Tests find Postgres the way `make test` sets it up, and fail with a clear
// message when it is not there; they never skip.
package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pacer-dev/pacer/internal/store"
)

// DatabaseURLEnv names the variable that points tests at a Postgres database.
const DatabaseURLEnv = "PACER_TEST_DATABASE_URL"

// DefaultDatabaseURL is the database `make test` provides.
const DefaultDatabaseURL = "postgres://postgres@127.0.0.1:5432/pacer_test?sslmode=disable"

// setupTimeout bounds each step of the setup, so an unreachable server fails
// the test quickly instead of hanging it until the package times out.
const setupTimeout = 15 * time.Second

// ensureDatabase creates the test database once per test binary; test
// packages run as separate processes, and store.EnsureDatabase copes with
// them racing to create it.
var ensureDatabase = sync.OnceValues(func() (string, error) {
	base := os.Getenv(DatabaseURLEnv)
	if base == "" {
		base = DefaultDatabaseURL
	}
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	return base, store.EnsureDatabase(ctx, base)
})

// PostgresURL returns a connection URL to a new, empty schema of the test
// database, private to t and dropped when t ends. The URL sets search_path to
// that schema, so unqualified tables, migrations included, land in it.
func PostgresURL(t testing.TB) string {
	t.Helper()
	base, err := ensureDatabase()
	if err != nil {
		fatalUnreachable(t, base, err)
	}

	schema := schemaName(t)
	if err := execSQL(base, "create schema "+schema); err != nil {
		fatalUnreachable(t, base, err)
	}
	t.Cleanup(func() {
		if err := execSQL(base, "drop schema "+schema+" cascade"); err != nil {
			t.Errorf("testenv: drop schema %s: %v", schema, err)
		}
	})

	withSchema, err := withSearchPath(base, schema)
	if err != nil {
		t.Fatalf("testenv: %s: %v", DatabaseURLEnv, err)
	}
	return withSchema
}

// execSQL runs one statement on a short-lived connection. The test's own context
// is not used: it is already cancelled when cleanups run.
func execSQL(connString, sql string) error {
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, connString)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

// fatalUnreachable ends the test with one line that says what was tried and
// how to fix it. pgx's errors name host, user and database, never a password.
func fatalUnreachable(t testing.TB, base string, err error) {
	t.Helper()
	source := "default " + DefaultDatabaseURL
	if os.Getenv(DatabaseURLEnv) != "" {
		source = "$" + DatabaseURLEnv
	}
	msg := strings.ReplaceAll(err.Error(), "\n", " ")
	t.Fatalf("testenv: no usable Postgres (%s): %s; run the tests with `make test`, which starts Postgres, or set %s to a reachable database",
		source, msg, DatabaseURLEnv)
}

// schemaName makes a schema name that is unique and still tells, in a
// leftover schema or a server log, which test made it.
func schemaName(t testing.TB) string {
	var b strings.Builder
	b.WriteString("test_")
	for _, r := range strings.ToLower(t.Name()) {
		if b.Len() >= 40 {
			break
		}
		if ('a' <= r && r <= 'z') || ('0' <= r && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	random := make([]byte, 6)
	_, _ = rand.Read(random) // crypto/rand.Read never fails
	b.WriteByte('_')
	b.WriteString(hex.EncodeToString(random))
	return b.String() // at most 53 bytes, under Postgres's 63
}

// withSearchPath adds search_path to a connection string. pgx sends query
// parameters it does not know (and keywords of the key=value form) to the
// server as run-time parameters.
func withSearchPath(connString, schema string) (string, error) {
	if !strings.HasPrefix(connString, "postgres://") && !strings.HasPrefix(connString, "postgresql://") {
		return connString + " search_path=" + schema, nil
	}
	u, err := url.Parse(connString)
	if err != nil {
		// The URL connected moments ago, so this is unexpected; keep the
		// password out of the message all the same.
		return "", fmt.Errorf("cannot add search_path to the database URL")
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), nil
}
