package rollup_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/rollup"
)

func zone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := rollup.LoadZone(name)
	require.NoError(t, err)
	return loc
}

func TestHourBefore(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		give      time.Time
		wantStart time.Time
	}{
		{give: time.Date(2026, 11, 2, 10, 5, 0, 0, time.UTC), wantStart: time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)},
		{give: time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC), wantStart: time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)},
		{give: time.Date(2026, 11, 2, 0, 59, 59, 0, time.UTC), wantStart: time.Date(2026, 11, 1, 23, 0, 0, 0, time.UTC)},
		// A zone with a half-hour offset still gets UTC hours.
		{give: time.Date(2026, 11, 2, 15, 35, 0, 0, zone(t, "Asia/Kolkata")), wantStart: time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)},
	} {
		p := rollup.HourBefore(tc.give)
		require.Equal(t, rollup.Hour, p.Kind)
		require.True(t, tc.wantStart.Equal(p.Start), "give %s: start %s, want %s", tc.give, p.Start, tc.wantStart)
		require.Equal(t, time.Hour, p.End.Sub(p.Start))
	}
}

func TestDaysBefore(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		zone      string
		give      time.Time
		wantStart []string // RFC3339 UTC, most recent first
		wantHours []float64
	}{
		{
			name: "utc", zone: "UTC", give: time.Date(2026, 11, 2, 0, 5, 0, 0, time.UTC),
			wantStart: []string{"2026-11-01T00:00:00Z", "2026-10-31T00:00:00Z"},
			wantHours: []float64{24, 24},
		},
		{
			name: "at midnight exactly the day just ended counts", zone: "UTC", give: time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC),
			wantStart: []string{"2026-11-01T00:00:00Z"},
			wantHours: []float64{24},
		},
		{
			// Clocks go back on 2026-10-25: that day has 25 hours.
			name: "london autumn", zone: "Europe/London", give: time.Date(2026, 10, 26, 3, 0, 0, 0, time.UTC),
			wantStart: []string{"2026-10-24T23:00:00Z", "2026-10-23T23:00:00Z"},
			wantHours: []float64{25, 24},
		},
		{
			// Clocks go forward on 2026-03-29: 23 hours.
			name: "london spring", zone: "Europe/London", give: time.Date(2026, 3, 30, 12, 0, 0, 0, time.UTC),
			wantStart: []string{"2026-03-29T00:00:00Z", "2026-03-28T00:00:00Z"},
			wantHours: []float64{23, 24},
		},
		{
			// São Paulo skipped midnight on 2018-11-04 (00:00 -03 became
			// 01:00 -02): that day starts at 01:00 local, 03:00 UTC.
			name: "midnight in a gap", zone: "America/Sao_Paulo", give: time.Date(2018, 11, 5, 12, 0, 0, 0, time.UTC),
			wantStart: []string{"2018-11-04T03:00:00Z", "2018-11-03T03:00:00Z"},
			wantHours: []float64{23, 24},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			days := rollup.DaysBefore(tc.give, zone(t, tc.zone), len(tc.wantStart))
			require.Len(t, days, len(tc.wantStart))
			for i, d := range days {
				require.Equal(t, tc.wantStart[i], d.Start.Format(time.RFC3339), "day %d", i)
				require.Equal(t, tc.wantHours[i], d.End.Sub(d.Start).Hours(), "day %d", i)
				require.False(t, d.End.After(tc.give), "a day closes at or before the run")
				if i > 0 {
					require.True(t, d.End.Equal(days[i-1].Start), "days are contiguous")
				}
			}
		})
	}
}

func TestLoadZoneRejects(t *testing.T) {
	t.Parallel()
	for _, give := range []string{"", "Local", "Mars/Olympus", "../etc/passwd"} {
		_, err := rollup.LoadZone(give)
		require.Error(t, err, give)
	}
}

func TestDaysOverlapping(t *testing.T) {
	t.Parallel()
	hour := func(s string) rollup.Period {
		start, err := time.Parse(time.RFC3339, s)
		require.NoError(t, err)
		return rollup.Period{Kind: rollup.Hour, Start: start, End: start.Add(time.Hour)}
	}
	for _, tc := range []struct {
		name, zone, hour string
		want             []string // "start/end", RFC3339 UTC
	}{
		{name: "utc", zone: "UTC", hour: "2026-11-02T23:00:00Z",
			want: []string{"2026-11-02T00:00:00Z/2026-11-03T00:00:00Z"}},
		{name: "new york, the hour before its midnight", zone: "America/New_York", hour: "2026-11-11T04:00:00Z",
			want: []string{"2026-11-10T05:00:00Z/2026-11-11T05:00:00Z"}},
		{name: "new york, the hour after", zone: "America/New_York", hour: "2026-11-11T05:00:00Z",
			want: []string{"2026-11-11T05:00:00Z/2026-11-12T05:00:00Z"}},
		// Midnight in Kolkata is 18:30 UTC: that UTC hour is in two days.
		{name: "a half-hour zone cuts the hour", zone: "Asia/Kolkata", hour: "2026-11-02T18:00:00Z",
			want: []string{"2026-11-01T18:30:00Z/2026-11-02T18:30:00Z", "2026-11-02T18:30:00Z/2026-11-03T18:30:00Z"}},
		// London's clocks go back on 2026-10-25: a 25-hour day.
		{name: "a 25-hour day", zone: "Europe/London", hour: "2026-10-25T12:00:00Z",
			want: []string{"2026-10-24T23:00:00Z/2026-10-26T00:00:00Z"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, d := range rollup.DaysOverlapping(hour(tc.hour), zone(t, tc.zone)) {
				require.Equal(t, rollup.Day, d.Kind)
				got = append(got, d.Start.Format(time.RFC3339)+"/"+d.End.Format(time.RFC3339))
			}
			require.Equal(t, tc.want, got)
		})
	}
}
