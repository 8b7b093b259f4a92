package page_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/catalog"
	"github.com/pacer-dev/pacer/internal/page"
)

// benchNow is late in a month, so the month's spend covers four weeks of
// runs.
var benchNow = time.Date(2026, 6, 29, 12, 7, 30, 0, time.UTC)

// Scale of the benchmark's world (the figure: 10,000 agents and
// 100,000 swaps), with the task_runs a month of every cadence leaves.
const (
	benchAgents = 10_000
	benchSwaps  = 100_000
)

// seedScale fills the database in bulk: agents and their ingestion state,
// swaps over the last 30 days among 60 tokens, 35 days of runs (sweep
// every minute, tenero every 5, rollup hourly), subscribers and deliveries.
func seedScale(d *db) {
	d.t.Helper()
	d.exec(`insert into agents (stx_address) select 'SPAGENT' || i from generate_series(1, $1) i`, benchAgents)
	d.exec(`insert into agent_ingest (stx_address, tier, next_run_at)
select 'SPAGENT' || i, (array['hot', 'warm', 'cold'])[1 + i % 3], $2::timestamptz + ((i % 600) - 300) * interval '1 second'
from generate_series(1, $1) i
on conflict (stx_address) do update set tier = excluded.tier, next_run_at = excluded.next_run_at`, benchAgents, benchNow)
	d.exec(`insert into swaps (txid, sender, contract_id, function_name, token_in, amount_in, token_out, amount_out,
    burn_block_time, tx_status, source, inserted_at)
select '0x' || lpad(to_hex(i), 64, '0'), 'SPAGENT' || (1 + i % $2),
       'SP2C2YFP12AJZB4MABJBAJ55XECVS7E4PMMZ89YZR.pool', 'swap',
       'SP2C2YFP12AJZB4MABJBAJ55XECVS7E4PMMZ89YZR.token-' || (i % 60), 1000,
       'SP2C2YFP12AJZB4MABJBAJ55XECVS7E4PMMZ89YZR.token-' || ((i + 7) % 60), 900,
       extract(epoch from $3::timestamptz)::bigint - i * 26, 'success', 'sweep',
       to_timestamp(extract(epoch from $3::timestamptz)::bigint - i * 26 + 30 + i % 600)
from generate_series(1, $1) i`, benchSwaps, benchAgents, benchNow)
	for _, r := range []struct {
		task  string
		every time.Duration
	}{{"sweep", time.Minute}, {"tenero", 5 * time.Minute}, {"rollup", time.Hour}} {
		d.exec(`insert into task_runs (task, nominal_at, status, started_at, finished_at, error_class, result)
select $1, t, case when i % 97 = 0 then 'failed' else 'ok' end, t, t + interval '2 seconds',
       case when i % 97 = 0 then 'server_error' end,
       jsonb_build_object('requests', 1 + i % 40, 'minuteRemaining', 40 - i % 40, 'monthRemaining', 900000 - i)
from generate_series(1, $4::int) i, lateral (select $2::timestamptz - i * $3::interval as t) x`,
			r.task, benchNow, r.every, int(35*24*time.Hour/r.every))
	}
	d.exec(`insert into token_prices (token_id, price_usd, decimals, source, fetched_at)
select 'SP2C2YFP12AJZB4MABJBAJ55XECVS7E4PMMZ89YZR.token-' || i, 1.5, 6, 'tenero', $1::timestamptz - i * interval '1 minute'
from generate_series(0, 59) i`, benchNow)
	d.exec(`insert into subscribers (id, url, secret, events, status)
select 'sub' || i, 'https://hooks' || i || '.example.com/in', 'whsec_' || i, '{hourly,daily}', 'active'
from generate_series(1, 20) i`)
	d.exec(`insert into deliveries (id, subscriber_id, event, period_start, period_end, payload, status, attempts, next_attempt_at, created_at)
select 'msg' || i, 'sub' || (1 + i % 20), 'hourly', $1::timestamptz - i * interval '1 hour', $1::timestamptz - (i - 1) * interval '1 hour', '{}',
       (array['delivered', 'delivered', 'delivered', 'pending', 'retrying', 'exhausted'])[1 + i % 6], 1,
       $1::timestamptz + interval '1 minute', $1::timestamptz - i * interval '1 hour'
from generate_series(1, 10000) i`, benchNow)
	// What the tenero task records at each run.
	traded, err := d.st.TradedTokens(context.Background(), catalog.MaxTraded)
	require.NoError(d.t, err)
	require.NoError(d.t, d.st.SetTrackedTokens(context.Background(), catalog.Default().TokenSet(traded)))
	d.exec(`analyze`)
}

// BenchmarkPage renders the page over the database at scale, and over an
// empty one as the baseline of the same run: their ratio is what the data
// costs. make bench prints both; docs/benchmarks.md keeps the figures.
func BenchmarkPage(b *testing.B) {
	for _, bc := range []struct {
		name string
		seed func(*db)
	}{
		{"empty", func(*db) {}},
		{"10k-agents-100k-swaps", seedScale},
	} {
		b.Run(bc.name, func(b *testing.B) {
			d := newDB(b)
			bc.seed(d)
			p := page.New(page.Options{Store: d.st, Catalog: catalog.Default(), Now: func() time.Time { return benchNow },
				Status: staticStatus(seededStatus())})
			// Every section must have rendered its figures, not an error.
			v := p.View(context.Background())
			for _, s := range []page.Section{v.Scheduler.Section, v.Budgets.Section, v.Prices.Section, v.Ledger.Section, v.Deliveries.Section} {
				require.Empty(b, s.Unavailable)
				require.Empty(b, s.Absent)
			}
			b.ResetTimer()
			for b.Loop() {
				rec := httptest.NewRecorder()
				p.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
				if rec.Code != http.StatusOK {
					b.Fatalf("status %d", rec.Code)
				}
			}
		})
	}
}
