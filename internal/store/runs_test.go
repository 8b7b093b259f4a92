package store_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/store"
)

func TestRunLedgerRunsAnOccurrenceOnce(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	at := time.Date(2026, 11, 1, 10, 5, 0, 0, time.UTC)
	occ := pacer.Occurrence{Task: "rollup", NominalAt: at}

	first, done, err := s.BeginRun(ctx, occ)
	require.NoError(t, err)
	require.False(t, done)
	require.Equal(t, 1, first.Attempts)
	require.Equal(t, pacer.RunRunning, first.Status)
	require.NotNil(t, first.StartedAt)
	// A retried attempt of an unfinished run begins it again.
	_, done, err = s.BeginRun(ctx, occ)
	require.NoError(t, err)
	require.False(t, done)
	require.NoError(t, s.FinishRun(ctx, occ, 0, pacer.RunOK, "", json.RawMessage(`{"rows":3}`)))

	// Once ok, it is never run again: the recorded result comes back.
	prior, done, err := s.BeginRun(ctx, occ)
	require.NoError(t, err)
	require.True(t, done)
	require.JSONEq(t, `{"rows":3}`, string(prior.Result))
	require.Equal(t, 2, prior.Attempts)
	require.Equal(t, pacer.RunOK, prior.Status)
	require.NotNil(t, prior.StartedAt)
	require.NotNil(t, prior.FinishedAt)
	require.Equal(t, *first.StartedAt, *prior.StartedAt, "a retried attempt keeps the first start")
}

func TestRunLedgerFailedRunMayRunAgain(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	occ := pacer.Occurrence{Task: "tenero", NominalAt: time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)}
	_, _, err := s.BeginRun(ctx, occ)
	require.NoError(t, err)
	require.NoError(t, s.FinishRun(ctx, occ, 0, pacer.RunFailed, pacer.ClassServerError, nil))
	run, found, err := s.TaskRun(ctx, occ.Task, occ.NominalAt)
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, pacer.RunFailed, run.Status)
	require.Equal(t, string(pacer.ClassServerError), run.ErrorClass)

	_, done, err := s.BeginRun(ctx, occ)
	require.NoError(t, err)
	require.False(t, done)
}

func TestRunLedgerRecordsPassedOccurrences(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	base := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	into := base.Add(3 * time.Hour)
	occ := pacer.Occurrence{Task: "rollup", NominalAt: into, Coalesced: &pacer.CoalescedRange{First: base.Add(time.Hour), Last: into, Count: 3}}

	// The run itself is ledgered first, as a retried attempt would find it.
	_, _, err := s.BeginRun(ctx, occ)
	require.NoError(t, err)
	passed := []pacer.PassedOccurrence{
		{NominalAt: base, Status: pacer.RunSkipped, Reason: pacer.SkipPaused},
		{NominalAt: base.Add(time.Hour), Status: pacer.RunCoalesced, CoalescedInto: &into},
		{NominalAt: base.Add(2 * time.Hour), Status: pacer.RunCoalesced, CoalescedInto: &into},
		// A passed occurrence that already has a row keeps it.
		{NominalAt: into, Status: pacer.RunSkipped, Reason: pacer.SkipCatchup},
	}
	added, err := s.RecordPassed(ctx, "rollup", passed)
	require.NoError(t, err)
	require.Equal(t, map[string]int{pacer.SkipPaused: 1, pacer.RunCoalesced: 2}, added, "the row at 03:00 is the run's")
	added, err = s.RecordPassed(ctx, "rollup", passed)
	require.NoError(t, err)
	require.Empty(t, added, "recording twice changes nothing")

	runs, err := s.TaskRuns(ctx, "rollup", base, 100)
	require.NoError(t, err)
	require.Len(t, runs, 4)
	var got []string
	for _, r := range runs {
		got = append(got, r.NominalAt.UTC().Format("15:04")+" "+r.Status+" "+r.Reason)
	}
	require.Equal(t, []string{"00:00 skipped paused", "01:00 coalesced ", "02:00 coalesced ", "03:00 running "}, got)
	require.Equal(t, into, runs[1].CoalescedInto.UTC())
	require.Equal(t, 3, *runs[3].MissedCount)

	// The newest limit, still oldest first.
	runs, err = s.TaskRuns(ctx, "rollup", base, 2)
	require.NoError(t, err)
	require.Equal(t, base.Add(2*time.Hour), runs[0].NominalAt.UTC())
}

func TestLatestRunsIsEachTasksLastFinishedRun(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	base := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for i, task := range []string{"tenero", "tenero", "sweep"} {
		occ := pacer.Occurrence{Task: task, NominalAt: base.Add(time.Duration(i) * time.Minute)}
		_, _, err := s.BeginRun(ctx, occ)
		require.NoError(t, err)
		require.NoError(t, s.FinishRun(ctx, occ, 0, pacer.RunOK, "", json.RawMessage(`{}`)))
	}
	// Running, not finished: not the latest finished run.
	_, _, err := s.BeginRun(ctx, pacer.Occurrence{Task: "tenero", NominalAt: base.Add(time.Hour)})
	require.NoError(t, err)

	latest, err := s.LatestRuns(ctx)
	require.NoError(t, err)
	require.Len(t, latest, 2)
	require.Equal(t, base.Add(time.Minute), latest["tenero"].NominalAt.UTC())
	require.Equal(t, base.Add(2*time.Minute), latest["sweep"].NominalAt.UTC())
}

// A span stands for one row per occurrence: a day of minutely skips is
// 1,440 rows from one entry.
func TestRunLedgerExpandsSpans(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	base := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	passed := []pacer.PassedOccurrence{
		{NominalAt: base, Status: pacer.RunSkipped, Reason: pacer.SkipPaused, Count: 1440, StepSeconds: 60},
		{NominalAt: base.Add(24 * time.Hour), Status: pacer.RunSkipped, Reason: pacer.SkipCatchup},
		{NominalAt: base.Add(25 * time.Hour), Status: pacer.RunSkipped, Reason: pacer.SkipDSTGap, Count: 2, StepSeconds: 3600},
	}
	added, err := s.RecordPassed(ctx, "rollup", passed)
	require.NoError(t, err)
	require.Equal(t, map[string]int{pacer.SkipPaused: 1440, pacer.SkipCatchup: 1, pacer.SkipDSTGap: 2}, added)

	runs, err := s.TaskRuns(ctx, "rollup", base, 5000)
	require.NoError(t, err)
	require.Len(t, runs, 1443)
	for i, r := range runs[:1440] {
		require.Equal(t, base.Add(time.Duration(i)*time.Minute), r.NominalAt.UTC())
		require.Equal(t, pacer.SkipPaused, r.Reason)
	}
	require.Equal(t, base.Add(26*time.Hour), runs[1442].NominalAt.UTC())
	require.Equal(t, pacer.SkipDSTGap, runs[1442].Reason)

	added, err = s.RecordPassed(ctx, "rollup", nil)
	require.NoError(t, err)
	require.Empty(t, added)
}

// Two attempts of one occurrence never run at once: while one holds its
// lease, another (a retry after a missed heartbeat) is refused, and an
// attempt that is no longer the latest cannot overwrite the latest's end.
func TestRunLedgerOneAttemptAtATime(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	occ := pacer.Occurrence{Task: "rollup", NominalAt: time.Date(2026, 11, 1, 11, 5, 0, 0, time.UTC)}
	release, err := s.HoldRun(ctx, occ)
	require.NoError(t, err)
	first, _, err := s.BeginRun(ctx, occ)
	require.NoError(t, err)

	_, err = s.HoldRun(ctx, occ)
	require.ErrorIs(t, err, store.ErrRunHeld, "a second attempt while the first holds the occurrence")
	other := pacer.Occurrence{Task: "rollup", NominalAt: occ.NominalAt.Add(time.Hour)}
	releaseOther, err := s.HoldRun(ctx, other)
	require.NoError(t, err, "another occurrence is not held")
	releaseOther()

	release()
	release2, err := s.HoldRun(ctx, occ)
	require.NoError(t, err, "the lease is free once the first attempt ends")
	defer release2()
	second, _, err := s.BeginRun(ctx, occ)
	require.NoError(t, err)
	require.Equal(t, first.Attempts+1, second.Attempts)
	// The first attempt's late end writes nothing over the second's.
	require.NoError(t, s.FinishRun(ctx, occ, first.Attempts, pacer.RunFailed, pacer.ClassTransport, nil))
	row, _, err := s.TaskRun(ctx, occ.Task, occ.NominalAt)
	require.NoError(t, err)
	require.Equal(t, pacer.RunRunning, row.Status)
	require.NoError(t, s.FinishRun(ctx, occ, second.Attempts, pacer.RunOK, "", json.RawMessage(`{}`)))
	row, _, err = s.TaskRun(ctx, occ.Task, occ.NominalAt)
	require.NoError(t, err)
	require.Equal(t, pacer.RunOK, row.Status)
}

// An operator's skip of a failed occurrence is what happened to it next:
// its row becomes skipped, reason operator, keeping its attempts; written
// again (the skip rides on the task's next run too) it is left alone, and
// an ok occurrence is never turned into a skip.
func TestRunLedgerOperatorSkipReplacesAFailure(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	failed := pacer.Occurrence{Task: "rollup", NominalAt: time.Date(2026, 11, 1, 10, 5, 0, 0, time.UTC)}
	ok := pacer.Occurrence{Task: "rollup", NominalAt: failed.NominalAt.Add(time.Hour)}
	for _, occ := range []pacer.Occurrence{failed, failed, ok} {
		row, _, err := s.BeginRun(ctx, occ)
		require.NoError(t, err)
		status := pacer.RunFailed
		if occ.NominalAt.Equal(ok.NominalAt) {
			status = pacer.RunOK
		}
		require.NoError(t, s.FinishRun(ctx, occ, row.Attempts, status, "", nil))
	}
	skip := func(at time.Time) pacer.PassedOccurrence {
		return pacer.PassedOccurrence{NominalAt: at, Status: pacer.RunSkipped, Reason: pacer.SkipOperator}
	}
	added, err := s.RecordPassed(ctx, "rollup", []pacer.PassedOccurrence{skip(failed.NominalAt), skip(ok.NominalAt)})
	require.NoError(t, err)
	require.Equal(t, map[string]int{pacer.SkipOperator: 1}, added)
	row, _, err := s.TaskRun(ctx, "rollup", failed.NominalAt)
	require.NoError(t, err)
	require.Equal(t, pacer.RunSkipped, row.Status)
	require.Equal(t, pacer.SkipOperator, row.Reason)
	require.Equal(t, 2, row.Attempts, "its attempts stay on record")
	row, _, err = s.TaskRun(ctx, "rollup", ok.NominalAt)
	require.NoError(t, err)
	require.Equal(t, pacer.RunOK, row.Status, "an ok occurrence stays ok")

	added, err = s.RecordPassed(ctx, "rollup", []pacer.PassedOccurrence{skip(failed.NominalAt)})
	require.NoError(t, err)
	require.Empty(t, added, "written again, nothing changes")
	// Other passed occurrences never rewrite a row.
	added, err = s.RecordPassed(ctx, "rollup", []pacer.PassedOccurrence{{NominalAt: failed.NominalAt, Status: pacer.RunSkipped, Reason: pacer.SkipPaused}})
	require.NoError(t, err)
	require.Empty(t, added)
}
