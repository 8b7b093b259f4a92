package metrics_test

import (
	"context"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/budget"
	"github.com/pacer-dev/pacer/internal/catalog"
	"github.com/pacer-dev/pacer/internal/competition"
	"github.com/pacer-dev/pacer/internal/metrics"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/internal/testenv"
)

// gauge reads one unlabelled sample from a scrape; ok is false when absent.
func gauge(body, name string) (float64, bool) {
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` (\S+)$`).FindStringSubmatch(body)
	if m == nil {
		return 0, false
	}
	v, err := strconv.ParseFloat(m[1], 64)
	return v, err == nil
}

func TestStoreGauges(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := store.Open(ctx, testenv.PostgresURL(t))
	require.NoError(t, err)
	t.Cleanup(st.Close)
	require.NoError(t, st.Migrate(ctx))
	cat := catalog.Default()
	m := metrics.New()
	hb := st.SharedBudget(store.UpstreamHiro, budget.Config{PerMinute: 45})
	require.NoError(t, m.WatchStore(st, cat, hb))

	// Nothing stored yet: every tracked token is missing, no age to tell.
	tracked := cat.TokenSet(nil)
	body := scrape(t, m)
	n, ok := gauge(body, "pacer_prices_tracked")
	require.True(t, ok)
	require.Equal(t, float64(len(tracked)), n)
	n, _ = gauge(body, "pacer_prices_missing")
	require.Equal(t, float64(len(tracked)), n)
	_, ok = gauge(body, "pacer_price_oldest_age_seconds")
	require.False(t, ok, "no price, no age")

	// All but one priced; the oldest is 40 minutes old.
	now := time.Now()
	one := "1.5"
	for i, id := range tracked[1:] {
		fetched := now.Add(-time.Duration(i) * time.Minute)
		if i == 2 {
			fetched = now.Add(-40 * time.Minute)
		}
		_, err := st.UpsertPrice(ctx, store.Price{TokenID: id, PriceUSD: &one, Source: store.SourceTenero, FetchedAt: fetched})
		require.NoError(t, err)
	}
	body = scrape(t, m)
	n, _ = gauge(body, "pacer_prices_missing")
	require.Equal(t, 1.0, n)
	age, ok := gauge(body, "pacer_price_oldest_age_seconds")
	require.True(t, ok)
	require.InDelta(t, 40*60, age, 30)

	// Three agents, due at once (cold until their first visit), one of
	// them 90 s overdue; the budget has its whole minute.
	for _, a := range []string{"SP3AGENT", "SP1AGENT", "SP2AGENT"} {
		require.NoError(t, st.UpsertAgent(ctx, competition.Agent{STXAddress: a}, ""))
	}
	_, err = st.Pool().Exec(ctx, `update agent_ingest set next_run_at = now() - interval '90 seconds' where stx_address = 'SP1AGENT'`)
	require.NoError(t, err)
	body = scrape(t, m)
	n, _ = gauge(body, "pacer_sweep_agents_registered")
	require.Equal(t, 3.0, n)
	n, _ = gauge(body, `pacer_sweep_tier_agents{tier="cold"}`)
	require.Equal(t, 3.0, n)
	n, _ = gauge(body, `pacer_sweep_tier_agents{tier="hot"}`)
	require.Zero(t, n)
	n, _ = gauge(body, `pacer_sweep_tier_due{tier="cold"}`)
	require.Equal(t, 3.0, n)
	n, _ = gauge(body, `pacer_sweep_tier_overdue_seconds_p99{tier="cold"}`)
	require.InDelta(t, 0.99*90, n, 5)
	n, ok = gauge(body, `pacer_hiro_budget_remaining{window="minute"}`)
	require.True(t, ok)
	require.Equal(t, 45.0, n)
	_, ok = gauge(body, `pacer_hiro_budget_remaining{window="month"}`)
	require.False(t, ok, "no month quota known")
	n, _ = gauge(body, "pacer_metrics_store_errors_total")
	require.Zero(t, n)

	// Postgres gone: the gauges leave the scrape, which still succeeds.
	st.Close()
	body = scrape(t, m)
	_, ok = gauge(body, "pacer_price_oldest_age_seconds")
	require.False(t, ok)
	_, ok = gauge(body, "pacer_sweep_agents_registered")
	require.False(t, ok)
	n, _ = gauge(body, "pacer_metrics_store_errors_total")
	require.Equal(t, 4.0, n, "prices, the due set, the budget and deliveries")
	require.Contains(t, body, "pacer_task_runs_total")
}
