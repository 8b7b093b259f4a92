//go:build catchup

package worker_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/cron"
	"github.com/pacer-dev/pacer/internal/rollup"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/internal/webhook"
	"github.com/pacer-dev/pacer/internal/webhooktest"
	"github.com/pacer-dev/pacer/worker"
	"github.com/pacer-dev/pacer/workflows"
)

// rollupEvery is a rollup schedule for the real-stack checks.
func rollupEvery(t *testing.T, spec string) cron.Schedules {
	t.Helper()
	sp, err := cron.ParseSpec([]byte(spec))
	require.NoError(t, err)
	return cron.Schedules{pacer.TaskRollup: sp}
}

func (s *stack) rollupRuns(t *testing.T, since time.Time) []store.TaskRun {
	t.Helper()
	runs, err := s.st.TaskRuns(context.Background(), pacer.TaskRollup, since, 1000)
	require.NoError(t, err)
	return runs
}

// A rollup occurrence that fails (its table unavailable for two minutes)
// is not lost: task_runs shows it failed, it is retried on its back-off,
// ends ok once the table is back, and its hour is delivered.
func TestFailedRollupIsRunLaterAndDelivered(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStack(t, workflows.Config{TeneroEvery: pacer.Duration(time.Hour), SweepEvery: pacer.Duration(time.Hour),
		Schedules: rollupEvery(t, `{"cron":"* * * * *","catchup":"coalesce"}`)})
	r := webhooktest.New(webhooktest.Behaviour{})
	t.Cleanup(r.Close)
	sub := store.Subscriber{ID: webhook.NewSubscriberID(), URL: r.URL, Secret: webhook.NewSecret(),
		Events: []string{rollup.EventHourly}, CreatedAt: time.Now().Add(-2 * time.Hour)}
	require.NoError(t, s.st.AddSubscriber(ctx, sub))
	r.SetSecret(sub.Secret)
	_, err := s.st.Pool().Exec(ctx, `alter table rollups rename to rollups_offline`)
	require.NoError(t, err)
	offline := time.Now()
	s.startWorker(t)
	_, err = worker.EnsureRunning(ctx, s.tc, s.sched)
	require.NoError(t, err)

	var failed time.Time
	eventually(t, 100*time.Second, "an occurrence failed", func() bool {
		for _, run := range s.rollupRuns(t, offline.Add(-time.Minute)) {
			if run.Status == pacer.RunFailed {
				failed = run.NominalAt
				return true
			}
		}
		return false
	})
	t.Logf("%s failed; the table comes back at %s", failed.Format(time.TimeOnly), offline.Add(2*time.Minute).Format(time.TimeOnly))
	time.Sleep(time.Until(offline.Add(2 * time.Minute)))
	_, err = s.st.Pool().Exec(ctx, `alter table rollups_offline rename to rollups`)
	require.NoError(t, err)

	eventually(t, 4*time.Minute, "the failed occurrence ran later, ok", func() bool {
		row, found, err := s.st.TaskRun(ctx, pacer.TaskRollup, failed)
		return err == nil && found && row.Status == pacer.RunOK
	})
	row, _, err := s.st.TaskRun(ctx, pacer.TaskRollup, failed)
	require.NoError(t, err)
	require.Greater(t, row.Attempts, 1, "failed, then ok")
	hour := rollup.HourBefore(failed)
	eventually(t, 2*time.Minute, "its hour delivered", func() bool {
		for _, a := range r.Arrivals() {
			if a.ID == webhook.DeliveryID(sub.ID, rollup.EventHourly, hour.Start) && a.Acked {
				return true
			}
		}
		return false
	})
	t.Logf("%s: attempts %d, finished %s; hour %s delivered", failed.Format(time.TimeOnly), row.Attempts,
		row.FinishedAt.Format(time.TimeOnly), hour.Start.Format(time.TimeOnly))
}

// A backfill of a 6-hour past range writes its 6 occurrences to task_runs,
// each as of its own nominal time, and their rollups.
func TestBackfillSixHoursOnTheRealStack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStack(t, workflows.Config{TeneroEvery: pacer.Duration(time.Hour), SweepEvery: pacer.Duration(time.Hour),
		Schedules: rollupEvery(t, `{"cron":"5 * * * *","catchup":"skip"}`)})
	s.startWorker(t)
	_, err := worker.EnsureRunning(ctx, s.tc, s.sched)
	require.NoError(t, err)
	eventually(t, 30*time.Second, "the scheduler answers", func() bool { _, err := statusOrErr(s); return err == nil })

	to := time.Now().UTC().Truncate(time.Hour).Add(-time.Hour)
	from := to.Add(-6 * time.Hour)
	res, err := worker.Update[workflows.BackfillResult](ctx, s.tc, s.sched.WorkflowID, workflows.UpdateBackfill,
		workflows.BackfillInput{Task: pacer.TaskRollup, From: from.Format(time.RFC3339), To: to.Format(time.RFC3339)})
	require.NoError(t, err)
	require.Equal(t, 6, res.Queued, "05 past each of the six hours")
	_, err = worker.Update[workflows.BackfillResult](ctx, s.tc, s.sched.WorkflowID, workflows.UpdateBackfill,
		json.RawMessage(`{"task":"rollup","from":"yesterday","to":"now"}`))
	require.ErrorContains(t, err, "RFC3339", "a malformed range is rejected before history")

	eventually(t, 2*time.Minute, "six ok occurrences", func() bool {
		ok := 0
		for _, run := range s.rollupRuns(t, from) {
			if run.Status == pacer.RunOK && !run.NominalAt.After(to) {
				ok++
			}
		}
		return ok == 6
	})
	for _, at := range res.Times {
		hour := rollup.HourBefore(at)
		rows, err := s.st.Rollups(ctx, store.RollupQuery{Period: rollup.Hour, From: hour.Start, To: hour.End, Limit: 10})
		require.NoError(t, err)
		require.NotEmpty(t, rows, "the hour before %s has its rollups", at)
	}
}

// Moving rollup from one cron spec to another never counts the new spec's
// past times as missed: nothing is backfilled.
func TestCronToCronReconfigureOnTheRealStack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStack(t, workflows.Config{TeneroEvery: pacer.Duration(time.Hour), SweepEvery: pacer.Duration(time.Hour),
		Schedules: rollupEvery(t, `{"cron":"5 * * * *","catchup":"backfill"}`)})
	s.startWorker(t)
	started := time.Now()
	_, err := worker.EnsureRunning(ctx, s.tc, s.sched)
	require.NoError(t, err)
	// Long enough that the new spec fired twice since the scheduler began.
	time.Sleep(time.Until(started.Add(130 * time.Second)))
	at := time.Now()
	_, err = worker.Update[workflows.ReconfigureResult](ctx, s.tc, s.sched.WorkflowID, workflows.UpdateReconfigure,
		json.RawMessage(`{"schedules":{"rollup":{"cron":"* * * * *","catchup":"backfill"}}}`))
	require.NoError(t, err)
	eventually(t, 100*time.Second, "the new spec's first occurrence ran", func() bool {
		return len(s.rollupRuns(t, started.Add(-time.Hour))) > 0
	})
	time.Sleep(5 * time.Second)
	for _, run := range s.rollupRuns(t, started.Add(-time.Hour)) {
		require.True(t, run.NominalAt.After(at), "%s ran: before the reconfigure at %s", run.NominalAt, at)
	}
	st := s.status(t)
	require.Zero(t, st.Tasks[pacer.TaskRollup].Missed)
}

// pause → a new run → resume → terminate: the worker restarts the
// scheduler from the state its last run began with (paused) and the memo
// (resumed), and rollup runs on time.
func TestPauseRestartResumeTerminateOnTheRealStack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStack(t, workflows.Config{TeneroEvery: pacer.Duration(time.Hour), SweepEvery: pacer.Duration(time.Hour),
		Schedules: rollupEvery(t, `{"cron":"* * * * *","catchup":"skip"}`)})
	s.startWorker(t)
	_, err := worker.EnsureRunning(ctx, s.tc, s.sched)
	require.NoError(t, err)
	eventually(t, 30*time.Second, "the scheduler answers", func() bool { _, err := statusOrErr(s); return err == nil })
	_, err = worker.Update[workflows.PauseResult](ctx, s.tc, s.sched.WorkflowID, workflows.UpdatePause, workflows.PauseInput{For: "720h"})
	require.NoError(t, err)
	first := s.status(t).RunID
	// A new run: reconfigure continues as new with the pause in its state.
	_, err = worker.Update[workflows.ReconfigureResult](ctx, s.tc, s.sched.WorkflowID, workflows.UpdateReconfigure,
		json.RawMessage(`{"teneroEvery":"59m"}`))
	require.NoError(t, err)
	eventually(t, 30*time.Second, "a new run", func() bool {
		st, err := statusOrErr(s)
		return err == nil && st.RunID != first
	})
	_, err = worker.Update[workflows.ResumeResult](ctx, s.tc, s.sched.WorkflowID, workflows.UpdateResume, nil)
	require.NoError(t, err)
	resumed := time.Now()
	out, err := temporalCLI(t, "workflow", "terminate", "--workflow-id", s.sched.WorkflowID, "--reason", "test")
	require.NoError(t, err, out)
	s.keepAlive(t, zap.NewNop())
	eventually(t, 100*time.Second, "rollup runs on time after the restart", func() bool {
		for _, run := range s.rollupRuns(t, resumed) {
			if run.Status == pacer.RunOK && run.StartedAt.Sub(run.NominalAt) < cron.OnTime {
				return true
			}
		}
		return false
	})
	st := s.status(t)
	require.Nil(t, st.PausedUntil)
	require.NotEqual(t, "paused", st.Tasks[pacer.TaskRollup].Waiting)
}
