package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/pacing"
	"github.com/pacer-dev/pacer/internal/schedule"
	"github.com/pacer-dev/pacer/workflows"
)

func TestWatchViewIsOneLinePerTask(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { x := now.Add(d); return &x }
	left, month := 7, 9100
	st := workflows.Status{
		WorkflowID: "v1", RunID: "0190aaaa-bbbb-cccc", Generation: 3, HistoryLength: 812,
		Now:        now.Add(-time.Minute), // the workflow's last event, older than the local clock
		NextWakeAt: at(4 * time.Minute),
		LastTeneroResult: &pacer.TeneroResult{Run: pacer.Run{DurationMs: 310, MinuteRemaining: &left, MonthRemaining: &month},
			TokensAttempted: 24, Succeeded: 24, Written: 6},
		LastSweepResult:     &pacer.SweepResult{Run: pacer.Run{ErrorClass: pacer.ClassRateLimit, Error: "quota"}},
		ConsecutiveFailures: map[string]int{pacer.TaskTenero: 0, pacer.TaskSweep: 12},
		Tasks: map[string]workflows.TaskStatus{
			pacer.TaskTenero: {Every: "5m0s", LastRunAt: at(-time.Minute), NextDueAt: at(4 * time.Minute), Waiting: "cadence",
				Pacing: &pacing.TaskStatus{Zone: pacing.ZoneSteady, Batch: 24, Interval: "6m15s"}},
			pacer.TaskSweep: {Every: "15m0s", LastRunAt: at(-20 * time.Minute), NextDueAt: at(40 * time.Minute), Waiting: "breaker",
				LastError: &schedule.RunError{Class: "rate_limit", Message: "minute quota\nexhausted", At: *at(-20 * time.Minute)},
				Breaker:   workflows.BreakerStatus{Open: true, ProbeAt: at(40 * time.Minute), Trips: 1, Threshold: 12}},
		},
	}
	var out bytes.Buffer
	require.NoError(t, printWatch(&out, st, now, MinWatchEvery))
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Contains(t, lines[0], "v1  run 0190aaaa…  gen 3  812 events  at 2026-06-01T12:00:00Z")
	require.Equal(t, "running; next wake in 4m0s", lines[1])
	require.Regexp(t, `^TASK +STATE +EVERY +LAST RUN +NEXT DUE +FAILS +BREAKER +BATCH +ZONE +QUOTA MIN/MONTH +LAST RESULT$`, lines[3])
	require.Regexp(t, `^sweep +idle +15m0s +20m0s ago +in 40m0s \(breaker\) +12 +OPEN, probe in 40m0s +- +- +\?/\? +FAILED rate_limit$`, lines[4])
	require.Regexp(t, `^tenero +idle +6m15s +1m0s ago +in 4m0s \(cadence\) +0 +closed +24 +steady +7/9100 +ok 24/24 tokens, 6 written, 310ms$`, lines[5])
	require.Equal(t, "last error  sweep: rate_limit 20m0s ago: minute quota exhausted", lines[7])

	st.PausedUntil = at(30 * time.Minute)
	out.Reset()
	require.NoError(t, printWatch(&out, st, now, MinWatchEvery))
	require.Contains(t, out.String(), "PAUSED until 2026-06-01T12:30:00Z (in 30m0s); next wake in 4m0s")
}

// pacer status shows error classes, not the raw text an activity recorded
// (a pgx error names the database's host, user and name; an upstream error
// quotes its body), in every form.
func TestStatusShowsClassesNotRawText(t *testing.T) {
	t.Parallel()
	const raw = "failed to connect to `user=pacer_rw database=pacer_prod`: 10.3.7.12:5432 (db-primary.internal): <html>upstream-snippet</html>"
	at := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	st := workflows.Status{
		WorkflowID: "v1", RunID: "r1", Now: at,
		LastTeneroResult:    &pacer.TeneroResult{Run: pacer.Run{ErrorClass: pacer.ClassTransport, Error: raw}},
		LastSweepResult:     &pacer.SweepResult{Run: pacer.Run{ErrorClass: pacer.ClassServerError, Error: raw}},
		ConsecutiveFailures: map[string]int{pacer.TaskTenero: 2, pacer.TaskSweep: 1},
		Tasks: map[string]workflows.TaskStatus{
			pacer.TaskTenero: {Every: "5m0s", LastError: &schedule.RunError{Class: string(pacer.ClassTransport), Message: raw, At: at}},
			pacer.TaskSweep:  {Every: "1m0s", LastError: &schedule.RunError{Class: string(pacer.ClassServerError), Message: raw, At: at}},
		},
	}
	for _, tt := range []struct {
		name          string
		asJSON, watch bool
	}{{"table", false, false}, {"json", true, false}, {"watch", false, true}, {"watch json", true, true}} {
		var out bytes.Buffer
		require.NoError(t, writeStatus(&out, st, tt.asJSON, tt.watch, time.Second), tt.name)
		for _, piece := range []string{"pacer_rw", "pacer_prod", "10.3.7.12", "db-primary", "upstream-snippet"} {
			require.NotContains(t, out.String(), piece, tt.name)
		}
		require.Contains(t, out.String(), "transport", tt.name)
	}
}
