package metrics_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/fault"
	"github.com/pacer-dev/pacer/internal/metrics"
	"github.com/pacer-dev/pacer/internal/pacing"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/workflows"
)

func intp(n int) *int { return &n }

// scrape returns what /metrics serves.
func scrape(t *testing.T, m *metrics.Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	b, err := io.ReadAll(rec.Body)
	require.NoError(t, err)
	return string(b)
}

func TestTeneroRunsAreCounted(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	body := scrape(t, m)
	// Failure series exist at zero before any failure, for every task and class.
	require.Contains(t, body, `pacer_task_failures_total{class="rate_limit",task="sweep"} 0`)
	require.Contains(t, body, `pacer_task_failures_total{class="transport",task="tenero"} 0`)

	m.ObserveTenero(1500*time.Millisecond, pacer.TeneroResult{
		Run:     pacer.Run{MinuteRemaining: intp(7), MonthRemaining: intp(9000)},
		Written: 3, Unchanged: 2, Pegged: 5,
	}, nil)
	quota := pacer.Run{RateLimited: true, MinuteRemaining: intp(0), ErrorClass: pacer.ClassRateLimit}
	m.ObserveTenero(time.Second, pacer.TeneroResult{Run: quota, Written: 1, Failed: 1, Skipped: 4},
		temporal.NewNonRetryableApplicationError("quota", string(pacer.ClassRateLimit), nil))

	body = scrape(t, m)
	require.Contains(t, body, `pacer_task_runs_total{task="tenero"} 2`)
	require.Contains(t, body, `pacer_task_failures_total{class="rate_limit",task="tenero"} 1`)
	require.Contains(t, body, `pacer_task_run_duration_seconds_count{task="tenero"} 2`)
	require.Contains(t, body, `pacer_task_run_duration_seconds_sum{task="tenero"} 2.5`)
	// The budget follows the last run that reported it; a window the run did
	// not report keeps its last value.
	require.Contains(t, body, `pacer_upstream_budget_remaining{upstream="tenero",window="minute"} 0`)
	require.Contains(t, body, `pacer_upstream_budget_remaining{upstream="tenero",window="month"} 9000`)
	require.Contains(t, body, `pacer_tenero_tokens_total{outcome="written"} 4`)
	require.Contains(t, body, `pacer_tenero_tokens_total{outcome="skipped"} 4`)
	require.Contains(t, body, `pacer_task_last_success_timestamp_seconds{task="tenero"}`)
	require.NotContains(t, body, `pacer_task_last_success_timestamp_seconds{task="sweep"}`)
}

func TestSweepRunsAreCounted(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	m.ObserveSweep(90*time.Second, pacer.SweepResult{
		Run:     pacer.Run{MinuteRemaining: intp(30)},
		Scanned: 100, Found: 12, Inserted: 7, AlreadyKnown: 2, Pending: 1, Rejected: 2,
		RejectionReasons: map[string]int{"tx_failed": 1, "before_comp_start": 1, "not_a_reason": 9},
	}, nil)
	body := scrape(t, m)
	require.Contains(t, body, `pacer_task_runs_total{task="sweep"} 1`)
	require.Contains(t, body, `pacer_sweep_agents_scanned_total 100`)
	require.Contains(t, body, `pacer_sweep_swaps_total{outcome="inserted"} 7`)
	require.Contains(t, body, `pacer_sweep_swaps_total{outcome="already_known"} 2`)
	require.Contains(t, body, `pacer_sweep_rejections_total{reason="tx_failed"} 1`)
	require.Contains(t, body, `pacer_upstream_budget_remaining{upstream="hiro",window="minute"} 30`)
	require.NotContains(t, body, "not_a_reason", "only the twelve reasons are labels")
}

func TestVisitsAreCountedPerTier(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	m.ObserveVisit("hot", 3)
	m.ObserveVisit("hot", 2)
	m.ObserveVisit("cold", 0)
	m.ObserveVisit("lukewarm", 9) // not a tier: no series
	body := scrape(t, m)
	require.Contains(t, body, `pacer_sweep_visits_total{tier="hot"} 2`)
	require.Contains(t, body, `pacer_sweep_swaps_found_total{tier="hot"} 5`)
	require.Contains(t, body, `pacer_sweep_visits_total{tier="cold"} 1`)
	require.Contains(t, body, `pacer_sweep_visits_total{tier="warm"} 0`, "every tier's series starts at zero")
	require.NotContains(t, body, "lukewarm")
}

func TestClassLabelIsBounded(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		run  pacer.Run
		err  error
		want string
	}{
		{"application error type", pacer.Run{}, temporal.NewApplicationError("x", string(pacer.ClassServerError)), "server_error"},
		{"result class", pacer.Run{ErrorClass: pacer.ClassParseError}, errors.New("x"), "parse_error"},
		{"classified chain", pacer.Run{}, fault.Errorf(pacer.ClassTimeout, "op", "slow"), "timeout"},
		{"unclassified is transport", pacer.Run{}, errors.New("conn reset"), "transport"},
		{"unknown type", pacer.Run{}, temporal.NewApplicationError("x", "SomethingNew"), metrics.ClassOther},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, metrics.ClassLabel(tt.run, tt.err))
		})
	}
}

func TestSchedulerGauges(t *testing.T) {
	t.Parallel()
	until := time.Now().Add(time.Hour)
	view := metrics.SchedulerView{Running: true, HistoryLength: 812, Memo: &workflows.Memo{
		PausedUntil: &until,
		Tasks: map[string]workflows.MemoTask{
			pacer.TaskTenero: {Zone: string(pacing.ZoneGrow), Batch: 20, Interval: pacer.Duration(450 * time.Second)},
			pacer.TaskSweep:  {ConsecutiveFailures: 12, BreakerUntil: &until},
			"prices":         {}, // unknown to this build: no series
		},
	}}
	finished := time.Unix(1_780_000_000, 0)
	runs := map[string]store.TaskRun{
		pacer.TaskTenero: {Status: pacer.RunOK, FinishedAt: &finished},
		pacer.TaskSweep:  {Status: pacer.RunFailed, FinishedAt: &finished},
	}
	var calls int
	m := metrics.New()
	require.NoError(t, m.WatchScheduler(func(context.Context) (metrics.SchedulerView, error) {
		calls++
		return view, nil
	}, func(context.Context) (map[string]store.TaskRun, error) { return runs, nil }, time.Hour))
	body := scrape(t, m)
	for _, want := range []string{
		"pacer_scheduler_up 1",
		"pacer_scheduler_stopped 0",
		"pacer_scheduler_paused 1",
		"pacer_scheduler_history_events 812",
		`pacer_task_consecutive_failures{task="sweep"} 12`,
		`pacer_task_breaker_open{task="sweep"} 1`,
		`pacer_task_breaker_open{task="tenero"} 0`,
		`pacer_pacing_batch{task="tenero"} 20`,
		`pacer_pacing_interval_seconds{task="tenero"} 450`,
		`pacer_pacing_zone{task="tenero",zone="grow"} 1`,
		`pacer_task_last_run_finished_timestamp_seconds{task="sweep"} 1.78e+09`,
		`pacer_task_last_run_failed{task="sweep"} 1`,
		`pacer_task_last_run_failed{task="tenero"} 0`,
	} {
		require.Contains(t, body, want)
	}
	require.NotContains(t, body, "prices")
	require.NotContains(t, body, `pacer_pacing_batch{task="sweep"}`, "no pacing in the memo, no pacing series")
	scrape(t, m)
	require.Equal(t, 1, calls, "a second scrape within the interval reuses the read")

	stopped := metrics.New()
	require.NoError(t, stopped.WatchScheduler(func(context.Context) (metrics.SchedulerView, error) {
		return metrics.SchedulerView{Stopped: true, HistoryLength: 40}, nil
	}, nil, time.Hour))
	body = scrape(t, stopped)
	require.Contains(t, body, "pacer_scheduler_up 0")
	require.Contains(t, body, "pacer_scheduler_stopped 1")

	down := metrics.New()
	require.NoError(t, down.WatchScheduler(func(context.Context) (metrics.SchedulerView, error) {
		return metrics.SchedulerView{}, errors.New("temporal unreachable")
	}, nil, time.Hour))
	body = scrape(t, down)
	require.Contains(t, body, "pacer_scheduler_up 0")
	require.Contains(t, body, "pacer_scheduler_status_errors_total 1")
	require.NotContains(t, body, "pacer_scheduler_paused")
}

func TestNilMetricsRecordNothing(t *testing.T) {
	t.Parallel()
	var m *metrics.Metrics
	require.NotPanics(t, func() {
		m.ObserveTenero(time.Second, pacer.TeneroResult{}, nil)
		m.ObserveSweep(time.Second, pacer.SweepResult{}, errors.New("x"))
		m.ObserveVisit("hot", 1)
	})
}

func TestSDKMetricsShareTheRegistry(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	h, err := m.TemporalHandler()
	require.NoError(t, err)
	tagged := h.WithTags(map[string]string{"activity_type": "Sweep", "task_queue": "pacer"})
	tagged.Counter("temporal_activity_execution_failed").Inc(2)
	tagged.Timer("temporal_activity_execution_latency").Record(75 * time.Second)
	tagged.Gauge("temporal_num_pollers").Update(3)

	body := scrape(t, m)
	require.Contains(t, body, `temporal_activity_execution_failed_total{activity_type="Sweep",task_queue="pacer"} 2`)
	require.Contains(t, body, `temporal_activity_execution_latency_seconds_bucket{activity_type="Sweep",task_queue="pacer",le="120"} 1`)
	require.Contains(t, body, `temporal_activity_execution_latency_seconds_bucket{activity_type="Sweep",task_queue="pacer",le="60"} 0`)
	require.Contains(t, body, `temporal_num_pollers{activity_type="Sweep",task_queue="pacer"} 3`)
	require.Contains(t, body, "pacer_task_runs_total", "pacer's series beside the SDK's")
	require.Contains(t, body, "go_goroutines")
	require.NotContains(t, body, "otel_scope", "no per-scope labels")
	require.Contains(t, body, "pacer_temporal_metrics_errors_total 0")
}

func TestScheduleSeriesAreBounded(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	body := scrape(t, m)
	require.Contains(t, body, `pacer_schedule_missed_total{reason="dst_gap",task="rollup"} 0`, "series start at zero")

	m.ObserveMissed("rollup", map[string]int{pacer.SkipPaused: 3, pacer.RunCoalesced: 2, "made_up": 1})
	m.ObserveMissed("my-secret-task", map[string]int{pacer.SkipCatchup: 4})
	m.ObserveLateness("rollup", 90*time.Second)
	m.ObserveLateness("rollup", -time.Second) // clocks disagree: not early
	m.ObserveLateness("nope", time.Hour)

	body = scrape(t, m)
	require.Contains(t, body, `pacer_schedule_missed_total{reason="paused",task="rollup"} 3`)
	require.Contains(t, body, `pacer_schedule_missed_total{reason="coalesced",task="rollup"} 2`)
	require.Contains(t, body, `pacer_schedule_missed_total{reason="other",task="rollup"} 1`)
	require.Contains(t, body, `pacer_schedule_missed_total{reason="catchup_skip",task="other"} 4`)
	require.Contains(t, body, `pacer_schedule_lateness_seconds_count{task="rollup"} 2`)
	require.Contains(t, body, `pacer_schedule_lateness_seconds_sum{task="rollup"} 90`)
	require.Contains(t, body, `pacer_schedule_lateness_seconds_bucket{task="rollup",le="0.25"} 1`)
	require.Contains(t, body, `pacer_schedule_lateness_seconds_count{task="other"} 1`)
	require.NotContains(t, body, "my-secret-task")
	require.NotContains(t, body, "made_up")

	var none *metrics.Metrics
	none.ObserveMissed("rollup", map[string]int{pacer.SkipPaused: 1})
	none.ObserveLateness("rollup", time.Second)
}
