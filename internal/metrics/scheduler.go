package metrics

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/pacing"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/workflows"
)

// SchedulerView is what the metrics read of the scheduler without a
// status query: what DescribeWorkflowExecution says of its latest run (a
// read, not a billed action) and the memo the workflow keeps for this.
type SchedulerView struct {
	// Running is true while a run is open; Stopped when the last run was
	// stopped on purpose (pacer stop).
	Running, Stopped bool
	HistoryLength    int
	// WorkflowTaskAttempt is the attempt of the run's pending workflow
	// task (0: none); WorkflowTaskFailing says its tasks keep failing
	// (worker.TaskHealth), FailingSince from when. Version is the
	// deployment version the run is pinned to.
	WorkflowTaskAttempt int
	WorkflowTaskFailing bool
	FailingSince        *time.Time
	Version             string
	// Memo is nil for a run that has not written one yet.
	Memo *workflows.Memo
}

// ViewFunc describes the scheduler.
type ViewFunc func(ctx context.Context) (SchedulerView, error)

// LatestRunsFunc reads each task's latest finished run from the task_runs
// ledger the activities write (store.Store.LatestRuns).
type LatestRunsFunc func(ctx context.Context) (map[string]store.TaskRun, error)

// Zones are the values of the zone label: the pacing controller's zones.
var Zones = []pacing.Zone{
	pacing.ZoneWarmup, pacing.ZoneCooldown, pacing.ZoneBackoff,
	pacing.ZoneSteady, pacing.ZoneGrow, pacing.ZoneSurge,
}

// WatchScheduler adds the gauges only the scheduler knows (pause, breakers,
// failures in a row, what pacing decided), read from its memo, and the
// last run of each task, read from the task_runs ledger. Neither costs a
// Temporal action: the memo comes with a workflow description, and the
// ledger is Postgres. The workflow is one for all processes, so one process
// kind (the API) should serve them. Scrapes within every of the last read
// reuse it.
func (m *Metrics) WatchScheduler(view ViewFunc, runs LatestRunsFunc, every time.Duration) error {
	return m.reg.Register(newSchedulerCollector(view, runs, every))
}

type schedulerCollector struct {
	view  ViewFunc
	runs  LatestRunsFunc
	every time.Duration

	mu       sync.Mutex // one read at a time; guards the fields below
	last     *SchedulerView
	lastRuns map[string]store.TaskRun
	lastAt   time.Time

	up, stopped, paused, history, wftFailing, wftAttempt, failures, breaker, batch, interval, zone, broken, lastRun, lastFailed *prometheus.Desc
	errors                                                                                                                      prometheus.Counter
}

func newSchedulerCollector(view ViewFunc, runs LatestRunsFunc, every time.Duration) *schedulerCollector {
	task := []string{"task"}
	return &schedulerCollector{
		view:  view,
		runs:  runs,
		every: every,
		up: prometheus.NewDesc("pacer_scheduler_up",
			"1 while the scheduler workflow runs (the gauges below are from its memo), 0 when it does not or cannot be described.", nil, nil),
		stopped: prometheus.NewDesc("pacer_scheduler_stopped",
			"1 when the scheduler was stopped on purpose (pacer stop): workers leave it stopped until pacer start.", nil, nil),
		paused: prometheus.NewDesc("pacer_scheduler_paused",
			"1 while the scheduler is paused.", nil, nil),
		history: prometheus.NewDesc("pacer_scheduler_history_events",
			"Events in the scheduler run's history; it continues as new before it grows large.", nil, nil),
		wftFailing: prometheus.NewDesc("pacer_scheduler_workflow_task_failing",
			"1 while the scheduler's workflow tasks keep failing (a retried workflow task: nondeterminism, a panic); it makes no progress meanwhile.", nil, nil),
		wftAttempt: prometheus.NewDesc("pacer_scheduler_workflow_task_attempt",
			"Attempt of the scheduler's pending workflow task (0: none pending).", nil, nil),
		failures: prometheus.NewDesc("pacer_task_consecutive_failures",
			"Failed runs in a row of the task, as the scheduler counts them.", task, nil),
		breaker: prometheus.NewDesc("pacer_task_breaker_open",
			"1 while the task's circuit breaker is open (it probes hourly; resume or refresh closes it).", task, nil),
		batch: prometheus.NewDesc("pacer_pacing_batch",
			"Items per run the pacing controller chose for the task (tenero; the sweep's plan sizes each step: none).", task, nil),
		interval: prometheus.NewDesc("pacer_pacing_interval_seconds",
			"Interval between runs the pacing controller chose for the task.", task, nil),
		zone: prometheus.NewDesc("pacer_pacing_zone",
			"1 for the pacing controller's current zone of the task.", []string{"task", "zone"}, nil),
		broken: prometheus.NewDesc("pacer_task_broken",
			"1 while the task's scheduling code is fenced off after a panic (the other tasks run on; resume retries it).", task, nil),
		lastRun: prometheus.NewDesc("pacer_task_last_run_finished_timestamp_seconds",
			"When the task's latest run finished, from the task_runs ledger (every worker's runs).", task, nil),
		lastFailed: prometheus.NewDesc("pacer_task_last_run_failed",
			"1 when the task's latest run failed, from the task_runs ledger.", task, nil),
		errors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "pacer_scheduler_status_errors_total",
			Help: "Reads of the scheduler's description or of the run ledger for metrics that failed.",
		}),
	}
}

func (c *schedulerCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.up, c.stopped, c.paused, c.history, c.wftFailing, c.wftAttempt, c.failures, c.breaker, c.batch,
		c.interval, c.zone, c.broken, c.lastRun, c.lastFailed} {
		ch <- d
	}
	c.errors.Describe(ch)
}

func (c *schedulerCollector) Collect(ch chan<- prometheus.Metric) {
	defer c.errors.Collect(ch)
	v, runs := c.current()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	for name, r := range runs {
		if !slices.Contains(Tasks, name) || r.FinishedAt == nil {
			continue // a task this build does not know would be an unbounded label
		}
		gauge(c.lastRun, float64(r.FinishedAt.UnixMilli())/1000, name)
		gauge(c.lastFailed, flag(r.Status == pacer.RunFailed), name)
	}
	if v == nil {
		gauge(c.up, 0)
		return
	}
	gauge(c.up, flag(v.Running))
	gauge(c.stopped, flag(v.Stopped))
	gauge(c.history, float64(v.HistoryLength))
	gauge(c.wftFailing, flag(v.WorkflowTaskFailing))
	gauge(c.wftAttempt, float64(v.WorkflowTaskAttempt))
	if v.Memo == nil {
		return
	}
	gauge(c.paused, flag(v.Memo.PausedUntil != nil && v.Memo.PausedUntil.After(time.Now())))
	for name, t := range v.Memo.Tasks {
		if !slices.Contains(Tasks, name) {
			continue
		}
		gauge(c.failures, float64(t.ConsecutiveFailures), name)
		gauge(c.breaker, flag(t.BreakerUntil != nil), name)
		gauge(c.broken, flag(t.Broken != ""), name)
		if t.Zone == "" {
			continue // a run without pacing
		}
		if t.Batch > 0 { // the sweep has none
			gauge(c.batch, float64(t.Batch), name)
		}
		gauge(c.interval, time.Duration(t.Interval).Seconds(), name)
		if z := pacing.Zone(t.Zone); slices.Contains(Zones, z) {
			gauge(c.zone, 1, name, t.Zone)
		}
	}
}

// current returns the last reads if they are recent, else reads again.
func (c *schedulerCollector) current() (*SchedulerView, map[string]store.TaskRun) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.lastAt.IsZero() && time.Since(c.lastAt) < c.every {
		return c.last, c.lastRuns
	}
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	c.last, c.lastRuns, c.lastAt = nil, nil, time.Now()
	if v, err := c.view(ctx); err != nil {
		c.errors.Inc()
	} else {
		c.last = &v
	}
	if c.runs != nil {
		if runs, err := c.runs(ctx); err != nil {
			c.errors.Inc()
		} else {
			c.lastRuns = runs
		}
	}
	return c.last, c.lastRuns
}

func flag(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
