package metrics

import (
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pacer-dev/pacer"
)

// MissedReasons are the values of the reason label of
// pacer_schedule_missed_total: why an occurrence passed without a run of
// its own (the skip reasons, or coalesced into another run).
var MissedReasons = []string{pacer.SkipPaused, pacer.SkipCatchup, pacer.SkipDSTGap, pacer.RunCoalesced}

// ScheduleTasks are the values of the task label of the schedule series;
// any other task is "other".
var ScheduleTasks = []string{pacer.TaskTenero, pacer.TaskSweep, pacer.TaskRollup, pacer.TaskDeliver}

// LabelOther stands for a task or reason outside its fixed set.
const LabelOther = "other"

// scheduleMetrics are the series of the occurrence ledger (SPEC §3.4),
// recorded where the activities write it.
type scheduleMetrics struct {
	missed   *prometheus.CounterVec
	lateness *prometheus.HistogramVec
}

func newScheduleMetrics() scheduleMetrics {
	s := scheduleMetrics{
		missed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pacer_schedule_missed_total",
			Help: "Scheduled occurrences that got no run of their own, by task and reason (paused, catchup_skip, dst_gap, coalesced), counted once, when the ledger records them.",
		}, []string{"task", "reason"}),
		lateness: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "pacer_schedule_lateness_seconds",
			Help: "How long after its nominal time a scheduled run first started, by task (jitter and catch-up included).",
			// On time is well under a second; a catch-up after an outage is
			// hours, a backfill after a long pause days.
			Buckets: []float64{0.25, 1, 5, 15, 30, 60, 300, 900, 3600, 4 * 3600, 24 * 3600, 7 * 24 * 3600},
		}, []string{"task"}),
	}
	for _, task := range ScheduleTasks {
		for _, reason := range MissedReasons {
			s.missed.WithLabelValues(task, reason)
		}
	}
	return s
}

func (s scheduleMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{s.missed, s.lateness}
}

func bounded(v string, set []string) string {
	if slices.Contains(set, v) {
		return v
	}
	return LabelOther
}

// ObserveMissed counts occurrences the ledger just recorded as passed, by
// reason (as store.RecordPassed returns them).
func (m *Metrics) ObserveMissed(task string, byReason map[string]int) {
	if m == nil {
		return
	}
	for reason, n := range byReason {
		if n > 0 {
			m.schedule.missed.WithLabelValues(bounded(task, ScheduleTasks), bounded(reason, MissedReasons)).Add(float64(n))
		}
	}
}

// ObserveLateness records how late a scheduled run first started.
func (m *Metrics) ObserveLateness(task string, late time.Duration) {
	if m == nil {
		return
	}
	m.schedule.lateness.WithLabelValues(bounded(task, ScheduleTasks)).Observe(max(late, 0).Seconds())
}
