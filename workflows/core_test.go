package workflows

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/cron"
	"github.com/pacer-dev/pacer/internal/fault"
	"github.com/pacer-dev/pacer/internal/schedule"
)

// hourlyAt5 is rollup's default cron with the given catch-up.
func hourlyAt5(t *testing.T, catchup string) cron.Schedules {
	t.Helper()
	spec, err := cron.ParseSpec([]byte(`{"cron":"5 * * * *","catchup":"` + catchup + `"}`))
	require.NoError(t, err)
	return cron.Schedules{pacer.TaskRollup: spec}
}

// nominals are the nominal times of the rollup runs, in order.
func (h *harness) nominals() []time.Time {
	var out []time.Time
	for _, o := range h.rollup.runs() {
		out = append(out, o.NominalAt.UTC())
	}
	return out
}

// A pause of one task holds that task only; its cron occurrences due in
// the window are passed as paused; resume ends it.
func TestPauseOneTask(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.at(time.Minute, func() { h.signal(SignalPause, `{"for":"2h","task":"rollup"}`) })
	h.at(2*time.Minute, func() {
		st := h.status(t)
		require.Nil(t, st.PausedUntil, "the scheduler as a whole is not paused")
		require.Equal(t, schedule.ReasonPaused, st.Tasks[pacer.TaskRollup].Waiting)
		require.Equal(t, t0.Add(121*time.Minute), *st.Tasks[pacer.TaskRollup].PausedUntil)
		require.NotEqual(t, schedule.ReasonPaused, st.Tasks[pacer.TaskTenero].Waiting)
	})
	h.at(90*time.Minute, func() {
		require.Empty(t, h.nominals(), "rollup paused: its 12:05 and 13:05 did not run")
		require.GreaterOrEqual(t, h.tenero.calls.Load(), int32(18), "tenero ran on its cadence all along")
		h.signal(SignalResume, "")
	})
	h.at(91*time.Minute, func() { require.Nil(t, h.status(t).Tasks[pacer.TaskRollup].PausedUntil) })
	h.runFor(t, 126*time.Minute, SchedulerInput{Config: Config{Schedules: hourlyAt5(t, "backfill")}})
	// 12:05 and 13:05 fell in the pause (passed as paused, not backfilled);
	// 14:05 ran after the resume.
	require.Equal(t, []time.Time{t0.Add(125 * time.Minute)}, h.nominals())
	passed := h.rollup.runs()[0].Passed
	require.Len(t, passed, 1)
	require.Equal(t, pacer.SkipPaused, passed[0].Reason)
	require.Equal(t, 2, max(passed[0].Count, 1))
}

// Resuming one task ends its own pause only: a pause of every task, and
// another task's pause, stay.
func TestResumeOneTask(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.at(time.Minute, func() {
		h.signal(SignalPause, `{"for":"3h","task":"rollup"}`)
		h.signal(SignalPause, `{"for":"3h","task":"tenero"}`)
	})
	h.at(2*time.Minute, func() { h.signal(SignalResume, `{"task":"rollup"}`) })
	h.at(3*time.Minute, func() {
		st := h.status(t)
		require.Nil(t, st.Tasks[pacer.TaskRollup].PausedUntil, "rollup's pause ended")
		require.NotNil(t, st.Tasks[pacer.TaskTenero].PausedUntil, "tenero's pause stays")
		require.Equal(t, schedule.ReasonPaused, st.Tasks[pacer.TaskTenero].Waiting)
		h.signal(SignalResume, `{"task":"no-such-task"}`) // dropped with a logged reason
	})
	h.at(4*time.Minute, func() {
		require.NotNil(t, h.status(t).Tasks[pacer.TaskTenero].PausedUntil, "a bad resume changes nothing")
	})
	h.runFor(t, 70*time.Minute, SchedulerInput{Config: Config{Schedules: hourlyAt5(t, "backfill")}})
	require.Equal(t, []time.Time{t0.Add(5 * time.Minute), t0.Add(65 * time.Minute)}, h.nominals(),
		"rollup, resumed at 12:02, ran at 12:05 and 13:05")
}

// pause → a new run → resume → terminate: the restarted scheduler, from
// the state its last run began with and the memo, is not paused (the old
// bug: the pause window in the cron state silenced rollup for 30 days).
func TestPauseResumeSurvivesRestart(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	until := t0.Add(24 * time.Hour)
	// The state the terminated run started with: paused.
	started := &State{PausedUntil: &until, Pauses: []schedule.Pause{{From: t0.Add(-time.Hour), Until: until}},
		Tasks: []*schedule.Task{{Name: pacer.TaskRollup, Cron: &cron.State{Last: t0.Add(-time.Hour)}}}}
	// Its memo, after the resume, laid over it (worker's applyMemo): the
	// window ended.
	started.PausedUntil, started.Pauses = nil, []schedule.Pause{{From: t0.Add(-time.Hour), Until: t0.Add(-time.Minute)}}
	h.at(time.Minute, func() {
		st := h.status(t)
		require.Nil(t, st.PausedUntil)
		require.Equal(t, schedule.ReasonCron, st.Tasks[pacer.TaskRollup].Waiting)
	})
	h.runFor(t, 6*time.Minute, SchedulerInput{Config: Config{Schedules: hourlyAt5(t, "skip")}, State: started})
	require.Equal(t, []time.Time{t0.Add(5 * time.Minute)}, h.nominals(), "rollup runs on time")
}

// Moving rollup from one cron spec to another starts the new one at that
// moment: none of its times before then counts as missed.
func TestCronToCronReconfigureBackfillsNothing(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	carried := &State{Tasks: []*schedule.Task{{Name: pacer.TaskRollup, Cron: &cron.State{Last: t0.Add(-55 * time.Minute)}}}}
	upd := h.update(time.Minute, UpdateReconfigure, `{"schedules":{"rollup":{"cron":"*/10 * * * *","catchup":"backfill"}}}`)
	h.env.ExecuteWorkflow(WorkflowType, SchedulerInput{Config: Config{Schedules: hourlyAt5(t, "backfill")}, State: carried})
	require.NoError(t, upd.err)
	var can *workflow.ContinueAsNewError
	require.True(t, errors.As(h.env.GetWorkflowError(), &can), "got %v", h.env.GetWorkflowError())
	var next SchedulerInput
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	require.Empty(t, h.nominals(), "nothing ran before the reconfigure")

	// The next run, on the new spec: the old spec's 12:05 had not come; the
	// new spec's 11:10 … 12:00 were never due. Only 12:10 and 12:20 run.
	h2 := newHarness(t)
	h2.env.SetStartTime(t0.Add(time.Minute))
	h2.runFor(t, 24*time.Minute, next)
	require.Equal(t, []time.Time{t0.Add(10 * time.Minute), t0.Add(20 * time.Minute)}, h2.nominals())
	st := next.State.Tasks[2].Cron
	require.Zero(t, st.Counts.Missed)
}

// A failed occurrence stays owed: it is retried on its back-off until it
// succeeds, and the occurrence after it waits its turn.
func TestFailedOccurrenceIsOwed(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	ok := &fakeRollup{}
	var failed []time.Time
	h := newHarnessWith(t, func(ctx context.Context, in pacer.RollupInput) (pacer.RollupResult, error) {
		if calls.Add(1) <= 6 { // two runs of three attempts each
			failed = append(failed, in.Occurrence.NominalAt.UTC())
			return pacer.RollupResult{}, temporal.NewApplicationError("rollups table unavailable", string(pacer.ClassTransport))
		}
		return ok.run(ctx, in)
	})
	h.at(5*time.Minute+20*time.Second, func() {
		st := h.status(t).Tasks[pacer.TaskRollup]
		require.Equal(t, 1, st.Occurrences.Queued, "the failed 12:05 is owed")
	})
	h.runFor(t, 70*time.Minute, SchedulerInput{Config: Config{Schedules: hourlyAt5(t, "skip")},
		State: &State{Tasks: []*schedule.Task{{Name: pacer.TaskRollup, Cron: &cron.State{Last: t0.Add(-55 * time.Minute)}}}}})
	for _, at := range failed {
		require.Equal(t, t0.Add(5*time.Minute), at)
	}
	var got []time.Time
	for _, o := range ok.runs() {
		got = append(got, o.NominalAt.UTC())
	}
	require.Equal(t, []time.Time{t0.Add(5 * time.Minute), t0.Add(65 * time.Minute)}, got,
		"12:05 ran once it could, then 13:05 on time")
}

// resume clears back-offs, the 24-hour month back-off included: the task
// runs again within its next cadence.
func TestResumeClearsMonthBackoff(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.tenero.set(func(n int32) (pacer.TeneroResult, error) {
		if n == 1 {
			res := pacer.TeneroResult{Run: pacer.Run{RateLimited: true, RateLimitBackoffMs: fault.MonthQuotaBackoff.Milliseconds()}}
			return res, temporal.NewApplicationErrorWithOptions("month quota spent", string(pacer.ClassRateLimit),
				temporal.ApplicationErrorOptions{NonRetryable: true, Details: []any{res}})
		}
		return pacer.TeneroResult{TokensAttempted: 1, Succeeded: 1}, nil
	})
	h.at(10*time.Minute, func() {
		require.EqualValues(t, 1, h.tenero.calls.Load())
		require.Equal(t, schedule.ReasonBackoff, h.status(t).Tasks[pacer.TaskTenero].Waiting)
	})
	res := h.update(11*time.Minute, UpdateResume, "")
	h.at(11*time.Minute+time.Second, func() {
		require.EqualValues(t, 2, h.tenero.calls.Load(), "overdue since 12:05: runs at once")
	})
	h.runFor(t, 12*time.Minute, SchedulerInput{Config: Config{SweepEvery: pacer.Duration(time.Hour)}})
	require.Contains(t, res.result.(ResumeResult).BackoffsCleared, pacer.TaskTenero)
}

// A hint makes the sweep due at once whatever holds it (cadence, back-off,
// breaker, budget), never while paused; many hints are one run, and hinted
// starts are at least HintGap apart. A malformed hint is dropped.
func TestHintWakesTheSweep(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.at(10*time.Minute, func() {
		require.EqualValues(t, 1, h.sweep.calls.Load())
		h.signal(SignalHint, `{"agent":"SP000000000000000000002Q6VF78"}`)
		h.signal(SignalHint, ``)
		h.signal(SignalHint, `{"agent":"not an address"}`)
		h.signal(SignalHint, `{"agnet":"SP000000000000000000002Q6VF78"}`)
	})
	h.at(11*time.Minute, func() { require.EqualValues(t, 2, h.sweep.calls.Load(), "two good hints, one run") })
	// A burst: one run per HintGap at most.
	for i := range 20 {
		h.at(20*time.Minute+time.Duration(i)*100*time.Millisecond, func() { h.signal(SignalHint, ``) })
	}
	h.at(25*time.Minute, func() {
		n := h.sweep.calls.Load()
		require.GreaterOrEqual(t, n, int32(3))
		require.LessOrEqual(t, n, int32(5), "20 hints over 2 s start at most 3 runs")
		h.signal(SignalPause, `{"for":"10m"}`)
		h.signal(SignalHint, ``)
	})
	h.at(34*time.Minute, func() {
		st := h.status(t)
		require.Equal(t, schedule.ReasonPaused, st.Tasks[pacer.TaskSweep].Waiting, "a hint does not break a pause")
		require.True(t, st.Tasks[pacer.TaskSweep].Hinted)
	})
	var atPause int32
	h.at(25*time.Minute+time.Second, func() { atPause = h.sweep.calls.Load() })
	h.at(35*time.Minute+time.Second, func() {
		require.Equal(t, atPause+1, h.sweep.calls.Load(), "the hinted run starts when the pause ends")
	})
	h.runFor(t, 36*time.Minute, SchedulerInput{Config: Config{SweepEvery: pacer.Duration(time.Hour)}})
}

// The memo carries what the status document is made of (SPEC §7's one
// shared source, §3.8): the document a reader computes from the last memo
// at its own clock is what the status query answers then, history length
// aside, though the memo is written only when something changed.
func TestStatusMemoIsTheStatus(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	var last StatusMemo
	upserts := 0
	h.env.OnUpsertMemo(mock.Anything).Run(func(args mock.Arguments) {
		fields := args.Get(0).(map[string]any)
		require.Contains(t, fields, MemoKey, "one upsert carries both fields")
		m, ok := fields[MemoStatusKey]
		require.True(t, ok, "one upsert carries both fields")
		p, err := converter.GetDefaultDataConverter().ToPayload(m)
		require.NoError(t, err)
		require.Less(t, len(MemoStatusKey)+len(p.GetData()), 16<<10, "within the memo warning size pacer's clients set (worker.MemoSizeWarning)")
		last = m.(StatusMemo)
		upserts++
	}).Return(nil)
	for _, at := range []time.Duration{90 * time.Second, 7 * time.Minute, 12*time.Minute + 10*time.Second, 31*time.Minute + 30*time.Second} {
		h.at(at, func() {
			q := h.status(t)
			q.HistoryLength = 0
			sn := decodeSnapshot(t, last)
			require.Equal(t, mustJSON(t, q), mustJSON(t, sn.Status(h.env.Now())), "at %v", at)
		})
	}
	h.at(6*time.Minute, func() { h.signal(SignalPause, `{"for":"20m","task":"tenero"}`) })
	h.runFor(t, 32*time.Minute, SchedulerInput{Config: Config{SweepEvery: pacer.Duration(time.Hour)}})
	// Tenero every 5 minutes but for 20 of them, the sweep and rollup once,
	// a pause: about 2 writes a run (its start and its end), never one a
	// wake-up for nothing.
	t.Logf("%d memo upserts, %d tenero runs", upserts, h.tenero.calls.Load())
	require.LessOrEqual(t, upserts, 2*int(h.tenero.calls.Load()+h.sweep.calls.Load()+int32(len(h.rollup.runs()))+h.deliver.calls.Load())+3)
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// decodeSnapshot decodes the status memo as its readers do (worker).
func decodeSnapshot(t *testing.T, m StatusMemo) Snapshot {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(m.Gzip))
	require.NoError(t, err)
	var sn Snapshot
	require.NoError(t, json.NewDecoder(zr).Decode(&sn))
	return sn
}
