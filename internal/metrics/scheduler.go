package metrics

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pacer-dev/pacer/internal/pacing"
	"github.com/pacer-dev/pacer/workflows"
)

// StatusFunc runs the scheduler's status query.
type StatusFunc func(ctx context.Context) (workflows.Status, error)

// Zones are the values of the zone label: the pacing controller's zones.
var Zones = []pacing.Zone{
	pacing.ZoneWarmup, pacing.ZoneCooldown, pacing.ZoneBackoff,
	pacing.ZoneSteady, pacing.ZoneGrow, pacing.ZoneSurge,
}

// WatchScheduler adds the gauges only the scheduler workflow knows, read
// from its status query: pause, breakers, consecutive failures and what
// the pacing controller decided. The workflow is one for all processes, so
// one process kind (the API) should serve them. A query is a billed action
// on Temporal Cloud, so scrapes within every of the last query reuse its
// answer.
func (m *Metrics) WatchScheduler(status StatusFunc, every time.Duration) error {
	return m.reg.Register(newSchedulerCollector(status, every))
}

type schedulerCollector struct {
	status StatusFunc
	every  time.Duration

	mu     sync.Mutex // one query at a time; guards last and lastAt
	last   *workflows.Status
	lastAt time.Time

	up, paused, history, failures, breaker, batch, interval, zone, runsOutEarly *prometheus.Desc
	errors                                                                      prometheus.Counter
}

func newSchedulerCollector(status StatusFunc, every time.Duration) *schedulerCollector {
	task := []string{"task"}
	return &schedulerCollector{
		status: status,
		every:  every,
		up: prometheus.NewDesc("pacer_scheduler_up",
			"1 when the scheduler's status query answered (the gauges below are from that answer), 0 when it did not.", nil, nil),
		paused: prometheus.NewDesc("pacer_scheduler_paused",
			"1 while the scheduler is paused.", nil, nil),
		history: prometheus.NewDesc("pacer_scheduler_history_events",
			"Events in the scheduler run's history; it continues as new before it grows large.", nil, nil),
		failures: prometheus.NewDesc("pacer_task_consecutive_failures",
			"Failed runs in a row of the task, as the scheduler counts them.", task, nil),
		breaker: prometheus.NewDesc("pacer_task_breaker_open",
			"1 while the task's circuit breaker is open (it probes hourly; resume or refresh closes it).", task, nil),
		batch: prometheus.NewDesc("pacer_pacing_batch",
			"Items per run the pacing controller chose for the task.", task, nil),
		interval: prometheus.NewDesc("pacer_pacing_interval_seconds",
			"Interval between runs the pacing controller chose for the task.", task, nil),
		zone: prometheus.NewDesc("pacer_pacing_zone",
			"1 for the pacing controller's current zone of the task.", []string{"task", "zone"}, nil),
		runsOutEarly: prometheus.NewDesc("pacer_pacing_month_runs_out_early",
			"1 when the task's upstream month quota runs out before the month ends at the rate it drains.", task, nil),
		errors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "pacer_scheduler_status_errors_total",
			Help: "Status queries for metrics that failed.",
		}),
	}
}

func (c *schedulerCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.up, c.paused, c.history, c.failures, c.breaker, c.batch, c.interval, c.zone, c.runsOutEarly} {
		ch <- d
	}
	c.errors.Describe(ch)
}

func (c *schedulerCollector) Collect(ch chan<- prometheus.Metric) {
	defer c.errors.Collect(ch)
	st, ok := c.current()
	if !ok {
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 0)
		return
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	gauge(c.up, 1)
	gauge(c.paused, flag(st.PausedUntil != nil))
	gauge(c.history, float64(st.HistoryLength))
	for name, t := range st.Tasks {
		if !slices.Contains(Tasks, name) {
			continue // a task this build does not know would be an unbounded label
		}
		gauge(c.failures, float64(st.ConsecutiveFailures[name]), name)
		gauge(c.breaker, flag(t.Breaker.Open), name)
		p := t.Pacing
		if p == nil {
			continue // a run from before adaptive pacing
		}
		gauge(c.batch, float64(p.Batch), name)
		if d, err := time.ParseDuration(p.Interval); err == nil {
			gauge(c.interval, d.Seconds(), name)
		}
		if slices.Contains(Zones, p.Zone) {
			gauge(c.zone, 1, name, string(p.Zone))
		}
		if p.Budget != nil {
			gauge(c.runsOutEarly, flag(p.Budget.RunsOutEarly), name)
		}
	}
}

// current returns the last answer if it is recent, else asks again.
func (c *schedulerCollector) current() (workflows.Status, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.last != nil && time.Since(c.lastAt) < c.every {
		return *c.last, true
	}
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	st, err := c.status(ctx)
	if err != nil {
		c.errors.Inc()
		c.last = nil
		return workflows.Status{}, false
	}
	c.last, c.lastAt = &st, time.Now()
	return st, true
}

func flag(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
