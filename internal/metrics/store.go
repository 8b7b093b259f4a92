package metrics

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pacer-dev/pacer/internal/catalog"
	"github.com/pacer-dev/pacer/internal/store"
)

// trackedTraded is how many traded tokens join the tracked set, as in the
// tenero task, so the staleness is measured over the tokens it refreshes.
const trackedTraded = 50

// scrapeTimeout bounds what one collector may spend on a scrape: a slow
// database or Temporal must not hold the scrape, which also carries the
// SDK's and the tasks' series.
const scrapeTimeout = 3 * time.Second

// WatchStore adds the gauges read from Postgres at each scrape: the age of
// the oldest price in the tracked set and the sweep's position in the agent
// walk. They describe the shared database, not this process, so one process
// kind (the API) should serve them; each scrape costs four small queries.
func (m *Metrics) WatchStore(st *store.Store, cat *catalog.Catalog) error {
	return m.reg.Register(newStoreCollector(st, cat))
}

type storeCollector struct {
	st  *store.Store
	cat *catalog.Catalog

	// mu lets one scrape at a time query the database; scrapes that overlap
	// wait rather than pile queries up.
	mu sync.Mutex

	oldestAge, tracked, missing, cursor, agents *prometheus.Desc
	errors                                      prometheus.Counter
}

func newStoreCollector(st *store.Store, cat *catalog.Catalog) *storeCollector {
	return &storeCollector{
		st:  st,
		cat: cat,
		oldestAge: prometheus.NewDesc("pacer_price_oldest_age_seconds",
			"Age of the oldest stored price in the tracked token set (static base, pegs, traded tokens), measured at the scrape. An unchanged price is rewritten hourly, so a healthy set reads up to about an hour plus the tenero cadence; tracked tokens without any price are counted by pacer_prices_missing.",
			nil, nil),
		tracked: prometheus.NewDesc("pacer_prices_tracked",
			"Tokens in the tracked set the tenero task keeps fresh.", nil, nil),
		missing: prometheus.NewDesc("pacer_prices_missing",
			"Tracked tokens with no stored price at all.", nil, nil),
		cursor: prometheus.NewDesc("pacer_sweep_cursor_position",
			"Registered agents at or before the sweep cursor, in walk order: where the next sweep page starts (0 when the walk wrapped).",
			nil, nil),
		agents: prometheus.NewDesc("pacer_sweep_agents_registered",
			"Registered agents the sweep walks.", nil, nil),
		errors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "pacer_metrics_store_errors_total",
			Help: "Scrapes whose Postgres-backed gauges could not be read (they are left out of that scrape).",
		}),
	}
}

func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.oldestAge, c.tracked, c.missing, c.cursor, c.agents} {
		ch <- d
	}
	c.errors.Describe(ch)
}

func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()

	// A failure leaves the gauge out: an absent series is what an alert on
	// staleness should see, never a made-up zero.
	if err := c.collectPrices(ctx, ch); err != nil {
		c.errors.Inc()
	}
	if err := c.collectCursor(ctx, ch); err != nil {
		c.errors.Inc()
	}
	c.errors.Collect(ch)
}

func (c *storeCollector) collectPrices(ctx context.Context, ch chan<- prometheus.Metric) error {
	traded, err := c.st.TradedTokens(ctx, trackedTraded)
	if err != nil {
		return err
	}
	ids := c.cat.TokenSet(traded)
	prices, err := c.st.Prices(ctx, ids)
	if err != nil {
		return err
	}
	ch <- prometheus.MustNewConstMetric(c.tracked, prometheus.GaugeValue, float64(len(ids)))
	ch <- prometheus.MustNewConstMetric(c.missing, prometheus.GaugeValue, float64(len(ids)-len(prices)))
	if len(prices) == 0 {
		return nil
	}
	fetched := make([]time.Time, 0, len(prices))
	for _, p := range prices {
		fetched = append(fetched, p.FetchedAt)
	}
	oldest := slices.MinFunc(fetched, time.Time.Compare)
	ch <- prometheus.MustNewConstMetric(c.oldestAge, prometheus.GaugeValue, max(0, time.Since(oldest).Seconds()))
	return nil
}

// agentsAtCursorSQL counts in the same byte order the sweep walks in
// (store.AgentsPage).
const agentsAtCursorSQL = `
select count(*) filter (where $1 <> '' and stx_address collate "C" <= $1), count(*)
from agents`

func (c *storeCollector) collectCursor(ctx context.Context, ch chan<- prometheus.Metric) error {
	cursor, _, err := c.st.GetState(ctx, store.StateSweepCursor)
	if err != nil {
		return err
	}
	var at, total int64
	if err := c.st.Pool().QueryRow(ctx, agentsAtCursorSQL, cursor).Scan(&at, &total); err != nil {
		return err
	}
	ch <- prometheus.MustNewConstMetric(c.cursor, prometheus.GaugeValue, float64(at))
	ch <- prometheus.MustNewConstMetric(c.agents, prometheus.GaugeValue, float64(total))
	return nil
}
