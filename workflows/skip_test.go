package workflows

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/cron"
	"github.com/pacer-dev/pacer/internal/schedule"
)

// An operator skips an owed occurrence (SPEC §3.4): a bad skip is
// rejected by the validator with its reason, before history; the good one
// takes the occurrence out of the queue, it is never attempted again, and
// the task's next run carries it to the ledger as skipped, reason
// operator.
func TestOperatorSkipsAnOwedOccurrence(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	attempts := map[time.Time]int{}
	var carried []pacer.PassedOccurrence
	h := newHarnessWith(t, func(_ context.Context, in pacer.RollupInput) (pacer.RollupResult, error) {
		mu.Lock()
		defer mu.Unlock()
		at := in.Occurrence.NominalAt.UTC()
		attempts[at]++
		if at.Equal(t0.Add(5 * time.Minute)) {
			return pacer.RollupResult{}, temporal.NewApplicationError("rollups table unavailable", string(pacer.ClassTransport))
		}
		carried = append(carried, in.Occurrence.Passed...)
		return pacer.RollupResult{Rows: 1}, nil
	})
	owed := t0.Add(5 * time.Minute).Format(time.RFC3339)
	rejected := []*updateOutcome{
		h.update(20*time.Minute, UpdateSkip, `{"task":"rollup","nominalAt":"`+owed+`","x":1}`),
		h.update(20*time.Minute, UpdateSkip, `{"task":"rollup","nominalAt":"noon"}`),
		h.update(20*time.Minute, UpdateSkip, `{"task":"rollup","nominalAt":"2026-05-14T11:05:00Z"}`),
		h.update(20*time.Minute, UpdateSkip, `{"task":"tenero","nominalAt":"`+owed+`"}`),
		h.update(20*time.Minute, UpdateSkip, `{"task":"nope","nominalAt":"`+owed+`"}`),
		h.update(20*time.Minute, UpdateSkip, ``),
	}
	var before int
	h.at(20*time.Minute-time.Second, func() {
		st := h.status(t).Tasks[pacer.TaskRollup]
		require.Equal(t, 1, st.Occurrences.Queued, "12:05 is owed")
		mu.Lock()
		before = attempts[t0.Add(5*time.Minute)]
		mu.Unlock()
		require.Greater(t, before, 3, "retried on its back-off")
	})
	skip := h.update(21*time.Minute, UpdateSkip, `{"task":"rollup","nominalAt":"`+owed+`"}`)
	again := h.update(22*time.Minute, UpdateSkip, `{"task":"rollup","nominalAt":"`+owed+`"}`)
	h.at(22*time.Minute+time.Second, func() {
		st := h.status(t).Tasks[pacer.TaskRollup]
		require.Zero(t, st.Occurrences.Queued)
		require.Equal(t, 1, st.Occurrences.Pending, "the skip waits for the next run to record it")
		require.Equal(t, schedule.ReasonCron, st.Waiting, "nothing owed: the next fire time, no back-off")
	})
	h.runFor(t, 70*time.Minute, SchedulerInput{Config: Config{Schedules: hourlyAt5(t, "skip")},
		State: &State{Tasks: []*schedule.Task{{Name: pacer.TaskRollup, Cron: &cron.State{Last: t0.Add(-55 * time.Minute)}}}}})

	for i, r := range rejected {
		require.Error(t, r.rejected, "skip %d is rejected by the validator", i)
	}
	require.ErrorContains(t, rejected[0].rejected, "unknown field")
	require.ErrorContains(t, rejected[1].rejected, `"nominalAt" is not an RFC3339 time`)
	require.ErrorContains(t, rejected[2].rejected, "owes no occurrence at 2026-05-14T11:05:00Z (owed: 2026-05-14T12:05:00Z)")
	require.ErrorContains(t, rejected[3].rejected, "tenero has no cron schedule")
	require.ErrorContains(t, rejected[4].rejected, "unknown task")
	require.ErrorContains(t, rejected[5].rejected, "empty input")
	require.NoError(t, skip.rejected)
	require.NoError(t, skip.err)
	res := skip.result.(SkipResult)
	require.Equal(t, t0.Add(5*time.Minute), res.NominalAt)
	require.Empty(t, res.Owed)
	require.ErrorContains(t, again.rejected, "rollup owes no occurrence: nothing to skip", "a skip is done once")

	mu.Lock()
	defer mu.Unlock()
	require.LessOrEqual(t, attempts[t0.Add(5*time.Minute)], before+3, "no run of 12:05 after the skip (one in flight may end)")
	require.Equal(t, 1, attempts[t0.Add(65*time.Minute)], "13:05 ran on time")
	require.Equal(t, []pacer.PassedOccurrence{{NominalAt: t0.Add(5 * time.Minute), Status: pacer.RunSkipped, Reason: pacer.SkipOperator}},
		carried, "13:05's run carried the skip to the ledger")
}

// A sweep that runs at its own pace (its result says when its next agent
// is due) ends with its next run before the wake-up tenero's timer waits
// for: that timer stands, and the sweep's wake-up gets its own, so every
// timer but the first run's guesses fires and starts a run (SPEC §3.6;
// with a single re-armed timer, tenero's was cancelled and armed again
// after every such sweep).
func TestAStandingTimerIsNotArmedTwice(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	env := h.env
	h.sweep.next = func() time.Time { return env.Now().Add(2*time.Minute + 10*time.Second) }
	var scheduled, fired, cancelled int
	env.SetOnTimerScheduledListener(func(string, time.Duration) { scheduled++ })
	env.SetOnTimerFiredListener(func(string) { fired++ })
	env.SetOnTimerCanceledListener(func(string) { cancelled++ })
	env.RegisterDelayedCallback(env.CancelWorkflow, 40*time.Minute)
	env.ExecuteWorkflow(WorkflowType, SchedulerInput{Config: Config{Schedules: hourlyAt5(t, "skip")}})

	require.Greater(t, h.sweep.calls.Load(), int32(15), "the sweep ran at its own pace")
	// Started and not fired: three of tenero's timers that gave way to the
	// sweep's wake-up a few seconds later (one timer then starts both: no
	// timer more than without aligning), and rollup's 13:05, pending when
	// the run was cancelled. With a single re-armed timer:
	// 17 of 45.
	t.Logf("timers: %d scheduled, %d fired, %d cancelled", scheduled, fired, cancelled)
	require.LessOrEqual(t, cancelled, 3, "timers cancelled (scheduled %d, fired %d)", scheduled, fired)
	require.LessOrEqual(t, scheduled-fired, cancelled+1, "timers that started no run (scheduled %d, fired %d)", scheduled, fired)
}
