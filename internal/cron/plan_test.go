package cron_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/cron"
)

const task = "rollup"

// drain starts every queued run, as the workflow does one after another
// while the task is idle.
func drain(st *cron.State) []pacer.Occurrence {
	var runs []pacer.Occurrence
	for {
		occ, ok := st.Take()
		if !ok {
			return runs
		}
		runs = append(runs, occ)
	}
}

func hhmm(t time.Time) string { return t.UTC().Format("15:04") }

func describePassed(passed []pacer.PassedOccurrence) []string {
	var out []string
	for _, p := range passed {
		for _, at := range p.Times() {
			switch p.Status {
			case pacer.RunCoalesced:
				out = append(out, hhmm(at)+" coalesced into "+hhmm(*p.CoalescedInto))
			default:
				out = append(out, hhmm(at)+" "+p.Status+" "+p.Reason)
			}
		}
	}
	return out
}

func describeRun(o pacer.Occurrence) string {
	s := hhmm(o.NominalAt)
	if c := o.Coalesced; c != nil {
		s += fmt.Sprintf(" for %s–%s (%d)", hhmm(c.First), hhmm(c.Last), c.Count)
	}
	if len(o.Passed) > 0 {
		s += " carrying " + strings.Join(describePassed(o.Passed), ", ")
	}
	return s
}

// TestThreeHourOutageOfAnHourlyTask: an hourly task last ran at 09:00; the
// workers are down from 09:30 and back at 12:30 (12:00 missed too) or at
// 12:00:10 (12:00 on time). Each policy's runs are written out by hand.
func TestThreeHourOutageOfAnHourlyTask(t *testing.T) {
	t.Parallel()
	day := utc("2026-05-04T00:00:00Z")
	late, onTime := day.Add(12*time.Hour+30*time.Minute), day.Add(12*time.Hour+10*time.Second)
	tests := []struct {
		name        string
		catchup     cron.Catchup
		maxCatchup  int
		wake        time.Time
		wantRuns    []string
		wantPending []string
		wantCounts  cron.Counts
	}{
		{name: "skip", catchup: cron.CatchupSkip, wake: late,
			wantPending: []string{"10:00 skipped catchup_skip", "11:00 skipped catchup_skip", "12:00 skipped catchup_skip"},
			wantCounts:  cron.Counts{Missed: 3, Skipped: 3}},
		{name: "latest", catchup: cron.CatchupLatest, wake: late,
			wantRuns:   []string{"12:00 carrying 10:00 skipped catchup_skip, 11:00 skipped catchup_skip"},
			wantCounts: cron.Counts{Missed: 3, Skipped: 2}},
		{name: "all", catchup: cron.CatchupAll, wake: late,
			wantRuns:   []string{"10:00", "11:00", "12:00"},
			wantCounts: cron.Counts{Missed: 3}},
		{name: "all, at most 2", catchup: cron.CatchupAll, maxCatchup: 2, wake: late,
			wantRuns:   []string{"11:00 carrying 10:00 skipped catchup_skip", "12:00"},
			wantCounts: cron.Counts{Missed: 3, Skipped: 1}},
		{name: "coalesce", catchup: cron.CatchupCoalesce, wake: late,
			wantRuns:   []string{"12:00 for 10:00–12:00 (3) carrying 10:00 coalesced into 12:00, 11:00 coalesced into 12:00"},
			wantCounts: cron.Counts{Missed: 3, Coalesced: 2}},
		{name: "backfill", catchup: cron.CatchupBackfill, wake: late,
			wantRuns:   []string{"10:00", "11:00", "12:00"},
			wantCounts: cron.Counts{Missed: 3}},
		{name: "backfill, at most 1", catchup: cron.CatchupBackfill, maxCatchup: 1, wake: late,
			wantRuns:   []string{"12:00 carrying 10:00 skipped catchup_skip, 11:00 skipped catchup_skip"},
			wantCounts: cron.Counts{Missed: 3, Skipped: 2}},

		{name: "skip, back on time for 12:00", catchup: cron.CatchupSkip, wake: onTime,
			wantRuns:   []string{"12:00 carrying 10:00 skipped catchup_skip, 11:00 skipped catchup_skip"},
			wantCounts: cron.Counts{Missed: 2, Skipped: 2}},
		{name: "latest, back on time for 12:00", catchup: cron.CatchupLatest, wake: onTime,
			wantRuns:   []string{"11:00 carrying 10:00 skipped catchup_skip", "12:00"},
			wantCounts: cron.Counts{Missed: 2, Skipped: 1}},
		{name: "all, back on time for 12:00", catchup: cron.CatchupAll, wake: onTime,
			wantRuns:   []string{"10:00", "11:00", "12:00"},
			wantCounts: cron.Counts{Missed: 2}},
		{name: "coalesce, back on time for 12:00", catchup: cron.CatchupCoalesce, wake: onTime,
			wantRuns:   []string{"11:00 for 10:00–11:00 (2) carrying 10:00 coalesced into 11:00", "12:00"},
			wantCounts: cron.Counts{Missed: 2, Coalesced: 1}},
		{name: "backfill, back on time for 12:00", catchup: cron.CatchupBackfill, wake: onTime,
			wantRuns:   []string{"10:00", "11:00", "12:00"},
			wantCounts: cron.Counts{Missed: 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := mustSchedule(t, cron.Spec{Cron: "0 * * * *", Catchup: tt.catchup, MaxCatchup: tt.maxCatchup})
			st := cron.State{Last: day.Add(9 * time.Hour)} // 09:00 ran

			st, rep := s.Plan(task, st, tt.wake, nil)
			var got []string
			for _, occ := range drain(&st) {
				got = append(got, describeRun(occ))
			}
			require.Equal(t, tt.wantRuns, got)
			require.Equal(t, tt.wantPending, describePassed(st.Pending))
			require.Equal(t, tt.wantCounts, st.Counts)
			require.Equal(t, int(tt.wantCounts.Missed), rep.Missed)
			require.Equal(t, day.Add(12*time.Hour), st.Last)

			// A repeated wake-up decides nothing more.
			again, rep := s.Plan(task, st, tt.wake, nil)
			require.Equal(t, st, again)
			require.Equal(t, cron.Report{}, rep)

			// 13:00 runs on time and carries what is still pending.
			wake, ok := s.Wake(task, st, tt.wake)
			require.True(t, ok)
			require.Equal(t, day.Add(13*time.Hour), wake)
			st, _ = s.Plan(task, st, wake, nil)
			next := drain(&st)
			require.Len(t, next, 1)
			require.Equal(t, day.Add(13*time.Hour), next[0].NominalAt)
			require.Equal(t, tt.wantPending, describePassed(next[0].Passed))
			require.Empty(t, st.Pending)
		})
	}
}

// A pause from 09:30 to 12:30: the occurrences due inside it are passed
// as paused, whatever the catch-up policy (SPEC §3.4), and nothing is
// decided while it lasts.
func TestPauseMissesOccurrencesWithReasonPaused(t *testing.T) {
	t.Parallel()
	day := utc("2026-05-04T00:00:00Z")
	pause := []cron.Window{{From: day.Add(9*time.Hour + 30*time.Minute), Until: day.Add(12*time.Hour + 30*time.Minute)}}
	inPause := func(at time.Time) bool { return paused(pause, at) }
	for _, c := range []cron.Catchup{cron.CatchupSkip, cron.CatchupLatest, cron.CatchupBackfill, cron.CatchupCoalesce} {
		s := mustSchedule(t, cron.Spec{Cron: "0 * * * *", Catchup: c})
		st := cron.State{Last: day.Add(9 * time.Hour)}

		still, rep := s.Plan(task, st, day.Add(11*time.Hour), inPause)
		require.Equal(t, st, still, "nothing is decided while paused")
		require.Zero(t, rep.Missed)

		st, rep = s.Plan(task, st, pause[0].Until, inPause)
		require.Empty(t, drain(&st), c)
		require.Equal(t, 3, rep.Skipped, c)
		require.Equal(t, []string{"10:00 skipped paused", "11:00 skipped paused", "12:00 skipped paused"}, describePassed(st.Pending), c)
	}
}

func TestFirstPlanStartsTheScheduleAtNow(t *testing.T) {
	t.Parallel()
	s := mustSchedule(t, cron.Spec{Cron: "0 * * * *", Catchup: cron.CatchupBackfill})
	now := utc("2026-05-04T10:30:00Z")
	st, rep := s.Plan(task, cron.State{}, now, nil)
	require.Equal(t, now, st.Last)
	require.Empty(t, st.Queue)
	require.Equal(t, cron.Report{}, rep)
	wake, ok := s.Wake(task, st, now)
	require.True(t, ok)
	require.Equal(t, utc("2026-05-04T11:00:00Z"), wake)
}

func TestJitterDelaysTheRunNotItsKey(t *testing.T) {
	t.Parallel()
	s := mustSchedule(t, cron.Spec{Cron: "0 * * * *", Jitter: 10 * time.Minute})
	at := utc("2026-05-04T11:00:00Z")
	st, _ := s.Plan(task, cron.State{}, utc("2026-05-04T10:30:00Z"), nil)
	due := at.Add(cron.Jitter(task, at, 10*time.Minute))
	require.True(t, due.After(at), "this task's jitter at 11:00 is not zero")
	wake, _ := s.Wake(task, st, utc("2026-05-04T10:30:00Z"))
	require.Equal(t, due, wake)

	early, _ := s.Plan(task, st, due.Add(-time.Millisecond), nil)
	require.Empty(t, early.Queue, "not due before its jittered time")
	st, _ = s.Plan(task, st, due, nil)
	runs := drain(&st)
	require.Len(t, runs, 1)
	require.Equal(t, at, runs[0].NominalAt)
	require.Zero(t, st.Counts.Missed, "on time")
}

func TestGapSkipIsPassedWithReasonDSTGap(t *testing.T) {
	t.Parallel()
	s := mustSchedule(t, cron.Spec{Cron: "30 2 * * *", TZ: "America/New_York", DST: cron.DST{Gap: cron.GapSkip}})
	st, _ := s.Plan(task, cron.State{}, utc("2026-03-06T12:00:00Z"), nil)
	var runs []pacer.Occurrence
	for now := utc("2026-03-06T12:00:00Z"); ; {
		var ok bool
		now, ok = s.Wake(task, st, now)
		require.True(t, ok)
		if now.After(utc("2026-03-10T12:00:00Z")) {
			break
		}
		st, _ = s.Plan(task, st, now, nil)
		runs = append(runs, drain(&st)...)
	}
	var got []string
	for _, r := range runs {
		got = append(got, r.NominalAt.Format(time.RFC3339)+" "+strings.Join(describePassed(r.Passed), ","))
	}
	require.Equal(t, []string{
		"2026-03-07T07:30:00Z ",
		"2026-03-09T06:30:00Z 07:00 skipped dst_gap", // 2026-03-08 02:30 never was
		"2026-03-10T06:30:00Z ",
	}, got)
	require.Equal(t, cron.Counts{Skipped: 1}, st.Counts)
}

func TestAWakeUpLaterThanTheHorizonReportsWhatItLeftOut(t *testing.T) {
	t.Parallel()
	s := mustSchedule(t, cron.Spec{Cron: "0 * * * *", Catchup: cron.CatchupSkip})
	last := utc("2026-01-01T00:00:00Z")
	now := last.Add(cron.Horizon + 48*time.Hour)
	st, rep := s.Plan(task, cron.State{Last: last}, now, nil)
	require.Equal(t, &cron.Window{From: last, Until: now.Add(-cron.Horizon)}, rep.Unrecorded)
	hours := int(cron.Horizon / time.Hour)
	require.Equal(t, hours-1, rep.Missed, "all but the one on time now")
	runs := drain(&st)
	require.Len(t, runs, 1)
	// 35 days of hourly skips are one entry in the run's input.
	require.Len(t, runs[0].Passed, 1)
	require.Equal(t, hours-1, runs[0].Passed[0].Count)
	require.Equal(t, int64(3600), runs[0].Passed[0].StepSeconds)
	require.Equal(t, now.Add(-cron.Horizon).Add(time.Hour), runs[0].Passed[0].NominalAt)
}

// A 30-day pause of a minutely task: 43,200 skipped occurrences stay a
// small payload.
func TestLongPausesStaySmall(t *testing.T) {
	t.Parallel()
	s := mustSchedule(t, cron.Spec{Cron: "* * * * *", TZ: "Europe/London", Catchup: cron.CatchupLatest})
	from := utc("2026-03-10T00:00:00Z")
	st, _ := s.Plan(task, cron.State{}, from, nil)
	month := []cron.Window{{From: from, Until: from.Add(30 * 24 * time.Hour)}}
	st, rep := s.Plan(task, st, from.Add(30*24*time.Hour), func(at time.Time) bool { return paused(month, at) })
	require.Equal(t, 30*24*60-1, rep.Skipped, "all but the one due as the pause ends, passed as paused")
	runs := drain(&st)
	require.Len(t, runs, 1, "the one on time at the pause's end")
	body, err := json.Marshal(runs[0])
	require.NoError(t, err)
	require.Less(t, len(body), 1024, "%s", body)
	require.Len(t, passedTimes(runs[0].Passed), 30*24*60-1)
}

func passedTimes(passed []pacer.PassedOccurrence) []time.Time {
	var out []time.Time
	for _, p := range passed {
		out = append(out, p.Times()...)
	}
	return out
}

func TestCompactExpandsBackToTheSameOccurrences(t *testing.T) {
	t.Parallel()
	base := utc("2026-05-04T00:00:00Z")
	into := base.Add(10 * time.Hour)
	var singles []pacer.PassedOccurrence
	add := func(at time.Time, status, reason string, into *time.Time) {
		singles = append(singles, pacer.PassedOccurrence{NominalAt: at, Status: status, Reason: reason, CoalescedInto: into})
	}
	for i := range 5 {
		add(base.Add(time.Duration(i)*time.Hour), pacer.RunSkipped, pacer.SkipPaused, nil)
	}
	add(base.Add(5*time.Hour), pacer.RunSkipped, pacer.SkipCatchup, nil)
	add(base.Add(6*time.Hour), pacer.RunSkipped, pacer.SkipCatchup, nil)
	add(base.Add(8*time.Hour), pacer.RunSkipped, pacer.SkipCatchup, nil) // another step
	add(base.Add(9*time.Hour), pacer.RunCoalesced, "", &into)
	add(base.Add(9*time.Hour+30*time.Minute), pacer.RunCoalesced, "", &into)

	compact := cron.Compact(singles)
	require.Len(t, compact, 4, "five paused, two caught up an hour apart, one two hours on, two coalesced")
	require.Equal(t, 5, compact[0].Count)
	var expanded []pacer.PassedOccurrence
	for _, p := range compact {
		for _, at := range p.Times() {
			e := p
			e.NominalAt, e.Count, e.StepSeconds = at, 0, 0
			expanded = append(expanded, e)
		}
	}
	require.Equal(t, singles, expanded)
	require.Equal(t, compact, cron.Compact(compact), "compacting twice changes nothing")
	require.Nil(t, cron.Compact(nil))
}

func TestStateSurvivesContinueAsNew(t *testing.T) {
	t.Parallel()
	day := utc("2026-05-04T00:00:00Z")
	s := mustSchedule(t, cron.Spec{Cron: "0 * * * *", Catchup: cron.CatchupCoalesce})
	st := cron.State{Last: day.Add(9 * time.Hour)}
	st, _ = s.Plan(task, st, day.Add(12*time.Hour+30*time.Minute), nil)
	body, err := json.Marshal(st)
	require.NoError(t, err)
	var back cron.State
	require.NoError(t, json.Unmarshal(body, &back))
	require.Equal(t, st, back, "%s", body)
}

// TestPlanAccountsForEveryOccurrenceExactlyOnce drives the planner the way
// the workflow will, through random outages, repeated wake-ups, pauses and
// resumes, over clock changes, and checks its promises: every nominal time
// is run or passed exactly once, runs start oldest first, catch-up runs
// stay within maxCatchup, and every reason is right.
func TestPlanAccountsForEveryOccurrenceExactlyOnce(t *testing.T) {
	t.Parallel()
	specs := []cron.Spec{
		{Cron: "0 * * * *", TZ: "America/New_York", DST: cron.DST{Overlap: cron.OverlapBoth}},
		{Cron: "*/7 * * * *", TZ: "Europe/London"},
		{Cron: "30 1,2 * * *", TZ: "America/New_York", DST: cron.DST{Gap: cron.GapSkip, Overlap: cron.OverlapBoth}},
		{Cron: "0,30 1-3 * * *", TZ: "Australia/Lord_Howe", DST: cron.DST{Gap: cron.GapSkip, Overlap: cron.OverlapLast}},
		{Cron: "15 10 * * 1-5", TZ: "UTC"},
		{Cron: "@daily", TZ: "America/Sao_Paulo", DST: cron.DST{Gap: cron.GapSkip}},
	}
	starts := []time.Time{utc("2026-03-07T00:00:00Z"), utc("2026-10-30T00:00:00Z"), utc("2026-04-03T00:00:00Z"),
		utc("2026-10-02T00:00:00Z"), utc("2018-11-01T00:00:00Z"), utc("2026-06-01T00:00:00Z")}
	rng := rand.New(rand.NewPCG(7, 11))
	for iteration := range 100 {
		spec := specs[rng.IntN(len(specs))]
		spec.Catchup = cron.Catchups[rng.IntN(len(cron.Catchups))]
		if spec.Catchup == cron.CatchupAll || spec.Catchup == cron.CatchupBackfill {
			spec.MaxCatchup = 1 + rng.IntN(4)
		}
		if rng.IntN(2) == 0 {
			spec.Jitter = time.Duration(rng.IntN(120)) * time.Second
		}
		s := mustSchedule(t, spec)
		name := fmt.Sprintf("#%d %s", iteration, s.Spec())
		start := starts[rng.IntN(len(starts))].Add(time.Duration(rng.IntN(48*60)) * time.Minute)

		st, _ := s.Plan(task, cron.State{}, start, nil)
		now := start
		var pauses []cron.Window // the test's own record
		var runs []pacer.Occurrence
		for range 40 {
			switch r := rng.IntN(10); {
			case r < 5: // on time
				if wake, ok := s.Wake(task, st, now); ok && wake.After(now) {
					now = wake
				}
			case r < 7: // an outage
				now = now.Add(time.Duration(rng.IntN(36*60)) * time.Minute)
			case r < 8: // a repeated wake-up
			case r < 9:
				until := now.Add(time.Duration(1+rng.IntN(12*60)) * time.Minute)
				if n := len(pauses); n > 0 && pauses[n-1].Until.After(now) {
					pauses[n-1].Until = until
				} else {
					pauses = append(pauses, cron.Window{From: now, Until: until})
				}
			default: // a resume
				if n := len(pauses); n > 0 && pauses[n-1].Until.After(now) {
					pauses[n-1].Until = now
				}
			}
			before := st
			var rep cron.Report
			st, rep = s.Plan(task, st, now, func(at time.Time) bool { return paused(pauses, at) })
			if len(before.Queue) == 0 {
				queued := len(st.Queue)
				limit := map[cron.Catchup]int{cron.CatchupSkip: 1, cron.CatchupLatest: 2, cron.CatchupCoalesce: 2,
					cron.CatchupAll: spec.MaxCatchup + 1, cron.CatchupBackfill: spec.MaxCatchup + 1}[spec.Catchup]
				require.LessOrEqual(t, queued, limit, "%s: one plan queued %d runs", name, queued)
				require.Equal(t, queued, rep.Queued)
			}
			if !paused(pauses, now) { // the decision holds queued runs while paused
				runs = append(runs, drain(&st)...)
			}
		}

		// Account: every nominal time in (start, Last] exactly once.
		fires := s.Between(start, st.Last)
		fireAt := make(map[time.Time]cron.Fire, len(fires))
		for _, f := range fires {
			fireAt[f.At] = f
		}
		fire := func(at time.Time) cron.Fire {
			f, ok := fireAt[at]
			require.True(t, ok, "%s: %s is no fire of the schedule", name, at)
			return f
		}
		var accounted []time.Time
		coalescedInto := map[time.Time]int{}
		runAt := map[time.Time]pacer.Occurrence{}
		check := func(passed []pacer.PassedOccurrence) {
			for _, p := range passed {
				for _, at := range p.Times() {
					accounted = append(accounted, at)
					switch {
					case p.Status == pacer.RunCoalesced:
						require.NotNil(t, p.CoalescedInto, name)
						coalescedInto[*p.CoalescedInto]++
					case p.Reason == pacer.SkipPaused:
						require.True(t, paused(pauses, s.DueAt(task, fire(at))), "%s: %s skipped as paused", name, at)
					case p.Reason == pacer.SkipDSTGap:
						require.True(t, fire(at).Skip, "%s: %s skipped as dst_gap", name, at)
					default:
						require.Equal(t, pacer.SkipCatchup, p.Reason, name)
						require.False(t, paused(pauses, s.DueAt(task, fire(at))), "%s: %s skipped as caught up, in a pause", name, at)
					}
				}
			}
		}
		for i, occ := range runs {
			require.Equal(t, task, occ.Task)
			if i > 0 {
				require.True(t, runs[i-1].NominalAt.Before(occ.NominalAt), "%s: runs oldest first", name)
			}
			accounted = append(accounted, occ.NominalAt)
			runAt[occ.NominalAt] = occ
			check(occ.Passed)
		}
		for _, occ := range st.Queue {
			accounted = append(accounted, occ.NominalAt)
			runAt[occ.NominalAt] = occ
			check(occ.Passed)
		}
		check(st.Pending)
		for into, n := range coalescedInto {
			occ, ok := runAt[into]
			require.True(t, ok, "%s: coalesced into %s, which is not a run", name, into)
			require.NotNil(t, occ.Coalesced)
			require.Equal(t, n+1, occ.Coalesced.Count, "%s: the coalesced run's count", name)
		}

		var want []time.Time
		for _, f := range fires {
			want = append(want, f.At)
		}
		slices.SortFunc(accounted, time.Time.Compare)
		require.Equal(t, want, accounted, "%s: every nominal time exactly once", name)
	}
}

func paused(pauses []cron.Window, t time.Time) bool {
	return slices.ContainsFunc(pauses, func(w cron.Window) bool { return w.Holds(t) })
}
