// Package metrics is pacer's one Prometheus registry. The Temporal SDK's own
// metrics (through OpenTelemetry), pacer's task metrics and the gauges read
// from Postgres all land in it, so a process serves them from one /metrics.
//
// Every label takes its values from a fixed set (task, error class, upstream,
// quota window, rejection reason, tier), so the number of series cannot grow with
// traffic; and nothing configured by an operator, API keys above all, is ever
// a label or a value.
package metrics

import (
	"errors"
	"net/http"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.temporal.io/sdk/temporal"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/competition"
	"github.com/pacer-dev/pacer/internal/fault"
	"github.com/pacer-dev/pacer/internal/ingest"
)

// Upstreams and quota windows, the values of the upstream and window labels.
const (
	UpstreamTenero = "tenero"
	UpstreamHiro   = "hiro"
	WindowMinute   = "minute"
	WindowMonth    = "month"
)

// ClassOther stands for an error class pacer does not know, so that a new
// class cannot add series unnoticed; it shows up as class="other" instead.
const ClassOther = "other"

// Classes are the values of the class label.
var Classes = []pacer.ErrorClass{
	pacer.ClassRateLimit, pacer.ClassServerError, pacer.ClassTimeout, pacer.ClassNotFound,
	pacer.ClassParseError, pacer.ClassTransport, pacer.ClassPermanent,
}

// Tasks are the values of the task label.
var Tasks = []string{pacer.TaskTenero, pacer.TaskSweep, pacer.TaskRollup, pacer.TaskDeliver}

// Metrics records pacer's metrics into its registry. A nil *Metrics records
// nothing, so code and tests that have no registry need no special case.
type Metrics struct {
	reg *prometheus.Registry

	runs        *prometheus.CounterVec
	failures    *prometheus.CounterVec
	duration    *prometheus.HistogramVec
	lastSuccess *prometheus.GaugeVec
	budget      *prometheus.GaugeVec

	teneroTokens    *prometheus.CounterVec
	sweepAgents     prometheus.Counter
	sweepSwaps      *prometheus.CounterVec
	sweepRejections *prometheus.CounterVec
	sweepVisits     *prometheus.CounterVec
	sweepFound      *prometheus.CounterVec

	schedule   scheduleMetrics
	deliveries *deliveryMetrics
	discovery  discoveryMetrics
	// holdsLapsed counts completeThrough's holds that lapsed (holds.go).
	holdsLapsed prometheus.Counter

	registryHeld prometheus.Gauge
}

// New builds a registry holding the Go runtime and process collectors and
// pacer's own metrics. Series that count failures start at zero for every
// task and class, so that rate() and increase() see the first failure.
func New() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pacer_task_runs_total",
			Help: "Task activity attempts that ended, by task (a retried attempt counts again).",
		}, []string{"task"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pacer_task_failures_total",
			Help: "Task activity attempts that failed as a whole, by task and error class.",
		}, []string{"task", "class"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "pacer_task_run_duration_seconds",
			Help: "Wall time of task activity attempts, by task.",
			// A tenero run takes seconds; a sweep page at Hiro's keyless pace
			// takes minutes.
			Buckets: []float64{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1200},
		}, []string{"task"}),
		lastSuccess: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "pacer_task_last_success_timestamp_seconds",
			Help: "Unix time at which this process last finished a run of the task without failure.",
		}, []string{"task"}),
		budget: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "pacer_upstream_budget_remaining",
			Help: "Requests the upstream said were left in its quota window, from the last run in this process that saw its rate-limit headers.",
		}, []string{"upstream", "window"}),
		teneroTokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pacer_tenero_tokens_total",
			Help: "Tokens handled by tenero runs, by outcome (written, unchanged, pegged, failed, skipped).",
		}, []string{"outcome"}),
		sweepAgents: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "pacer_sweep_agents_scanned_total",
			Help: "Agents whose transactions a sweep listed.",
		}),
		sweepSwaps: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pacer_sweep_swaps_total",
			Help: "Allowlisted swap transactions a sweep verified, by outcome (inserted, already_known, pending, rejected).",
		}, []string{"outcome"}),
		sweepRejections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pacer_sweep_rejections_total",
			Help: "Swap transactions a sweep rejected, by reason.",
		}, []string{"reason"}),
		sweepVisits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pacer_sweep_visits_total",
			Help: "Agent visits of the sweep, by the agent's tier after the visit.",
		}, []string{"tier"}),
		sweepFound: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pacer_sweep_swaps_found_total",
			Help: "Allowlisted swap calls the sweep's visits found, by the agent's tier after the visit.",
		}, []string{"tier"}),
		deliveries:   newDeliveryMetrics(),
		registryHeld: newRegistryHeld(),
	}
	m.reg.MustRegister(m.registryHeld)
	m.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.runs, m.failures, m.duration, m.lastSuccess, m.budget,
		m.teneroTokens, m.sweepAgents, m.sweepSwaps, m.sweepRejections, m.sweepVisits, m.sweepFound,
	)
	for _, t := range ingest.Tiers {
		m.sweepVisits.WithLabelValues(string(t))
		m.sweepFound.WithLabelValues(string(t))
	}
	m.schedule = newScheduleMetrics()
	m.reg.MustRegister(m.schedule.collectors()...)
	m.reg.MustRegister(m.deliveries.collectors()...)
	m.holdsLapsed = newHoldsLapsed()
	m.reg.MustRegister(m.holdsLapsed)
	m.discovery = newDiscoveryMetrics()
	m.reg.MustRegister(m.discovery.collectors()...)
	for _, task := range Tasks {
		m.runs.WithLabelValues(task)
		for _, class := range Classes {
			m.failures.WithLabelValues(task, string(class))
		}
	}
	for _, r := range competition.AllReasons() {
		m.sweepRejections.WithLabelValues(string(r))
	}
	return m
}

// Registry is the registry every collector of the process registers with.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in the Prometheus exposition format. A
// collector that fails (Postgres down) leaves its series out rather than
// failing the whole scrape: the SDK's and the tasks' series still matter most
// then.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		ErrorHandling:       promhttp.ContinueOnError,
		Registry:            m.reg,
		MaxRequestsInFlight: 4,
		Timeout:             10 * time.Second,
	})
}

// ObserveTenero records one attempt of the tenero activity.
func (m *Metrics) ObserveTenero(took time.Duration, res pacer.TeneroResult, err error) {
	if m == nil {
		return
	}
	m.observeRun(pacer.TaskTenero, took, res.Run, err)
	m.observeBudget(UpstreamTenero, res.Run)
	for outcome, n := range map[string]int{
		"written": res.Written, "unchanged": res.Unchanged, "pegged": res.Pegged,
		"failed": res.Failed, "skipped": res.Skipped,
	} {
		if n > 0 {
			m.teneroTokens.WithLabelValues(outcome).Add(float64(n))
		}
	}
}

// ObserveSweep records one attempt of the sweep activity. An attempt that
// resumed from a heartbeat reports the counts of the attempts before it
// too; they are counted again, as the attempt's own result says them.
func (m *Metrics) ObserveSweep(took time.Duration, res pacer.SweepResult, err error) {
	if m == nil {
		return
	}
	m.observeRun(pacer.TaskSweep, took, res.Run, err)
	m.observeBudget(UpstreamHiro, res.Run)
	m.sweepAgents.Add(float64(res.Scanned))
	m.discovery.observe(res)
	for outcome, n := range map[string]int{
		"inserted": res.Inserted, "already_known": res.AlreadyKnown, "pending": res.Pending, "rejected": res.Rejected,
	} {
		if n > 0 {
			m.sweepSwaps.WithLabelValues(outcome).Add(float64(n))
		}
	}
	for _, r := range competition.AllReasons() {
		if n := res.RejectionReasons[string(r)]; n > 0 {
			m.sweepRejections.WithLabelValues(string(r)).Add(float64(n))
		}
	}
}

// ObserveVisit records one agent visit of the sweep. A tier outside the
// three is dropped rather than adding a series.
func (m *Metrics) ObserveVisit(tier string, found int) {
	if m == nil {
		return
	}
	t, err := ingest.ParseTier(tier)
	if err != nil {
		return
	}
	m.sweepVisits.WithLabelValues(string(t)).Inc()
	m.sweepFound.WithLabelValues(string(t)).Add(float64(found))
}

func (m *Metrics) observeRun(task string, took time.Duration, run pacer.Run, err error) {
	m.runs.WithLabelValues(task).Inc()
	m.duration.WithLabelValues(task).Observe(took.Seconds())
	if err != nil {
		m.failures.WithLabelValues(task, ClassLabel(run, err)).Inc()
		return
	}
	m.lastSuccess.WithLabelValues(task).SetToCurrentTime()
}

func (m *Metrics) observeBudget(upstream string, run pacer.Run) {
	if run.MinuteRemaining != nil {
		m.budget.WithLabelValues(upstream, WindowMinute).Set(float64(*run.MinuteRemaining))
	}
	if run.MonthRemaining != nil {
		m.budget.WithLabelValues(upstream, WindowMonth).Set(float64(*run.MonthRemaining))
	}
}

// ClassLabel is the class label of a failed attempt: the type of the
// application error the activity returned (what the workflow reads too),
// else the class the result records, else the class of the error chain.
// Anything outside Classes is ClassOther.
func ClassLabel(run pacer.Run, err error) string {
	class := fault.ClassOf(err)
	var appErr *temporal.ApplicationError
	switch {
	case errors.As(err, &appErr):
		class = pacer.ErrorClass(appErr.Type())
	case run.ErrorClass != "":
		class = run.ErrorClass
	}
	if !slices.Contains(Classes, class) {
		return ClassOther
	}
	return string(class)
}

// ServeMux is the HTTP surface of a worker run without the API (--http ""):
// /metrics for Prometheus and /healthz for the process manager.
func (m *Metrics) ServeMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok":true}` + "\n"))
	})
	return mux
}
