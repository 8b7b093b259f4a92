package page_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/internal/testenv"
)

// db is a migrated private schema and the rows a test puts in it. Rows go
// in with plain SQL, so what a test expects never comes from the page's own
// queries.
type db struct {
	t  testing.TB
	st *store.Store
}

func newDB(t testing.TB) *db {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, testenv.PostgresURL(t))
	require.NoError(t, err)
	t.Cleanup(st.Close)
	require.NoError(t, st.Migrate(ctx))
	return &db{t: t, st: st}
}

func (d *db) exec(sql string, args ...any) {
	d.t.Helper()
	_, err := d.st.Pool().Exec(context.Background(), sql, args...)
	require.NoError(d.t, err, sql)
}

func (d *db) has(table string) bool {
	d.t.Helper()
	var ok bool
	require.NoError(d.t, d.st.Pool().QueryRow(context.Background(), `select to_regclass($1) is not null`, table).Scan(&ok))
	return ok
}

// run records one task run as the activities do.
type run struct {
	task     string
	nominal  time.Time
	status   string
	took     time.Duration // 0: not started (skipped, coalesced)
	finished bool
	class    string
	result   map[string]any
}

func (d *db) run(r run) {
	d.t.Helper()
	var started, finished *time.Time
	if r.took > 0 || r.finished {
		s := r.nominal
		started = &s
		if r.finished {
			f := r.nominal.Add(r.took)
			finished = &f
		}
	}
	var result []byte
	if r.result != nil {
		var err error
		result, err = json.Marshal(r.result)
		require.NoError(d.t, err)
	}
	var class *string
	if r.class != "" {
		class = &r.class
	}
	d.exec(`insert into task_runs (task, nominal_at, status, started_at, finished_at, error_class, result)
values ($1, $2, $3, $4, $5, $6, $7)`, r.task, r.nominal, r.status, started, finished, class, result)
}

func (d *db) price(id string, fetched time.Time) {
	d.t.Helper()
	d.exec(`insert into token_prices (token_id, price_usd, decimals, source, fetched_at) values ($1, 1.5, 6, 'tenero', $2)`, id, fetched)
}

func (d *db) agent(stx string) {
	d.t.Helper()
	d.exec(`insert into agents (stx_address) values ($1)`, stx)
}

// ingest sets an agent's tier and next visit (registering an agent gives
// it a row, due at once).
func (d *db) ingest(stx, tier string, next time.Time) {
	d.t.Helper()
	d.exec(`insert into agent_ingest (stx_address, tier, next_run_at) values ($1, $2, $3)
on conflict (stx_address) do update set tier = excluded.tier, next_run_at = excluded.next_run_at`, stx, tier, next)
}

// swap inserts a swap of sender mined at mined and found delay later.
func (d *db) swap(txid, sender string, mined time.Time, delay time.Duration, tokenIn, tokenOut string) {
	d.t.Helper()
	d.exec(`insert into swaps (txid, sender, contract_id, function_name, token_in, amount_in, token_out, amount_out,
    burn_block_time, tx_status, source, inserted_at)
values ($1, $2, 'SP000000000000000000002Q6VF78.pool', 'swap', $3, 1, $4, 1, $5, 'success', 'sweep', $6)`,
		txid, sender, tokenIn, tokenOut, mined.Unix(), mined.Add(delay))
}

func (d *db) subscriber(id, url, secret, status string) {
	d.t.Helper()
	d.exec(`insert into subscribers (id, url, secret, events, status) values ($1, $2, $3, '{hourly,daily}', $4)`, id, url, secret, status)
}

func (d *db) delivery(sub, status string, period time.Time, next *time.Time) {
	d.t.Helper()
	d.exec(`insert into deliveries (id, subscriber_id, event, period_start, period_end, payload, status, attempts, next_attempt_at, created_at)
values ($1, $2, 'hourly', $3::timestamptz, $3::timestamptz + interval '1 hour', '{}', $4, 1, $5, $3::timestamptz)`, fmt.Sprintf("msg_%s_%d", sub, period.Unix()), sub, period, status, next)
}

// count runs one counting query of the oracle.
func (d *db) count(sql string, args ...any) int64 {
	d.t.Helper()
	var n int64
	require.NoError(d.t, d.st.Pool().QueryRow(context.Background(), sql, args...).Scan(&n), sql)
	return n
}
