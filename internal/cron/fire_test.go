package cron_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/cron"
)

func mustSchedule(t *testing.T, spec cron.Spec) *cron.Schedule {
	t.Helper()
	s, err := cron.New(spec)
	require.NoError(t, err)
	return s
}

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

// firesOn lists the fires of one local day as "RFC3339 UTC [wall, flags]".
func firesOn(s *cron.Schedule, from, to string) []string {
	var out []string
	for _, f := range s.Between(utc(from), utc(to)) {
		line := f.At.Format(time.RFC3339) + " " + f.At.In(s.Location()).Format("15:04 MST") + " wall " + f.Wall()[11:]
		if f.Gap {
			line += " gap"
		}
		if f.Skip {
			line += " skip"
		}
		out = append(out, line)
	}
	return out
}

// Hand-written cases at the clock changes of 2026 (and Sao Paulo's last
// midnight change, 2018), each read off a calendar, not computed.
func TestFireTimesAtClockChanges(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		give     cron.Spec
		from, to string
		want     []string
	}{
		{
			name: "new york spring, 02:30 shifted to 03:00 EDT",
			give: cron.Spec{Cron: "30 2 * * *", TZ: "America/New_York"},
			from: "2026-03-08T00:00:00Z", to: "2026-03-09T00:00:00Z",
			want: []string{"2026-03-08T07:00:00Z 03:00 EDT wall 02:30 gap"},
		},
		{
			name: "new york spring, 02:30 skipped",
			give: cron.Spec{Cron: "30 2 * * *", TZ: "America/New_York", DST: cron.DST{Gap: cron.GapSkip}},
			from: "2026-03-08T00:00:00Z", to: "2026-03-09T00:00:00Z",
			want: []string{"2026-03-08T07:00:00Z 03:00 EDT wall 02:30 gap skip"},
		},
		{
			name: "new york spring, hourly: 02:00 does not exist and 03:00 stands for it",
			give: cron.Spec{Cron: "0 1-4 * * *", TZ: "America/New_York", DST: cron.DST{Gap: cron.GapSkip}},
			from: "2026-03-08T00:00:00Z", to: "2026-03-09T00:00:00Z",
			want: []string{
				"2026-03-08T06:00:00Z 01:00 EST wall 01:00",
				"2026-03-08T07:00:00Z 03:00 EDT wall 03:00",
				"2026-03-08T08:00:00Z 04:00 EDT wall 04:00",
			},
		},
		{
			name: "new york autumn, 01:30 first",
			give: cron.Spec{Cron: "30 1 * * *", TZ: "America/New_York"},
			from: "2026-11-01T00:00:00Z", to: "2026-11-02T00:00:00Z",
			want: []string{"2026-11-01T05:30:00Z 01:30 EDT wall 01:30"},
		},
		{
			name: "new york autumn, 01:30 last",
			give: cron.Spec{Cron: "30 1 * * *", TZ: "America/New_York", DST: cron.DST{Overlap: cron.OverlapLast}},
			from: "2026-11-01T00:00:00Z", to: "2026-11-02T00:00:00Z",
			want: []string{"2026-11-01T06:30:00Z 01:30 EST wall 01:30"},
		},
		{
			name: "new york autumn, 01:30 both",
			give: cron.Spec{Cron: "30 1 * * *", TZ: "America/New_York", DST: cron.DST{Overlap: cron.OverlapBoth}},
			from: "2026-11-01T00:00:00Z", to: "2026-11-02T00:00:00Z",
			want: []string{"2026-11-01T05:30:00Z 01:30 EDT wall 01:30", "2026-11-01T06:30:00Z 01:30 EST wall 01:30"},
		},
		{
			name: "new york autumn, half-hourly both: the repeated hour in instant order",
			give: cron.Spec{Cron: "*/30 1 * * *", TZ: "America/New_York", DST: cron.DST{Overlap: cron.OverlapBoth}},
			from: "2026-11-01T00:00:00Z", to: "2026-11-02T00:00:00Z",
			want: []string{
				"2026-11-01T05:00:00Z 01:00 EDT wall 01:00", "2026-11-01T05:30:00Z 01:30 EDT wall 01:30",
				"2026-11-01T06:00:00Z 01:00 EST wall 01:00", "2026-11-01T06:30:00Z 01:30 EST wall 01:30",
			},
		},
		{
			name: "london spring, 01:30 shifted to 02:00 BST",
			give: cron.Spec{Cron: "30 1 * * *", TZ: "Europe/London"},
			from: "2026-03-29T00:00:00Z", to: "2026-03-30T00:00:00Z",
			want: []string{"2026-03-29T01:00:00Z 02:00 BST wall 01:30 gap"},
		},
		{
			name: "london autumn, 01:30 last",
			give: cron.Spec{Cron: "30 1 * * *", TZ: "Europe/London", DST: cron.DST{Overlap: cron.OverlapLast}},
			from: "2026-10-25T00:00:00Z", to: "2026-10-26T00:00:00Z",
			want: []string{"2026-10-25T01:30:00Z 01:30 GMT wall 01:30"},
		},
		{
			name: "lord howe spring, 02:15 falls in the 30-minute gap",
			give: cron.Spec{Cron: "15 2 * * *", TZ: "Australia/Lord_Howe"},
			from: "2026-10-03T12:00:00Z", to: "2026-10-04T12:00:00Z",
			want: []string{"2026-10-03T15:30:00Z 02:30 +11 wall 02:15 gap"},
		},
		{
			name: "lord howe autumn, 01:45 both: half an hour apart",
			give: cron.Spec{Cron: "45 1 * * *", TZ: "Australia/Lord_Howe", DST: cron.DST{Overlap: cron.OverlapBoth}},
			from: "2026-04-04T12:00:00Z", to: "2026-04-05T12:00:00Z",
			want: []string{"2026-04-04T14:45:00Z 01:45 +11 wall 01:45", "2026-04-04T15:15:00Z 01:45 +1030 wall 01:45"},
		},
		{
			name: "sao paulo spring 2018, midnight shifted to 01:00",
			give: cron.Spec{Cron: "@daily", TZ: "America/Sao_Paulo"},
			from: "2018-11-04T00:00:00Z", to: "2018-11-05T00:00:00Z",
			want: []string{"2018-11-04T03:00:00Z 01:00 -02 wall 00:00 gap"},
		},
		{
			name: "sao paulo autumn 2018, 23:30 first",
			give: cron.Spec{Cron: "30 23 * * *", TZ: "America/Sao_Paulo"},
			from: "2018-02-18T00:00:00Z", to: "2018-02-19T00:00:00Z",
			want: []string{"2018-02-18T01:30:00Z 23:30 -02 wall 23:30"},
		},
		{
			name: "utc has no changes",
			give: cron.Spec{Cron: "0 */8 * * *"},
			from: "2026-03-08T00:00:00Z", to: "2026-03-09T00:00:00Z",
			want: []string{"2026-03-08T08:00:00Z 08:00 UTC wall 08:00", "2026-03-08T16:00:00Z 16:00 UTC wall 16:00", "2026-03-09T00:00:00Z 00:00 UTC wall 00:00"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, firesOn(mustSchedule(t, tt.give), tt.from, tt.to))
		})
	}
}

func TestNextIsTheFirstFireAfter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		give  cron.Spec
		after string
		want  string
	}{
		// Between the two passes of an overlap: the first is taken already.
		{cron.Spec{Cron: "*/30 1 * * *", TZ: "America/New_York", DST: cron.DST{Overlap: cron.OverlapBoth}}, "2026-11-01T05:45:00Z", "2026-11-01T06:00:00Z"},
		{cron.Spec{Cron: "*/30 1 * * *", TZ: "America/New_York"}, "2026-11-01T05:45:00Z", "2026-11-02T06:00:00Z"},
		{cron.Spec{Cron: "*/30 1 * * *", TZ: "America/New_York", DST: cron.DST{Overlap: cron.OverlapLast}}, "2026-11-01T05:45:00Z", "2026-11-01T06:00:00Z"},
		// Strictly after.
		{cron.Spec{Cron: "0 * * * *"}, "2026-05-01T10:00:00Z", "2026-05-01T11:00:00Z"},
		{cron.Spec{Cron: "0 * * * *"}, "2026-05-01T09:59:59.5Z", "2026-05-01T10:00:00Z"},
		// 29 February: eight years apart around 2100, past the library's
		// five-year search.
		{cron.Spec{Cron: "0 0 29 2 *"}, "2096-03-01T00:00:00Z", "2104-02-29T00:00:00Z"},
		// Day of month and day of week restricted: either matches (Vixie).
		{cron.Spec{Cron: "0 0 13 * 5"}, "2026-02-01T00:00:00Z", "2026-02-06T00:00:00Z"},
		{cron.Spec{Cron: "0 0 13 * 5"}, "2026-02-12T00:00:00Z", "2026-02-13T00:00:00Z"},
		{cron.Spec{Cron: "@yearly", TZ: "Pacific/Kiritimati"}, "2026-06-01T00:00:00Z", "2026-12-31T10:00:00Z"},
	}
	for _, tt := range tests {
		s := mustSchedule(t, tt.give)
		f, ok := s.Next(utc(tt.after))
		require.True(t, ok)
		require.Equal(t, utc(tt.want), f.At, "%s after %s", tt.give.Cron, tt.after)
	}
}

// Next and Between agree: each fire's Next is the fire after it.
func TestNextAgreesWithBetween(t *testing.T) {
	t.Parallel()
	for _, spec := range []cron.Spec{
		{Cron: "*/20 0-3 * * *", TZ: "America/New_York", DST: cron.DST{Overlap: cron.OverlapBoth}},
		{Cron: "15,45 1,2 * * *", TZ: "Australia/Lord_Howe", DST: cron.DST{Gap: cron.GapSkip, Overlap: cron.OverlapLast}},
		{Cron: "@daily", TZ: "America/Sao_Paulo"},
	} {
		s := mustSchedule(t, spec)
		fires := s.Between(utc("2018-01-01T00:00:00Z"), utc("2019-01-01T00:00:00Z"))
		require.Greater(t, len(fires), 300)
		for i := 0; i+1 < len(fires); i++ {
			next, ok := s.Next(fires[i].At)
			require.True(t, ok)
			require.Equal(t, fires[i+1], next, "%s: after %s", spec.Cron, fires[i].At)
			require.True(t, fires[i].At.Before(fires[i+1].At), "strictly increasing")
		}
	}
}

func TestAliasesAreTheirFiveFieldForms(t *testing.T) {
	t.Parallel()
	for alias, spec := range map[string]string{
		"@hourly": "0 * * * *", "@daily": "0 0 * * *", "@midnight": "0 0 * * *",
		"@weekly": "0 0 * * 0", "@monthly": "0 0 1 * *", "@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *",
	} {
		a := mustSchedule(t, cron.Spec{Cron: alias, TZ: "Europe/London"})
		b := mustSchedule(t, cron.Spec{Cron: spec, TZ: "Europe/London"})
		from, to := utc("2025-01-01T00:00:00Z"), utc("2027-01-01T00:00:00Z")
		require.Equal(t, b.Between(from, to), a.Between(from, to), alias)
	}
}

func TestJitterIsDeterministicAndBounded(t *testing.T) {
	t.Parallel()
	at := utc("2026-05-01T10:00:00Z")
	require.Zero(t, cron.Jitter("rollup", at, 0))
	require.Zero(t, cron.Jitter("rollup", at, time.Microsecond), "below a millisecond: none")
	require.Equal(t, cron.Jitter("rollup", at, 30*time.Second), cron.Jitter("rollup", at, 30*time.Second))

	const n = 10000
	var sum time.Duration
	distinct := map[time.Duration]bool{}
	for i := range n {
		j := cron.Jitter("rollup", at.Add(time.Duration(i)*time.Hour), time.Minute)
		if j < 0 || j >= time.Minute || j%time.Millisecond != 0 {
			t.Fatalf("jitter %s: want whole milliseconds in [0, 1m)", j)
		}
		sum += j
		distinct[j] = true
	}
	mean := sum / n
	require.InDelta(t, float64(30*time.Second), float64(mean), float64(time.Second), "spread evenly over [0, 1m)")
	require.Greater(t, len(distinct), n*8/10)
	require.NotEqual(t, cron.Jitter("rollup", at, time.Hour), cron.Jitter("deliver", at, time.Hour), "tasks differ")

	s := mustSchedule(t, cron.Spec{Cron: "0 * * * *", Jitter: 30 * time.Second})
	f, _ := s.Next(at)
	require.Equal(t, f.At.Add(cron.Jitter("rollup", f.At, 30*time.Second)), s.DueAt("rollup", f))
}

func TestLoadZone(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"", "UTC"} {
		loc, err := cron.LoadZone(name)
		require.NoError(t, err)
		require.Equal(t, time.UTC, loc)
	}
	loc, err := cron.LoadZone("Australia/Lord_Howe")
	require.NoError(t, err)
	_, off := time.Date(2026, 1, 1, 0, 0, 0, 0, loc).Zone()
	require.Equal(t, 11*3600, off)
	for _, bad := range []string{"Local", "Mars/Olympus_Mons", "America/", "../etc/passwd", "america/new_york"} {
		_, err := cron.LoadZone(bad)
		require.ErrorIs(t, err, cron.ErrUnknownZone, bad)
	}
}
