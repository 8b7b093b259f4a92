package workflows_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.uber.org/zap"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/activities"
	"github.com/pacer-dev/pacer/internal/cron"
	"github.com/pacer-dev/pacer/internal/discovery"
	"github.com/pacer-dev/pacer/internal/schedule"
	"github.com/pacer-dev/pacer/internal/testenv"
	"github.com/pacer-dev/pacer/workflows"
)

// hourly is an hourly cron schedule with the given catch-up policy.
func hourly(t *testing.T, catchup cron.Catchup) cron.Schedules {
	t.Helper()
	spec, err := cron.ParseSpec([]byte(fmt.Sprintf(`{"cron":"0 * * * *","catchup":%q}`, catchup)))
	require.NoError(t, err)
	return cron.Schedules{pacer.TaskRollup: spec}
}

// A scheduler that was down for three hours (workers gone from 09:00:30 to
// 12:20) comes back carrying its state: the 10:00, 11:00 and 12:00
// occurrences of an hourly rollup were missed, 13:00 is on time. Under each
// catch-up policy exactly the expected runs happen, and every one of those
// nominal times reaches the task_runs ledger, written by the real Rollup
// activity on a real Postgres, with its status and reason.
func TestCronCatchUpAfterOutage(t *testing.T) {
	t.Parallel()
	// Yesterday: the ledger prunes what is older than its retention.
	y := time.Now().UTC().AddDate(0, 0, -1)
	day := func(h, m int) time.Time { return time.Date(y.Year(), y.Month(), y.Day(), h, m, 0, 0, time.UTC) }
	type row struct{ status, reason string }
	ok := row{pacer.RunOK, ""}
	skipped := row{pacer.RunSkipped, pacer.SkipCatchup}
	coalesced := row{pacer.RunCoalesced, ""}
	for _, tc := range []struct {
		catchup cron.Catchup
		runs    []time.Time // the nominal times run, in order
		ledger  map[time.Time]row
	}{
		{cron.CatchupSkip, []time.Time{day(13, 0)},
			map[time.Time]row{day(10, 0): skipped, day(11, 0): skipped, day(12, 0): skipped, day(13, 0): ok}},
		{cron.CatchupLatest, []time.Time{day(12, 0), day(13, 0)},
			map[time.Time]row{day(10, 0): skipped, day(11, 0): skipped, day(12, 0): ok, day(13, 0): ok}},
		{cron.CatchupAll, []time.Time{day(10, 0), day(11, 0), day(12, 0), day(13, 0)},
			map[time.Time]row{day(10, 0): ok, day(11, 0): ok, day(12, 0): ok, day(13, 0): ok}},
		{cron.CatchupBackfill, []time.Time{day(10, 0), day(11, 0), day(12, 0), day(13, 0)},
			map[time.Time]row{day(10, 0): ok, day(11, 0): ok, day(12, 0): ok, day(13, 0): ok}},
		{cron.CatchupCoalesce, []time.Time{day(12, 0), day(13, 0)},
			map[time.Time]row{day(10, 0): coalesced, day(11, 0): coalesced, day(12, 0): ok, day(13, 0): ok}},
	} {
		t.Run(string(tc.catchup), func(t *testing.T) {
			t.Parallel()
			st := testenv.Store(t)
			acts := activities.New(activities.Options{Discovery: discovery.Config{Mode: "agents"}, Store: st, Logger: zap.NewNop(),
				TeneroBaseURL: "http://127.0.0.1:1", HiroBaseURL: "http://127.0.0.1:1"})
			var ran []pacer.Occurrence
			var suite testsuite.WorkflowTestSuite
			env := suite.NewTestWorkflowEnvironment()
			env.SetStartTime(day(12, 20))
			env.SetTestTimeout(time.Minute)
			workflows.Register(env)
			env.RegisterActivityWithOptions(func(ctx context.Context, in pacer.RollupInput) (pacer.RollupResult, error) {
				ran = append(ran, in.Occurrence)
				return acts.Rollup(ctx, in)
			}, activity.RegisterOptions{Name: workflows.ActivityRollup})
			env.RegisterActivityWithOptions(func(context.Context, pacer.TeneroInput) (pacer.TeneroResult, error) {
				return pacer.TeneroResult{}, nil
			}, activity.RegisterOptions{Name: workflows.ActivityRefreshTenero})
			env.RegisterActivityWithOptions(func(context.Context, pacer.SweepInput) (pacer.SweepResult, error) {
				return pacer.SweepResult{}, nil
			}, activity.RegisterOptions{Name: workflows.ActivitySweep})
			env.RegisterActivityWithOptions(func(context.Context, pacer.DeliverInput) (pacer.DeliverResult, error) {
				return pacer.DeliverResult{}, nil
			}, activity.RegisterOptions{Name: workflows.ActivityDeliver})
			env.RegisterActivityWithOptions(func(context.Context, pacer.FinalizeInput) (pacer.FinalizeResult, error) {
				return pacer.FinalizeResult{}, nil
			}, activity.RegisterOptions{Name: workflows.ActivityFinalize})
			carried := &workflows.State{Tasks: []*schedule.Task{{
				Name: pacer.TaskRollup, LastRunAt: ptr(day(9, 0)), Started: 7, Finished: 7,
				Cron: &cron.State{Last: day(9, 0)},
			}}}
			env.RegisterDelayedCallback(func() {
				v, err := env.QueryWorkflow(workflows.QueryStatus)
				require.NoError(t, err)
				var status workflows.Status
				require.NoError(t, v.Get(&status))
				st := status.Tasks[pacer.TaskRollup]
				require.Equal(t, "0 * * * *", st.Schedule.Cron)
				require.EqualValues(t, 3, st.Missed, "10:00, 11:00 and 12:00")
				if tc.catchup == cron.CatchupCoalesce {
					require.EqualValues(t, 2, st.Coalesced)
				}
				require.Equal(t, day(14, 0), *st.Occurrences.NextAt)
			}, 70*time.Minute)
			env.RegisterDelayedCallback(env.CancelWorkflow, 71*time.Minute)
			env.ExecuteWorkflow(workflows.WorkflowType, workflows.SchedulerInput{
				Config: workflows.Config{Schedules: hourly(t, tc.catchup)}, State: carried})
			require.True(t, temporal.IsCanceledError(env.GetWorkflowError()), "workflow ended with %v", env.GetWorkflowError())

			var nominal []time.Time
			for _, o := range ran {
				require.False(t, o.Manual)
				nominal = append(nominal, o.NominalAt.UTC())
			}
			require.Equal(t, tc.runs, nominal)
			if tc.catchup == cron.CatchupCoalesce {
				c := ran[0].Coalesced
				require.NotNil(t, c, "the coalesced run carries the range it stands for")
				require.Equal(t, 3, c.Count)
				require.Equal(t, day(10, 0), c.First.UTC())
				require.Equal(t, day(12, 0), c.Last.UTC())
			}

			rows, err := st.TaskRuns(context.Background(), pacer.TaskRollup, day(9, 30), 100)
			require.NoError(t, err)
			got := map[time.Time]row{}
			for _, r := range rows {
				got[r.NominalAt.UTC()] = row{r.Status, r.Reason}
				if r.Status == pacer.RunCoalesced {
					require.Equal(t, day(12, 0), r.CoalescedInto.UTC())
				}
			}
			require.Equal(t, tc.ledger, got, "every nominal time from 10:00 to 13:00 once, with its status and reason")
		})
	}
}

func ptr[T any](v T) *T { return &v }

// Reconfigure sets a task's schedule and leaves the others; a cadence given
// for tenero or sweep replaces its schedule; a bad one changes nothing.
func TestReconfigureSchedules(t *testing.T) {
	t.Parallel()
	cfg, err := workflows.ParseReconfigure([]byte(`{"schedules":{"rollup":{"cron":"*/10 * * * *","tz":"Europe/London","catchup":"coalesce"},"tenero":{"every":"10m"}}}`), workflows.Config{})
	require.NoError(t, err)
	require.Equal(t, "*/10 * * * *", cfg.Schedules[pacer.TaskRollup].Cron)
	require.Equal(t, cron.CatchupCoalesce, cfg.Schedules[pacer.TaskRollup].Catchup)
	require.Equal(t, 10*time.Minute, cfg.Schedules[pacer.TaskTenero].Every)

	next, err := workflows.ParseReconfigure([]byte(`{"teneroEvery":"2m"}`), cfg)
	require.NoError(t, err)
	require.Equal(t, pacer.Duration(2*time.Minute), next.TeneroEvery)
	require.NotContains(t, next.Schedules, pacer.TaskTenero, "the cadence given replaces the schedule")
	require.Equal(t, cfg.Schedules[pacer.TaskRollup], next.Schedules[pacer.TaskRollup])
	require.Contains(t, cfg.Schedules, pacer.TaskTenero, "the config in force is not changed in place")

	for give, want := range map[string]string{
		`{"schedules":{"rollup":{"cron":"* * * * *","catchup":"sometimes"}}}`: "catchup",
		`{"schedules":{"rollup":{"cron":"* * * * *","tz":"Mars/Olympus"}}}`:   "Mars/Olympus",
		`{"schedules":{"nope":{"every":"1m"}}}`:                               "unknown task",
		`{"schedules":{"sweep":{"every":"1ms"}}}`:                             "below 1s",
		`{"schedules":[]}`: "schedules",
	} {
		got, err := workflows.ParseReconfigure([]byte(give), cfg)
		require.ErrorContains(t, err, want, give)
		require.Equal(t, cfg, got, "a rejected reconfigure changes nothing")
	}
}
