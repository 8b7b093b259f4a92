// Package store is pacer's Postgres adapter: a pgx pool, the embedded schema
// migrations and the queries the tasks and the HTTP API run.
//
// Errors are wrapped with short context but carry no class: pacer.ClassOf
// treats them as transport errors, the kind a retry may cure.
package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Store holds the connection pool. It is safe for concurrent use.
type Store struct {
	pool *pgxpool.Pool
	// ownStatementTimeout says the pool's statement_timeout is pacer's
	// default, not the URL's: migrations run without it.
	ownStatementTimeout bool
	// lockTimeout overrides MigrateLockTimeout (tests).
	lockTimeout time.Duration
	// retentionMaxFor overrides retention row bounds by table (tests).
	retentionMaxFor map[string]int
}

// DefaultMaxConns is the pool size unless the URL sets pool_max_conns.
const DefaultMaxConns = 16

// DefaultStatementTimeout ends any statement that runs longer, server-side,
// even when the client that sent it is gone or cannot cancel it (a network
// partition): a runaway query must not hold a connection of the pool the
// API and the activities share. A request's own deadline ends its queries
// sooner. A URL's statement_timeout parameter wins.
const DefaultStatementTimeout = 30 * time.Second

// Open builds a pool for url without connecting: the API must be able to start
// and report itself unready while Postgres is down. Call Ping to check.
func Open(ctx context.Context, url string) (*Store, error) {
	return open(ctx, url, nil)
}

func open(ctx context.Context, url string, tune func(*pgxpool.Config)) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// pgx redacts the password in its parse errors.
		return nil, fmt.Errorf("open store: %w", err)
	}
	// Recycle connections now and then so a failover or a changed DNS name is
	// picked up, and spread the recycling so the pool never reconnects at once.
	cfg.MaxConnLifetime = 30 * time.Minute
	cfg.MaxConnLifetimeJitter = 5 * time.Minute
	cfg.MaxConnIdleTime = 5 * time.Minute
	cfg.HealthCheckPeriod = 30 * time.Second
	if cfg.ConnConfig.ConnectTimeout == 0 {
		// Without a timeout a blackholed server hangs a request until its
		// context ends; a URL's connect_timeout still wins.
		cfg.ConnConfig.ConnectTimeout = 5 * time.Second
	}
	if !strings.Contains(url, "pool_max_conns") {
		// pgxpool's default (4 on a small host) would queue the deliver
		// task's concurrent attempts, each recorded at once, behind each
		// other; a URL's pool_max_conns still wins.
		cfg.MaxConns = max(cfg.MaxConns, DefaultMaxConns)
	}
	if _, ok := cfg.ConnConfig.RuntimeParams["application_name"]; !ok {
		// Lets an operator find pacer's sessions in pg_stat_activity.
		cfg.ConnConfig.RuntimeParams["application_name"] = "pacer"
	}
	_, urlTimeout := cfg.ConnConfig.RuntimeParams[statementTimeout]
	if !urlTimeout {
		cfg.ConnConfig.RuntimeParams[statementTimeout] = strconv.FormatInt(DefaultStatementTimeout.Milliseconds(), 10)
	}
	if tune != nil {
		tune(cfg)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	return &Store{pool: pool, ownStatementTimeout: !urlTimeout}, nil
}

const statementTimeout = "statement_timeout"

// Close waits for connections in use to be released, then closes the pool.
func (s *Store) Close() { s.pool.Close() }

// Ping checks that Postgres answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.pool.Ping(ctx); err != nil {
		return fmt.Errorf("ping postgres: %w", err)
	}
	return nil
}

// Pool exposes the pool for queries this package does not (yet) offer.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// maintenanceDB is the database that exists on every Postgres server, which we
// connect to in order to create another one.
const maintenanceDB = "postgres"

// EnsureDatabase creates the database named in url if it does not exist, so
// that `pacer dev` and the tests work against a fresh server. It is safe to
// call from several processes at once.
func EnsureDatabase(ctx context.Context, url string) error {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return fmt.Errorf("ensure database: %w", err)
	}
	// Trying the database itself first needs no rights on the maintenance
	// database and is the common case.
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err == nil {
		return conn.Close(ctx)
	}
	if !isPgCode(err, "3D000") { // invalid_catalog_name: no such database
		return fmt.Errorf("ensure database %s: %w", cfg.Database, err)
	}

	maint := cfg.Copy()
	maint.Database = maintenanceDB
	// The URL's runtime parameters (a test's search_path, say) mean nothing
	// in the maintenance database.
	maint.RuntimeParams = map[string]string{}
	conn, err = pgx.ConnectConfig(ctx, maint)
	if err != nil {
		return fmt.Errorf("ensure database %s: %w", cfg.Database, err)
	}
	defer conn.Close(ctx)

	_, err = conn.Exec(ctx, "create database "+pgx.Identifier{cfg.Database}.Sanitize())
	// Another process may have created it since we looked. Postgres reports
	// that race as duplicate_database, or as a unique violation on
	// pg_database when both inserts collide.
	if err != nil && !isPgCode(err, "42P04") && !isPgCode(err, "23505") {
		return fmt.Errorf("create database %s: %w", cfg.Database, err)
	}
	return nil
}

func isPgCode(err error, code string) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == code
}

// collect runs a query and returns its rows scanned by scan, an error
// prefixed with what. (pgx reports a failed Query through the rows, so
// CollectRows sees it.)
func collect[T any](ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, what string, scan pgx.RowToFunc[T], sql string, args ...any) ([]T, error) {
	rows, _ := q.Query(ctx, sql, args...)
	out, err := pgx.CollectRows(rows, scan)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}
