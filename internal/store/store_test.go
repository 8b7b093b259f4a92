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

// Every pooled connection carries a statement_timeout, so a runaway query
// ends server-side whatever its client does; a URL's own setting wins.
func TestStatementTimeout(t *testing.T) {
	t.Parallel()
	url := testenv.PostgresURL(t)
	var got string
	require.NoError(t, openStore(t, url).Pool().QueryRow(t.Context(), "show statement_timeout").Scan(&got))
	require.Equal(t, "30s", got)

	short := openStore(t, url+"&statement_timeout=200")
	require.NoError(t, short.Pool().QueryRow(t.Context(), "show statement_timeout").Scan(&got))
	require.Equal(t, "200ms", got)
	_, err := short.Pool().Exec(t.Context(), "select pg_sleep(30)")
	var pgErr *pgconn.PgError
	require.ErrorAs(t, err, &pgErr)
	require.Equal(t, "57014", pgErr.Code, "query_canceled by the statement timeout")
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
		{"agent_ingest", "stx_address", "text", false, ""},
		{"agent_ingest", "tier", "text", false, "'cold'::text"},
		{"agent_ingest", "cursor", "jsonb", true, ""},
		{"agent_ingest", "last_visit_at", tz, true, ""},
		{"agent_ingest", "last_success_at", tz, true, ""},
		{"agent_ingest", "last_swap_at", tz, true, ""},
		{"agent_ingest", "swap_rate", "double precision", false, "0"},
		{"agent_ingest", "status", "text", false, "'ok'::text"},
		{"agent_ingest", "error_count", "integer", false, "0"},
		{"agent_ingest", "next_run_at", tz, false, "now()"},
		{"agent_ingest", "visit_from", "text", true, ""},
		{"agent_ingest", "visit_top", "jsonb", true, ""},
		{"agent_ingest", "last_error", "text", true, ""},
		{"agent_ingest", "hinted_at", tz, true, ""},
		{"agent_ingest", "visits", "bigint", false, "0"},
		{"agent_ingest", "swaps_found", "bigint", false, "0"},
		{"agent_ingest", "version", "bigint", false, "0"},
		{"agent_ingest", "created_at", tz, false, "now()"},
		{"agent_ingest", "last_hint_at", tz, true, ""},
		{"agent_ingest_kept", "stx_address", "text", false, ""},
		{"agent_ingest_kept", "tier", "text", false, ""},
		{"agent_ingest_kept", "cursor", "jsonb", true, ""},
		{"agent_ingest_kept", "last_visit_at", tz, true, ""},
		{"agent_ingest_kept", "last_success_at", tz, true, ""},
		{"agent_ingest_kept", "last_swap_at", tz, true, ""},
		{"agent_ingest_kept", "swap_rate", "double precision", false, ""},
		{"agent_ingest_kept", "visits", "bigint", false, ""},
		{"agent_ingest_kept", "swaps_found", "bigint", false, ""},
		{"agent_ingest_kept", "kept_at", tz, false, "now()"},
		{"agent_token_totals", "stx_address", "text", false, ""},
		{"agent_token_totals", "token_id", "text", false, ""},
		{"agent_token_totals", "amount_in", "numeric", false, "0"},
		{"agent_token_totals", "amount_out", "numeric", false, "0"},
		{"agent_token_totals", "legs", "bigint", false, "0"},
		{"agent_token_totals", "amount_in_f", "double precision", false, "0"},
		{"agent_token_totals", "amount_out_f", "double precision", false, "0"},
		{"agent_trade_totals", "stx_address", "text", false, ""},
		{"agent_trade_totals", "trades", "bigint", false, ""},
		{"agent_trade_totals", "first_trade", "bigint", true, ""},
		{"agent_trade_totals", "latest_trade", "bigint", true, ""},
		{"agents", "stx_address", "text", false, ""},
		{"agents", "btc_address", "text", true, ""},
		{"agents", "display_name", "text", true, ""},
		{"agents", "erc8004_agent_id", "bigint", true, ""},
		{"agents", "verified_at", tz, false, "now()"},
		{"agents", "last_active_at", tz, true, ""},
		{"agents", "deregistered_at", tz, true, ""},
		{"audit_log", "id", "bigint", false, "nextval('audit_log_id_seq'::regclass)"},
		{"audit_log", "at", tz, false, ""},
		{"audit_log", "actor", "text", false, ""},
		{"audit_log", "action", "text", false, ""},
		{"audit_log", "target", "text", true, ""},
		{"audit_log", "before", "jsonb", true, ""},
		{"audit_log", "after", "jsonb", true, ""},
		{"chainhook_pushed", "txid", "text", false, ""},
		{"chainhook_pushed", "recorded_at", tz, false, "now()"},
		{"chainhook_state", "id", "boolean", false, "true"},
		{"chainhook_state", "last_received_at", tz, false, ""},
		{"chainhook_state", "deliveries", "bigint", false, "0"},
		{"chainhook_txs", "txid", "text", false, ""},
		{"chainhook_txs", "block_hash", "text", false, ""},
		{"chainhook_txs", "block_height", "bigint", false, ""},
		{"chainhook_txs", "applied", "boolean", false, ""},
		{"chainhook_txs", "updated_at", tz, false, "now()"},
		{"claims", "btc_address", "text", false, ""},
		{"claims", "status", "text", false, ""},
		{"competition_state", "key", "text", false, ""},
		{"competition_state", "value", "text", false, ""},
		{"competition_state", "updated_at", tz, false, "now()"},
		{"deliveries", "id", "text", false, ""},
		{"deliveries", "subscriber_id", "text", false, ""},
		{"deliveries", "event", "text", false, ""},
		{"deliveries", "period_start", tz, false, ""},
		{"deliveries", "payload", "jsonb", false, ""},
		{"deliveries", "status", "text", false, ""},
		{"deliveries", "attempts", "integer", false, ""},
		{"deliveries", "next_attempt_at", tz, true, ""},
		{"deliveries", "last_status", "integer", true, ""},
		{"deliveries", "last_error", "text", true, ""},
		{"deliveries", "created_at", tz, false, ""},
		{"deliveries", "delivered_at", tz, true, ""},
		{"deliveries", "period_end", tz, false, ""},
		{"deliveries", "last_attempt_at", tz, true, ""},
		{"deliveries", "claimed_until", tz, true, ""},
		{"deliveries", "replaces", "text", true, ""},
		{"discovery_cursors", "reader", "text", false, ""},
		{"discovery_cursors", "block_height", "bigint", true, ""},
		{"discovery_cursors", "tx_index", "integer", true, ""},
		{"discovery_cursors", "txid", "text", true, ""},
		{"discovery_cursors", "head_lag_seconds", "double precision", true, ""},
		{"discovery_cursors", "updated_at", tz, false, ""},
		{"discovery_cursors", "block_time", "bigint", true, ""},
		{"discovery_cursors", "start_block_height", "bigint", true, ""},
		{"discovery_cursors", "start_tx_index", "integer", true, ""},
		{"discovery_cursors", "start_txid", "text", true, ""},
		{"discovery_cursors", "scan", "jsonb", true, ""},
		{"discovery_cursors", "scan_began_at", tz, true, ""},
		{"discovery_cursors", "covered_at", tz, true, ""},
		{"discovery_cursors", "last_read_at", tz, true, ""},
		{"discovery_cursors", "requests", "bigint", false, "0"},
		{"discovery_cursors", "pages", "bigint", false, "0"},
		{"discovery_cursors", "candidates", "bigint", false, "0"},
		{"discovery_cursors", "gaps", "bigint", false, "0"},
		{"discovery_gaps", "id", "bigint", false, "nextval('discovery_gaps_id_seq'::regclass)"},
		{"discovery_gaps", "reader", "text", false, ""},
		{"discovery_gaps", "from_height", "bigint", true, ""},
		{"discovery_gaps", "from_tx_index", "integer", true, ""},
		{"discovery_gaps", "to_height", "bigint", false, ""},
		{"discovery_gaps", "to_tx_index", "integer", false, ""},
		{"discovery_gaps", "found_at", tz, false, "now()"},
		{"discovery_gaps", "filled_at", tz, true, ""},
		{"pending_txs", "txid", "text", false, ""},
		{"pending_txs", "sender", "text", false, ""},
		{"pending_txs", "first_seen_at", tz, false, ""},
		{"pending_txs", "checked_at", "timestamp with time zone", true, ""},
		{"pending_txs", "pushed_at", tz, true, ""},
		{"pending_txs", "held_block_time", "bigint", true, ""},
		{"pending_txs", "held_at", tz, true, ""},
		{"pending_txs", "hold_lapsed_at", tz, true, ""},
		{"price_observations", "token_id", "text", false, ""},
		{"price_observations", "observed_at", tz, false, ""},
		{"price_observations", "price_usd", "numeric", true, ""},
		{"push_state", "id", "boolean", false, "true"},
		{"push_state", "holder", "text", false, ""},
		{"push_state", "live", "boolean", false, ""},
		{"push_state", "since", tz, false, ""},
		{"push_state", "last_block_at", tz, true, ""},
		{"push_state", "messages", "bigint", false, "0"},
		{"push_state", "reconnects", "bigint", false, "0"},
		{"push_state", "sockets", "integer", false, "0"},
		{"push_state", "live_sockets", "integer", false, "0"},
		{"push_state", "last_error", "text", true, ""},
		{"push_state", "updated_at", tz, false, "now()"},
		{"registry_pages", "seq", "integer", false, ""},
		{"registry_pages", "url", "text", false, ""},
		{"registry_pages", "etag", "text", false, "''::text"},
		{"registry_pages", "agents", "jsonb", false, ""},
		{"registry_pages", "next", "text", true, ""},
		{"rollup_dirty", "hour_start", tz, false, ""},
		{"rollup_dirty", "reason", "text", false, ""},
		{"rollup_dirty", "marked_at", tz, false, "now()"},
		{"rollups", "period", "text", false, ""},
		{"rollups", "period_start", tz, false, ""},
		{"rollups", "subject_kind", "text", false, ""},
		{"rollups", "subject", "text", false, ""},
		{"rollups", "data", "jsonb", false, ""},
		{"rollups", "complete", "boolean", false, ""},
		{"rollups", "computed_at", tz, false, ""},
		{"rollups", "period_end", tz, false, ""},
		{"round_prices", "round_id", "text", false, ""},
		{"round_prices", "token_id", "text", false, ""},
		{"round_prices", "price_usd", "numeric", false, ""},
		{"round_prices", "decimals", "integer", false, ""},
		{"round_prices", "source", "text", false, ""},
		{"round_prices", "observed_at", tz, true, ""},
		{"round_results", "round_id", "text", false, ""},
		{"round_results", "rank", "integer", false, ""},
		{"round_results", "stx_address", "text", false, ""},
		{"round_results", "btc_address", "text", true, ""},
		{"round_results", "erc8004_agent_id", "bigint", true, ""},
		{"round_results", "trade_count", "integer", false, ""},
		{"round_results", "priced_trade_count", "integer", false, ""},
		{"round_results", "unpriced_trade_count", "integer", false, ""},
		{"round_results", "volume_usd", "double precision", false, ""},
		{"round_results", "received_usd", "double precision", false, ""},
		{"round_results", "pnl_usd", "double precision", false, ""},
		{"round_results", "pnl_percent", "double precision", true, ""},
		{"round_results", "latest_trade_at", "bigint", true, ""},
		{"round_results", "source_agent", "integer", false, ""},
		{"round_results", "source_sweep", "integer", false, ""},
		{"round_results", "source_chainhook", "integer", false, ""},
		{"round_results", "unpriced_tokens", "ARRAY", false, ""},
		{"round_results", "calculated_at", tz, false, ""},
		{"round_rewards", "round_id", "text", false, ""},
		{"round_rewards", "category", "text", false, ""},
		{"round_rewards", "rank", "integer", false, ""},
		{"round_rewards", "stx_address", "text", false, ""},
		{"round_rewards", "erc8004_agent_id", "bigint", true, ""},
		{"round_rewards", "amount_sats", "bigint", false, "0"},
		{"round_rewards", "status", "text", false, "'pending'::text"},
		{"round_rewards", "payout_txid", "text", true, ""},
		{"round_rewards", "paid_at", tz, true, ""},
		{"round_rewards", "notes", "text", true, ""},
		{"round_rewards", "created_at", tz, false, ""},
		{"rounds", "id", "text", false, ""},
		{"rounds", "starts_at", tz, false, ""},
		{"rounds", "ends_at", tz, false, ""},
		{"rounds", "grace_ends_at", tz, false, ""},
		{"rounds", "min_volume_usd", "double precision", false, "50"},
		{"rounds", "min_priced_trade_count", "integer", false, "3"},
		{"rounds", "status", "text", false, "'open'::text"},
		{"rounds", "created_at", tz, false, "now()"},
		{"rounds", "updated_at", tz, false, "now()"},
		{"rounds", "finalized_at", tz, true, ""},
		{"subscribers", "id", "text", false, ""},
		{"subscribers", "url", "text", false, ""},
		{"subscribers", "secret", "text", false, ""},
		{"subscribers", "events", "ARRAY", false, ""},
		{"subscribers", "tokens", "ARRAY", true, ""},
		{"subscribers", "agents", "ARRAY", true, ""},
		{"subscribers", "status", "text", false, ""},
		{"subscribers", "created_at", tz, false, "now()"},
		{"subscribers", "disabled_at", tz, true, ""},
		{"subscribers", "disabled_reason", "text", true, ""},
		{"subscribers", "failing_since", tz, true, ""},
		{"subscribers", "pull_token_hash", "bytea", true, ""},
		{"subscribers", "previous_secret", "text", true, ""},
		{"subscribers", "previous_secret_until", tz, true, ""},
		{"subscribers", "deleted_at", tz, true, ""},
		{"subscribers", "failure_streak", "integer", false, "0"},
		{"swap_rejections", "txid", "text", false, ""},
		{"swap_rejections", "sender", "text", true, ""},
		{"swap_rejections", "reason", "text", false, ""},
		{"swap_rejections", "detail", "text", true, ""},
		{"swap_rejections", "first_seen_at", tz, false, ""},
		{"swap_rejections", "last_seen_at", tz, false, ""},
		{"swap_rollbacks", "txid", "text", false, ""},
		{"swap_rollbacks", "sender", "text", false, ""},
		{"swap_rollbacks", "contract_id", "text", false, ""},
		{"swap_rollbacks", "function_name", "text", false, ""},
		{"swap_rollbacks", "token_in", "text", false, ""},
		{"swap_rollbacks", "amount_in", "numeric", false, ""},
		{"swap_rollbacks", "token_out", "text", false, ""},
		{"swap_rollbacks", "amount_out", "numeric", false, ""},
		{"swap_rollbacks", "burn_block_time", "bigint", false, ""},
		{"swap_rollbacks", "tx_status", "text", false, ""},
		{"swap_rollbacks", "source", "text", false, ""},
		{"swap_rollbacks", "raw_event_json", "jsonb", true, ""},
		{"swap_rollbacks", "inserted_at", tz, false, ""},
		{"swap_rollbacks", "block_hash", "text", false, ""},
		{"swap_rollbacks", "block_height", "bigint", false, ""},
		{"swap_rollbacks", "rolled_back_at", tz, false, "now()"},
		{"swap_rollbacks", "block_time", "bigint", true, ""},
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
		{"swaps", "block_time", "bigint", true, ""},
		{"task_runs", "task", "text", false, ""},
		{"task_runs", "nominal_at", tz, false, ""},
		{"task_runs", "status", "text", false, ""},
		{"task_runs", "reason", "text", true, ""},
		{"task_runs", "started_at", tz, true, ""},
		{"task_runs", "finished_at", tz, true, ""},
		{"task_runs", "coalesced_into", tz, true, ""},
		{"task_runs", "missed_count", "integer", true, ""},
		{"task_runs", "attempts", "integer", false, "0"},
		{"task_runs", "error_class", "text", true, ""},
		{"task_runs", "result", "jsonb", true, ""},
		{"token_prices", "token_id", "text", false, ""},
		{"token_prices", "price_usd", "numeric", true, ""},
		{"token_prices", "decimals", "integer", true, ""},
		{"token_prices", "source", "text", false, ""},
		{"token_prices", "fetched_at", tz, false, ""},
		{"token_prices", "minute_remaining", "bigint", true, ""},
		{"token_prices", "month_remaining", "bigint", true, ""},
		{"token_prices", "updated_at", tz, false, "now()"},
		{"token_prices", "checked_at", tz, true, ""},
		{"upstream_budget", "upstream", "text", false, ""},
		{"upstream_budget", "window_start", tz, false, ""},
		{"upstream_budget", "used", "integer", false, ""},
		{"upstream_budget_state", "upstream", "text", false, ""},
		{"upstream_budget_state", "state", "jsonb", false, ""},
		{"upstream_budget_state", "updated_at", tz, false, "now()"},
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
	const rejection = `insert into swap_rejections (txid, reason, first_seen_at, last_seen_at) values ('0x01', $1, now(), now())`
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
		{name: "final rejection", giveSQL: rejection, giveArgs: []any{"not_canonical"}},
		{name: "a failure is not a verdict", giveSQL: rejection, giveArgs: []any{"tx_fetch_failed"}, wantCode: "23514"},
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
