package metrics

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pacer-dev/pacer/internal/catalog"
	"github.com/pacer-dev/pacer/internal/ingest"
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
// the oldest price in the tracked set, the sweep's due set per tier, what
// the shared Hiro budget has left (hb; nil leaves it out) and the
// deliveries by status. They describe the shared database, not this
// process, so one process kind (the API) should serve them; each scrape
// costs a few small queries.
func (m *Metrics) WatchStore(st *store.Store, cat *catalog.Catalog, hb *store.SharedBudget) error {
	c := newStoreCollector(st, cat)
	c.budget = hb
	return m.reg.Register(c)
}

type storeCollector struct {
	st  *store.Store
	cat *catalog.Catalog

	// mu lets one scrape at a time query the database; scrapes that overlap
	// wait rather than pile queries up.
	mu sync.Mutex

	// budget is the shared Hiro budget; nil leaves its gauge out.
	budget *store.SharedBudget

	oldestAge, tracked, missing, agents          *prometheus.Desc
	tierAgents, tierDue, tierOverdue, budgetLeft *prometheus.Desc
	deliveries                                   deliveryGauges
	errors                                       prometheus.Counter
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
		agents: prometheus.NewDesc("pacer_sweep_agents_registered",
			"Registered agents the sweep visits.", nil, nil),
		tierAgents: prometheus.NewDesc("pacer_sweep_tier_agents",
			"Registered agents per tier (hot: a swap in the last 24 h, warm: 7 days, cold).", []string{"tier"}, nil),
		tierDue: prometheus.NewDesc("pacer_sweep_tier_due",
			"Agents of the tier whose next visit is due.", []string{"tier"}, nil),
		tierOverdue: prometheus.NewDesc("pacer_sweep_tier_overdue_seconds_p99",
			"99th percentile over the tier's agents of how far past its due time each is (0 when not due).", []string{"tier"}, nil),
		budgetLeft: prometheus.NewDesc("pacer_hiro_budget_remaining",
			"What the one Hiro budget shared by every process has left of the minute window and of the month quota (when Hiro reports one), read from Postgres at the scrape.",
			[]string{"window"}, nil),
		deliveries: newDeliveryGauges(),
		errors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "pacer_metrics_store_errors_total",
			Help: "Scrapes whose Postgres-backed gauges could not be read (they are left out of that scrape).",
		}),
	}
}

func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.oldestAge, c.tracked, c.missing, c.agents,
		c.tierAgents, c.tierDue, c.tierOverdue, c.budgetLeft, c.deliveries.status, c.deliveries.subscribers} {
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
	if err := c.collectIngest(ctx, ch); err != nil {
		c.errors.Inc()
	}
	if err := c.collectBudget(ctx, ch); err != nil {
		c.errors.Inc()
	}
	if err := c.deliveries.collect(ctx, c.st, ch); err != nil {
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

func (c *storeCollector) collectIngest(ctx context.Context, ch chan<- prometheus.Metric) error {
	sum, err := c.st.IngestSummary(ctx, time.Now())
	if err != nil {
		return err
	}
	total := 0
	for _, t := range ingest.Tiers {
		s := sum[t]
		total += s.Agents
		tier := string(t)
		ch <- prometheus.MustNewConstMetric(c.tierAgents, prometheus.GaugeValue, float64(s.Agents), tier)
		ch <- prometheus.MustNewConstMetric(c.tierDue, prometheus.GaugeValue, float64(s.Due), tier)
		ch <- prometheus.MustNewConstMetric(c.tierOverdue, prometheus.GaugeValue, s.OverdueP99, tier)
	}
	ch <- prometheus.MustNewConstMetric(c.agents, prometheus.GaugeValue, float64(total))
	return nil
}

func (c *storeCollector) collectBudget(ctx context.Context, ch chan<- prometheus.Metric) error {
	if c.budget == nil {
		return nil
	}
	st, now, err := c.budget.Snapshot(ctx)
	if err != nil {
		return err
	}
	minute, month := st.Remaining(c.budget.Config(), now)
	ch <- prometheus.MustNewConstMetric(c.budgetLeft, prometheus.GaugeValue, float64(minute), WindowMinute)
	if month != nil {
		ch <- prometheus.MustNewConstMetric(c.budgetLeft, prometheus.GaugeValue, float64(*month), WindowMonth)
	}
	return nil
}
