package store_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"path/filepath"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/internal/testenv"
)

// newStore opens a store on a private, migrated schema.
func newStore(t *testing.T) *store.Store {
	t.Helper()
	s := openStore(t, testenv.PostgresURL(t))
	require.NoError(t, s.Migrate(t.Context()))
	return s
}

func openStore(t *testing.T, url string) *store.Store {
	t.Helper()
	s, err := store.Open(t.Context(), url)
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return s
}

func TestOpenPing(t *testing.T) {
	t.Parallel()
	s := openStore(t, testenv.PostgresURL(t))
	require.NoError(t, s.Ping(t.Context()))
	require.NotNil(t, s.Pool())
}

func TestOpenBadURL(t *testing.T) {
	t.Parallel()
	_, err := store.Open(t.Context(), "postgres://user:secret@127.0.0.1:5432/db?sslmode=bogus")
	require.Error(t, err)
	require.NotContains(t, err.Error(), "secret")
}

func TestMigrateIdempotent(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	require.NoError(t, s.Migrate(t.Context()))
	require.Equal(t, migrationCount(t), schemaVersion(t, s))
}

func TestMigrateConcurrently(t *testing.T) {
	t.Parallel()
	url := testenv.PostgresURL(t)
	// Two stores, as two workers starting at once would have.
	stores := []*store.Store{openStore(t, url), openStore(t, url)}

	errs := make([]error, len(stores))
	var wg sync.WaitGroup
	for i, s := range stores {
		wg.Go(func() { errs[i] = s.Migrate(t.Context()) })
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	require.Equal(t, migrationCount(t), schemaVersion(t, stores[0]))
}

// migrationCount is the version a fully migrated schema reaches.
func migrationCount(t *testing.T) int {
	t.Helper()
	files, err := filepath.Glob("migrations/*.sql")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	return len(files)
}

func schemaVersion(t *testing.T, s *store.Store) int {
	t.Helper()
	var v int
	require.NoError(t, s.Pool().QueryRow(t.Context(), `select version from schema_version`).Scan(&v))
	return v
}

// TestSchema pins the columns of SPEC §6, which code and tests outside pacer
// rely on. It also proves the tables landed in the test's own schema.
func TestSchema(t *testing.T) {
	t.Parallel()
	s := newStore(t)

	type column struct {
		Table, Name, Type string
		Nullable          bool
		Default           string
	}
	rows, err := s.Pool().Query(t.Context(), `
select table_name, column_name, data_type, is_nullable = 'YES', coalesce(column_default, '')
from information_schema.columns
where table_schema = current_schema() and table_name <> 'schema_version'
order by table_name, ordinal_position`)
	require.NoError(t, err)
	got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[column])
	require.NoError(t, err)

	const tz = "timestamp with time zone"
	want := []column{
		{"agents", "stx_address", "text", false, ""},
		{"agents", "btc_address", "text", true, ""},
		{"agents", "display_name", "text", true, ""},
		{"agents", "erc8004_agent_id", "bigint", true, ""},
		{"agents", "verified_at", tz, false, "now()"},
		{"agents", "last_active_at", tz, true, ""},
		{"claims", "btc_address", "text", false, ""},
		{"claims", "status", "text", false, ""},
		{"competition_state", "key", "text", false, ""},
		{"competition_state", "value", "text", false, ""},
		{"competition_state", "updated_at", tz, false, "now()"},
		{"swaps", "txid", "text", false, ""},
		{"swaps", "sender", "text", false, ""},
		{"swaps", "contract_id", "text", false, ""},
		{"swaps", "function_name", "text", false, ""},
		{"swaps", "token_in", "text", false, ""},
		{"swaps", "amount_in", "numeric", false, ""},
		{"swaps", "token_out", "text", false, ""},
		{"swaps", "amount_out", "numeric", false, ""},
		{"swaps", "burn_block_time", "bigint", false, ""},
		{"swaps", "tx_status", "text", false, ""},
		{"swaps", "source", "text", false, ""},
		{"swaps", "raw_event_json", "jsonb", true, ""},
		{"swaps", "inserted_at", tz, false, "now()"},
		{"token_prices", "token_id", "text", false, ""},
		{"token_prices", "price_usd", "numeric", true, ""},
		{"token_prices", "decimals", "integer", true, ""},
		{"token_prices", "source", "text", false, ""},
		{"token_prices", "fetched_at", tz, false, ""},
		{"token_prices", "minute_remaining", "integer", true, ""},
		{"token_prices", "month_remaining", "integer", true, ""},
		{"token_prices", "updated_at", tz, false, "now()"},
		{"upstream_budget", "upstream", "text", false, ""},
		{"upstream_budget", "window_start", tz, false, ""},
		{"upstream_budget", "used", "integer", false, ""},
	}
	require.Equal(t, want, got)
}

func TestSchemaConstraints(t *testing.T) {
	t.Parallel()
	s := newStore(t)

	const swap = `insert into swaps (txid, sender, contract_id, function_name, token_in, amount_in,
		token_out, amount_out, burn_block_time, tx_status, source) values
		('0x01', 'SP1', 'SP2.c', 'f', 'stx', $1, 'x', 1, 1, 'success', $2)`
	const price = `insert into token_prices (token_id, price_usd, source, fetched_at) values ('t', $1, $2, now())`
	tests := []struct {
		name     string
		giveSQL  string
		giveArgs []any
		wantCode string // empty: accepted
	}{
		{name: "claim status", giveSQL: `insert into claims values ('bc1', 'verified')`},
		{name: "bad claim status", giveSQL: `insert into claims values ('bc1', 'won')`, wantCode: "23514"},
		{name: "swap", giveSQL: swap, giveArgs: []any{"340282366920938463463374607431768211456", "chainhook"}},
		{name: "bad swap source", giveSQL: swap, giveArgs: []any{"1", "hiro"}, wantCode: "23514"},
		{name: "negative amount", giveSQL: swap, giveArgs: []any{"-1", "sweep"}, wantCode: "23514"},
		{name: "price", giveSQL: price, giveArgs: []any{"0.5", "tenero"}},
		{name: "null price", giveSQL: price, giveArgs: []any{nil, "peg"}},
		{name: "bad price source", giveSQL: price, giveArgs: []any{"1", "coingecko"}, wantCode: "23514"},
		{name: "zero price", giveSQL: price, giveArgs: []any{"0", "tenero"}, wantCode: "23514"},
		{name: "NaN price", giveSQL: price, giveArgs: []any{"NaN", "tenero"}, wantCode: "23514"},
		{name: "infinite price", giveSQL: price, giveArgs: []any{"Infinity", "tenero"}, wantCode: "23514"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// Roll back, so that cases sharing a key do not collide.
			tx, err := s.Pool().Begin(t.Context())
			require.NoError(t, err)
			defer tx.Rollback(context.WithoutCancel(t.Context()))

			_, err = tx.Exec(t.Context(), tt.giveSQL, tt.giveArgs...)
			if tt.wantCode == "" {
				require.NoError(t, err)
				return
			}
			var pgErr *pgconn.PgError
			require.ErrorAs(t, err, &pgErr)
			require.Equal(t, tt.wantCode, pgErr.Code)
		})
	}
}

func TestEnsureDatabase(t *testing.T) {
	t.Parallel()
	admin := testenv.PostgresURL(t)
	u, err := url.Parse(admin)
	require.NoError(t, err)
	random := make([]byte, 6)
	_, _ = rand.Read(random)
	name := "pacer_ensure_" + hex.EncodeToString(random)
	u.Path = "/" + name

	t.Cleanup(func() {
		conn, err := pgx.Connect(context.Background(), admin)
		require.NoError(t, err)
		defer conn.Close(context.Background())
		_, err = conn.Exec(context.Background(), "drop database if exists "+name+" with (force)")
		require.NoError(t, err)
	})

	// Several processes may race to create it; every one must succeed.
	errs := make([]error, 4)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() { errs[i] = store.EnsureDatabase(t.Context(), u.String()) })
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}

	// Once it exists, it is left alone.
	require.NoError(t, store.EnsureDatabase(t.Context(), u.String()))
	s := openStore(t, u.String())
	require.NoError(t, s.Ping(t.Context()))
}
