package activities_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/rollup"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/internal/webhook"
	"github.com/pacer-dev/pacer/internal/webhooktest"
)

// runOccurrence runs the Rollup activity with a whole occurrence.
func (f *rollupFixture) runOccurrence(t *testing.T, occ pacer.Occurrence) pacer.RollupResult {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(f.acts)
	v, err := env.ExecuteActivity(f.acts.Rollup, pacer.RollupInput{Occurrence: occ})
	require.NoError(t, err)
	var res pacer.RollupResult
	require.NoError(t, v.Get(&res))
	return res
}

// hourRows are the competition rows of the hours that ended in (from, to].
func (f *rollupFixture) hourRows(t *testing.T, from, to time.Time) []time.Time {
	t.Helper()
	rows, err := f.st.Rollups(t.Context(), store.RollupQuery{Period: rollup.Hour, From: from, To: to, Limit: 100})
	require.NoError(t, err)
	var starts []time.Time
	for _, r := range rows {
		if r.SubjectKind == rollup.KindCompetition {
			starts = append(starts, r.PeriodStart.UTC())
		}
	}
	return starts
}

// A coalesce run after a 3-hour outage stands for three occurrences: it
// writes each of their hours, and each hour reaches every subscriber as
// its own delivery (SPEC §3.4).
func TestRollupCoalescedCoversEveryHour(t *testing.T) {
	t.Parallel()
	f := newRollupFixture(t, fixtureOptions{ladder: webhook.Ladder{time.Second}})
	first := time.Date(2026, 11, 2, 8, 5, 0, 0, time.UTC)
	last := first.Add(2 * time.Hour) // 10:05: stands for 08:05, 09:05, 10:05
	f.clock.Set(last.Add(time.Hour + time.Minute))
	receivers := make([]*webhooktest.Receiver, 2)
	for i := range receivers {
		receivers[i] = webhooktest.New(webhooktest.Behaviour{})
		t.Cleanup(receivers[i].Close)
		f.subscribe(t, receivers[i], first.Add(-time.Hour), rollup.EventHourly)
	}

	res := f.runOccurrence(t, pacer.Occurrence{Task: pacer.TaskRollup, NominalAt: last,
		Coalesced: &pacer.CoalescedRange{First: first, Last: last, Count: 3}})
	want := []time.Time{first.Truncate(time.Hour).Add(-time.Hour), first.Truncate(time.Hour), first.Truncate(time.Hour).Add(time.Hour)}
	require.Equal(t, want, res.Hours[:3], "each hour the coalesced occurrences stood for")
	require.Equal(t, want, f.hourRows(t, want[0], last), "one competition row per hour")

	d := f.deliver(t)
	require.Equal(t, 3*len(receivers), d.Emitted, "3 hourly deliveries per subscriber")
	for _, r := range receivers {
		require.Len(t, r.Arrivals(), 3)
	}
}

// `backfill` runs an occurrence as of its nominal time; `all` as of when
// the run started (AsOf): the hour computed follows.
func TestRollupAsOf(t *testing.T) {
	t.Parallel()
	f := newRollupFixture(t, fixtureOptions{})
	nominal := time.Date(2026, 11, 2, 8, 5, 0, 0, time.UTC)
	now := nominal.Add(3 * time.Hour)
	f.clock.Set(now)
	back := f.runOccurrence(t, pacer.Occurrence{Task: pacer.TaskRollup, NominalAt: nominal})
	require.Equal(t, nominal.Truncate(time.Hour).Add(-time.Hour), back.Hours[0], "as of its nominal time")
	live := f.runOccurrence(t, pacer.Occurrence{Task: pacer.TaskRollup, NominalAt: nominal.Add(time.Hour), Live: true, AsOf: &now})
	require.Equal(t, now.Truncate(time.Hour).Add(-time.Hour), live.Hours[0], "as of when it ran")
}
