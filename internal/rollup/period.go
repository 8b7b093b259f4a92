// Package rollup is the calendar and vocabulary of pacer's rollups (SPEC
// §10.1): hourly periods on UTC hour boundaries, days that end at midnight
// in a configured time zone (daylight saving included), and the names of
// periods, subjects and events shared by the store, the activities, the API
// and the CLI. It does no I/O.
package rollup

import (
	"fmt"
	"time"
	// Every worker must compute the same midnights whatever zone files its
	// host has (or lacks): the zone database ships in the binary.
	_ "time/tzdata"
)

// Periods (rollups.period).
const (
	Hour = "hour"
	Day  = "day"
)

// Subject kinds (rollups.subject_kind) and the competition's one subject.
const (
	KindToken       = "token"
	KindAgent       = "agent"
	KindCompetition = "competition"
	// CompetitionSubject is the subject of the competition's rows.
	CompetitionSubject = "all"
)

// Events a subscriber can ask for, one per period.
const (
	EventHourly = "hourly"
	EventDaily  = "daily"
)

// Events lists every event, in a stable order.
var Events = []string{EventHourly, EventDaily}

// EventOf returns the event delivering a period.
func EventOf(period string) string {
	if period == Day {
		return EventDaily
	}
	return EventHourly
}

// Period is one rollup period, [Start, End).
type Period struct {
	Kind  string    `json:"period"`
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
}

// HourBefore returns the hour that closed at or before t. Hours are UTC
// hours: in a zone whose offset is not whole hours, days and hours do not
// share boundaries, and no hour is 59 or 61 minutes long.
func HourBefore(t time.Time) Period {
	end := t.UTC().Truncate(time.Hour)
	return Period{Kind: Hour, Start: end.Add(-time.Hour), End: end}
}

// DaysBefore returns the n days that closed at or before t in loc, the most
// recent first. A day runs from one local midnight to the next (23 or 25
// hours across a daylight-saving change).
func DaysBefore(t time.Time, loc *time.Location, n int) []Period {
	local := t.In(loc)
	y, m, d := local.Date()
	days := make([]Period, 0, n)
	end := StartOfDay(y, m, d, loc)
	for k := 1; k <= n; k++ {
		start := StartOfDay(y, m, d-k, loc)
		days = append(days, Period{Kind: Day, Start: start.UTC(), End: end.UTC()})
		end = start
	}
	return days
}

// DaysOverlapping returns the days in loc that share an instant with p,
// earliest first: one for an hour inside a day, two for an hour that a
// midnight not on a UTC hour boundary cuts (a zone at +05:30, say).
func DaysOverlapping(p Period, loc *time.Location) []Period {
	y, m, d := p.Start.In(loc).Date()
	var days []Period
	for start := StartOfDay(y, m, d, loc); start.Before(p.End); {
		d++
		end := StartOfDay(y, m, d, loc)
		days = append(days, Period{Kind: Day, Start: start.UTC(), End: end.UTC()})
		start = end
	}
	return days
}

// StartOfDay returns the first instant of a date in loc. That is midnight,
// except where a daylight-saving gap swallows midnight (clocks jumping from
// 00:00 to 01:00): then it is the instant the gap ends. Day overflow is
// normalised as by time.Date (d = 0 is the last day of the month before).
func StartOfDay(y int, m time.Month, d int, loc *time.Location) time.Time {
	// Normalise the date first, at noon, far from any transition.
	y, m, d = time.Date(y, m, d, 12, 0, 0, 0, loc).Date()
	t := time.Date(y, m, d, 0, 0, 0, 0, loc)
	same := func(t time.Time) bool {
		ty, tm, td := t.Date()
		return ty == y && tm == m && td == d
	}
	// Where midnight does not exist, time.Date may land on either side of
	// the gap: walk to the first instant of the date. Transitions fall on
	// whole minutes, and a gap is at most a few hours, so this is short.
	for i := 0; !same(t) && i < 24*60; i++ {
		t = t.Add(time.Minute)
	}
	for i := 0; same(t.Add(-time.Minute)) && i < 24*60; i++ {
		t = t.Add(-time.Minute)
	}
	return t
}

// LoadZone resolves an IANA zone name ("UTC", "Europe/London") from the
// embedded zone database.
func LoadZone(name string) (*time.Location, error) {
	if name == "" || name == "Local" {
		// "Local" would make midnight depend on the host a worker runs on.
		return nil, fmt.Errorf("time zone %q: give an IANA zone name such as UTC or Europe/London", name)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("time zone %q: not an IANA zone name", name)
	}
	return loc, nil
}
