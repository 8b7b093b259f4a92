package activities_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/cron"
	"github.com/pacer-dev/pacer/internal/metrics"
	"github.com/pacer-dev/pacer/internal/sim"
)

// An occurrence runs once: a repeated wake-up or a retried attempt after the
// run finished gets the recorded result and calls no upstream.
func TestOccurrenceRunsOnce(t *testing.T) {
	t.Parallel()
	f := newTeneroFixture(t, sim.Config{Seed: 7})
	occ := pacer.Occurrence{Task: pacer.TaskTenero, NominalAt: time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)}

	first, err := f.runWith(t, pacer.TeneroInput{Occurrence: occ})
	require.NoError(t, err)
	require.Positive(t, first.Requests)
	calls := f.sim.Stats().Total

	again, err := f.runWith(t, pacer.TeneroInput{Occurrence: occ})
	require.NoError(t, err)
	require.Equal(t, first.Succeeded, again.Succeeded)
	require.Equal(t, first.StartedAt, again.StartedAt, "the recorded result, not a new run")
	require.Equal(t, calls, f.sim.Stats().Total, "no upstream call for a finished occurrence")

	run, found, err := f.st.TaskRun(t.Context(), pacer.TaskTenero, occ.NominalAt)
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, pacer.RunOK, run.Status)
	require.Equal(t, 1, run.Attempts, "a finished occurrence is not begun again")
}

// A manual refresh is recorded as manual.
func TestManualRunIsRecordedAsManual(t *testing.T) {
	t.Parallel()
	f := newTeneroFixture(t, sim.Config{Seed: 7})
	occ := pacer.Occurrence{Task: pacer.TaskTenero, NominalAt: time.Date(2026, 11, 1, 10, 0, 1, 0, time.UTC), Manual: true}
	_, err := f.runWith(t, pacer.TeneroInput{Occurrence: occ})
	require.NoError(t, err)
	run, found, err := f.st.TaskRun(t.Context(), pacer.TaskTenero, occ.NominalAt)
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, pacer.ReasonManual, run.Reason)
	require.Equal(t, pacer.RunOK, run.Status)
}

// The planner's decisions after a 3-hour outage of an hourly task, run
// through the activity: every nominal time ends up in task_runs with its
// status and reason, and the schedule metrics count them once.
func TestEveryMissedOccurrenceReachesTheLedger(t *testing.T) {
	t.Parallel()
	// Recent nominal times: the ledger forgets rows older than its retention.
	nine := time.Now().UTC().Truncate(time.Hour).Add(-24 * time.Hour)
	at := func(h int) time.Time { return nine.Add(time.Duration(h-9) * time.Hour) }
	tests := []struct {
		catchup    cron.Catchup
		want       []string
		wantMissed map[string]int
	}{
		{cron.CatchupSkip, []string{"10 skipped catchup_skip", "11 skipped catchup_skip", "12 skipped catchup_skip", "13 ok"},
			map[string]int{pacer.SkipCatchup: 3}},
		{cron.CatchupLatest, []string{"10 skipped catchup_skip", "11 skipped catchup_skip", "12 ok", "13 ok"},
			map[string]int{pacer.SkipCatchup: 2}},
		{cron.CatchupAll, []string{"10 ok", "11 ok", "12 ok", "13 ok"}, nil},
		{cron.CatchupCoalesce, []string{"10 coalesced into 12", "11 coalesced into 12", "12 ok missing 3", "13 ok"},
			map[string]int{pacer.RunCoalesced: 2}},
		{cron.CatchupBackfill, []string{"10 ok", "11 ok", "12 ok", "13 ok"}, nil},
	}
	for _, tt := range tests {
		t.Run(string(tt.catchup), func(t *testing.T) {
			t.Parallel()
			f := newTeneroFixture(t, sim.Config{Seed: 7})
			s, err := cron.New(cron.Spec{Cron: "0 * * * *", Catchup: tt.catchup})
			require.NoError(t, err)
			st := cron.State{Last: at(9)}
			runs := 0
			for _, wake := range []time.Time{at(12).Add(30 * time.Minute), at(13)} {
				st, _ = s.Plan(pacer.TaskTenero, st, wake, nil)
				for {
					occ, ok := st.Take()
					if !ok {
						break
					}
					_, err := f.runWith(t, pacer.TeneroInput{Occurrence: occ})
					require.NoError(t, err)
					runs++
				}
			}
			rows, err := f.st.TaskRuns(t.Context(), pacer.TaskTenero, at(10), 100)
			require.NoError(t, err)
			hour := func(t time.Time) int { return int(t.Sub(nine)/time.Hour) + 9 }
			var got []string
			for _, r := range rows {
				line := fmt.Sprintf("%02d %s", hour(r.NominalAt), r.Status)
				if r.Reason != "" {
					line += " " + r.Reason
				}
				if r.CoalescedInto != nil {
					line += fmt.Sprintf(" into %02d", hour(*r.CoalescedInto))
				}
				if r.MissedCount != nil {
					line += fmt.Sprintf(" missing %d", *r.MissedCount)
				}
				got = append(got, line)
			}
			require.Equal(t, tt.want, got)

			body := scrapeMetrics(t, f.metrics)
			for _, reason := range metrics.MissedReasons {
				require.Contains(t, body, fmt.Sprintf(`pacer_schedule_missed_total{reason=%q,task="tenero"} %d`, reason, tt.wantMissed[reason]))
			}
			require.Contains(t, body, fmt.Sprintf(`pacer_schedule_lateness_seconds_count{task="tenero"} %d`, runs))
		})
	}
}

func scrapeMetrics(t *testing.T, m *metrics.Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	return rec.Body.String()
}
