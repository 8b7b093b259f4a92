//go:build catchup

package worker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/actor"
	"github.com/pacer-dev/pacer/internal/cron"
	"github.com/pacer-dev/pacer/internal/operate"
	"github.com/pacer-dev/pacer/internal/rollup"
	"github.com/pacer-dev/pacer/internal/schedule"
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
	offline, failed := s.rollupFailsOffline(t)
	t.Logf("%s failed; the table comes back at %s", failed.Format(time.TimeOnly), offline.Add(2*time.Minute).Format(time.TimeOnly))
	time.Sleep(time.Until(offline.Add(2 * time.Minute)))
	_, err := s.st.Pool().Exec(ctx, `alter table rollups_offline rename to rollups`)
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

// rollupFailsOffline takes the rollups table away, starts a worker and
// the scheduler, and waits until a rollup occurrence failed: when the
// table went, and the occurrence.
func (s *stack) rollupFailsOffline(t *testing.T) (offline, failed time.Time) {
	t.Helper()
	ctx := context.Background()
	_, err := s.st.Pool().Exec(ctx, `alter table rollups rename to rollups_offline`)
	require.NoError(t, err)
	offline = time.Now()
	s.startWorker(t)
	_, err = worker.EnsureRunning(ctx, s.tc, s.sched)
	require.NoError(t, err)
	eventually(t, 100*time.Second, "an occurrence failed", func() bool {
		for _, run := range s.rollupRuns(t, offline.Add(-time.Minute)) {
			if run.Status == pacer.RunFailed {
				failed = run.NominalAt
				return true
			}
		}
		return false
	})
	return offline, failed
}

// An operator skips an owed occurrence on the real stack (SPEC §3.4):
// rollup's occurrence fails while its table is away and stays owed; the
// skip (through the operations, as the CLI and the admin API send it) is
// audited, task_runs shows it skipped with reason operator, and it is
// never attempted again, while the occurrences after it run once the
// table is back.
func TestOperatorSkipOnTheRealStack(t *testing.T) {
	t.Parallel()
	ctx := actor.With(context.Background(), "alice")
	s := newStack(t, workflows.Config{TeneroEvery: pacer.Duration(time.Hour), SweepEvery: pacer.Duration(time.Hour),
		Schedules: rollupEvery(t, `{"cron":"* * * * *","catchup":"coalesce"}`)})
	_, failed := s.rollupFailsOffline(t)
	svc := &operate.Service{Store: s.st, Temporal: s.tc, WorkflowID: s.sched.WorkflowID}
	// Between two attempts of the owed occurrence (an attempt in flight
	// is not owed: the validator says so, and the skip is tried again).
	var res workflows.SkipResult
	eventually(t, time.Minute, "the skip accepted", func() bool {
		raw, err := svc.Skip(ctx, operate.SkipInput{Task: pacer.TaskRollup, NominalAt: failed})
		if err != nil {
			require.ErrorContains(t, err, "owes no occurrence")
			return false
		}
		require.NoError(t, json.Unmarshal(raw, &res))
		return true
	})
	require.Equal(t, failed.UTC(), res.NominalAt)
	_, err := svc.Skip(ctx, operate.SkipInput{Task: pacer.TaskRollup, NominalAt: failed})
	require.ErrorContains(t, err, "owes no occurrence", "a skip is done once")
	row, _, err := s.st.TaskRun(ctx, pacer.TaskRollup, failed)
	require.NoError(t, err)
	require.Equal(t, pacer.RunSkipped, row.Status)
	require.Equal(t, pacer.SkipOperator, row.Reason)
	attempts := row.Attempts
	skippedAt := time.Now()

	_, err = s.st.Pool().Exec(ctx, `alter table rollups_offline rename to rollups`)
	require.NoError(t, err)
	eventually(t, 3*time.Minute, "an occurrence after the skip ran ok", func() bool {
		for _, run := range s.rollupRuns(t, failed.Add(time.Second)) {
			if run.Status == pacer.RunOK && run.FinishedAt.After(skippedAt) {
				return true
			}
		}
		return false
	})
	// One more on-time occurrence, so that a retry of the skipped one
	// would have had its turn.
	time.Sleep(70 * time.Second)
	row, _, err = s.st.TaskRun(ctx, pacer.TaskRollup, failed)
	require.NoError(t, err)
	require.Equal(t, pacer.RunSkipped, row.Status, "still skipped")
	require.Equal(t, pacer.SkipOperator, row.Reason)
	require.Equal(t, attempts, row.Attempts, "never attempted again")
	entries, err := svc.Audit(ctx, operate.AuditQuery{Limit: 100})
	require.NoError(t, err)
	outcomes := map[string]int{}
	for _, e := range entries {
		require.Equal(t, operate.ActionSkip, e.Action)
		require.Equal(t, "alice", e.Actor)
		var after struct {
			Outcome string `json:"outcome"`
		}
		require.NoError(t, json.Unmarshal(e.After, &after))
		outcomes[after.Outcome]++
	}
	require.Equal(t, 1, outcomes["done"], "the accepted skip")
	require.GreaterOrEqual(t, outcomes["refused"], 1, "the refused skips stay on record (issue 41.13)")
	require.Len(t, outcomes, 2, "%v", outcomes)
	var ledger []string
	for _, run := range s.rollupRuns(t, failed.Add(-time.Minute)) {
		ledger = append(ledger, fmt.Sprintf("%s %s %s ×%d", run.NominalAt.Format(time.TimeOnly), run.Status, run.Reason, run.Attempts))
	}
	t.Logf("%s failed ×%d, skipped by alice; task_runs since: %s", failed.Format(time.TimeOnly), attempts, strings.Join(ledger, "; "))
}

// `coalesce` after a 3-hour outage, on the real stack (SPEC §3.4): the
// scheduler comes back with the state such an outage leaves (its rollup
// last decided 3 hours before the latest :05 fire, nothing since) and no
// worker; its worker starts. One coalesced run stands for the three
// missed occurrences: task_runs shows two coalesced into the third (its
// missed count 3), rollups has a row for each of the three hours, and each
// of two subscribers, real loopback receivers, gets each hour as its own
// delivery. (Rollup's periods are real hours: a sped-up cron cannot make
// three of them pass, so the three hours are the carried state's.)
func TestCoalesceThreeHoursOnTheRealStack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStack(t, workflows.Config{TeneroEvery: pacer.Duration(time.Hour), SweepEvery: pacer.Duration(time.Hour),
		Schedules: rollupEvery(t, `{"cron":"5 * * * *","catchup":"coalesce"}`)})
	receivers := make([]*webhooktest.Receiver, 2)
	subs := make([]store.Subscriber, 2)
	for i := range receivers {
		receivers[i] = webhooktest.New(webhooktest.Behaviour{})
		t.Cleanup(receivers[i].Close)
		subs[i] = store.Subscriber{ID: webhook.NewSubscriberID(), URL: receivers[i].URL, Secret: webhook.NewSecret(),
			Events: []string{rollup.EventHourly}, CreatedAt: time.Now().Add(-6 * time.Hour)}
		require.NoError(t, s.st.AddSubscriber(ctx, subs[i]))
		receivers[i].SetSecret(subs[i].Secret)
	}
	// The latest :05 fire at least a minute old (past its on-time window),
	// and the two before it, were missed.
	latest := time.Now().UTC().Add(-time.Minute).Truncate(time.Hour).Add(5 * time.Minute)
	if latest.After(time.Now().Add(-time.Minute)) {
		latest = latest.Add(-time.Hour)
	}
	missed := []time.Time{latest.Add(-2 * time.Hour), latest.Add(-time.Hour), latest}
	state := &workflows.State{Tasks: []*schedule.Task{{Name: pacer.TaskRollup, Cron: &cron.State{Last: latest.Add(-3 * time.Hour)}}}}
	_, err := s.tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: s.sched.WorkflowID, TaskQueue: s.sched.TaskQueue},
		workflows.WorkflowType, workflows.SchedulerInput{Config: s.sched.Config, State: state})
	require.NoError(t, err)
	time.Sleep(5 * time.Second) // every worker still down
	s.startWorker(t)

	eventually(t, 2*time.Minute, "the coalesced run ok", func() bool {
		row, found, err := s.st.TaskRun(ctx, pacer.TaskRollup, latest)
		return err == nil && found && row.Status == pacer.RunOK
	})
	runs := s.rollupRuns(t, missed[0].Add(-30*time.Minute))
	require.Len(t, runs, 3, "the three missed occurrences, nothing else")
	for i, run := range runs {
		require.Equal(t, missed[i], run.NominalAt.UTC())
		if i < 2 {
			require.Equal(t, pacer.RunCoalesced, run.Status)
			require.Equal(t, latest, run.CoalescedInto.UTC())
		}
	}
	require.NotNil(t, runs[2].MissedCount)
	require.Equal(t, 3, *runs[2].MissedCount)

	var hours []time.Time
	for _, at := range missed {
		hours = append(hours, rollup.HourBefore(at).Start)
	}
	rows, err := s.st.Rollups(ctx, store.RollupQuery{Period: rollup.Hour, From: hours[0], To: hours[2].Add(time.Hour), Limit: 1000})
	require.NoError(t, err)
	var written []time.Time
	for _, r := range rows {
		if r.SubjectKind == rollup.KindCompetition {
			written = append(written, r.PeriodStart.UTC())
		}
	}
	require.Equal(t, hours, written, "one competition rollup per hour")
	eventually(t, 2*time.Minute, "3 hourly deliveries per subscriber", func() bool {
		for i, r := range receivers {
			acked := map[string]bool{}
			for _, a := range r.Arrivals() {
				acked[a.ID] = acked[a.ID] || a.Acked
			}
			for _, h := range hours {
				if !acked[webhook.DeliveryID(subs[i].ID, rollup.EventHourly, h)] {
					return false
				}
			}
		}
		return true
	})
	for i, r := range receivers {
		ids := map[string]bool{}
		for _, a := range r.Arrivals() {
			ids[a.ID] = true
		}
		require.Len(t, ids, 3, "subscriber %d: the three hours, nothing else", i)
	}
	t.Logf("coalesced %s … %s (missed %d) into one run; hours %s, %s, %s rolled up and delivered to 2 subscribers",
		missed[0].Format(time.TimeOnly), latest.Format(time.TimeOnly), *runs[2].MissedCount,
		hours[0].Format(time.TimeOnly), hours[1].Format(time.TimeOnly), hours[2].Format(time.TimeOnly))
}
