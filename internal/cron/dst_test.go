package cron_test

import (
	"cmp"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/cron"
)

// The oracle of the DST tests. It never calls the code under test (only
// the zone data is shared): it steps UTC instants a quarter of an hour at
// a time from 1999-12-30 to 2101-01-02, reads each instant's wall clock
// from its offset (time.Time.Zone), matches the readings with plain Go
// predicates, and applies the policy definitions of SPEC §3.4 to what it
// sees:
//
//   - a reading the clock skipped between two steps is in a gap; it fires at
//     the step after the jump (the first instant after the gap) under shift,
//     is recorded skipped there under skip, and folds into a reading that
//     fires at that same instant;
//   - a reading seen again after the clock went back is in an overlap:
//     first keeps its first instant, last its last, both all of them.
//
// Every spec below fires on quarter hours, and every clock change of these
// zones happens on a quarter hour (the oracle checks that), so quarter-hour
// steps see every reading and every change.
var (
	oracleFrom = time.Date(1999, 12, 30, 0, 0, 0, 0, time.UTC)
	oracleTo   = time.Date(2101, 1, 2, 0, 0, 0, 0, time.UTC)
	rangeFrom  = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	rangeTo    = time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)
)

const step = 15 * 60 // seconds

// denseDays is how many days either side of a clock change dense specs
// are compared over (the windows are two days either side; the oracle
// reads one more).
const denseDays = 3

// oracleSpec is a cron spec and the same schedule as a predicate over a
// reading's minute of the day and weekday (0 = Sunday). Policies only act on
// the readings of a clock change, so most specs are compared over the whole
// century under the default policy and over the four days around each of
// its clock changes under every policy; a century spec is compared over
// the whole century under every policy, and a dense one (too many fires
// for a century) around the changes only.
type oracleSpec struct {
	cron    string
	match   func(minute, weekday int) bool
	dense   bool
	century bool
}

func at(h, m int) func(int, int) bool {
	return func(minute, _ int) bool { return minute == h*60+m }
}

var (
	hourly      = oracleSpec{cron: "@hourly", match: func(m, _ int) bool { return m%60 == 0 }, dense: true}
	halfHourly  = oracleSpec{cron: "*/30 * * * *", match: func(m, _ int) bool { return m%30 == 0 }, dense: true}
	nightly15   = oracleSpec{cron: "*/15 0-3,23 * * *", match: func(m, _ int) bool { return m%15 == 0 && (m < 4*60 || m >= 23*60) }, dense: true}
	sunday2     = oracleSpec{cron: "0 2 * * SUN", match: func(m, wd int) bool { return m == 120 && wd == 0 }}
	oracleZones = []struct {
		zone  string
		specs []oracleSpec
		// changes is how many clock changes 2000–2100 must show, a check
		// of the oracle itself.
		changes int
	}{
		{"America/New_York", []oracleSpec{{cron: "30 2 * * *", match: at(2, 30), century: true}, {cron: "30 1 * * *", match: at(1, 30), century: true}, sunday2, hourly, halfHourly, nightly15}, 200},
		{"Europe/London", []oracleSpec{{cron: "30 1 * * *", match: at(1, 30), century: true}, {cron: "0 1 * * *", match: at(1, 0)}, hourly, halfHourly, nightly15}, 200},
		// A 30-minute change: 02:00 → 02:30 in October, 02:00 → 01:30 in April.
		{"Australia/Lord_Howe", []oracleSpec{{cron: "15 2 * * *", match: at(2, 15), century: true}, {cron: "45 1 * * *", match: at(1, 45), century: true}, {cron: "0 2 * * *", match: at(2, 0)}, hourly, halfHourly, nightly15}, 200},
		// Until 2019: 00:00 → 01:00 in spring, 00:00 → 23:00 the day before in
		// autumn: midnight is the gap, 23:xx the overlap.
		{"America/Sao_Paulo", []oracleSpec{{cron: "@daily", match: at(0, 0), century: true}, {cron: "30 23 * * *", match: at(23, 30), century: true}, hourly, nightly15}, 39},
	}
)

// reading is one instant the oracle saw a spec's reading at.
type reading struct {
	wall, at int64 // unix seconds: the wall clock as UTC, and the instant
	// repeat: the clock showed this reading before (second pass of an
	// overlap); again: it shows it once more later.
	repeat, again bool
}

// gapReading is a reading the clock skipped, and the first instant after
// the skip.
type gapReading struct{ wall, after int64 }

type zoneOracle struct {
	readings map[string][]reading
	gaps     map[string][]gapReading
	changes  []int64 // instants at which the offset changed
}

func runOracle(t *testing.T, loc *time.Location, specs []oracleSpec) zoneOracle {
	o := zoneOracle{readings: map[string][]reading{}, gaps: map[string][]gapReading{}}
	offsetAt := func(u int64) int64 {
		_, off := time.Unix(u, 0).In(loc).Zone()
		return int64(off)
	}
	wallAt := func(u int64) int64 { return u + offsetAt(u) }
	// Asking the zone at every step costs seconds over a century; a UTC day
	// that starts and ends on one offset keeps it throughout (no zone
	// changes its clock twice within a day; the count of changes checks
	// it), so the zone is asked step by step only on days it changes. Dense
	// specs are compared near changes only, so they are read there only.
	first := floorDiv(oracleFrom.Unix(), 86400)
	days := int(floorDiv(oracleTo.Unix(), 86400)-first) + 1
	changeDay := make([]bool, days)
	for d := range days {
		u := (first + int64(d)) * 86400
		changeDay[d] = offsetAt(u) != offsetAt(u+86400-step)
	}
	nearChange := make([]bool, days)
	for d := range days {
		for e := max(0, d-denseDays); e <= min(days-1, d+denseDays); e++ {
			nearChange[d] = nearChange[d] || changeDay[e]
		}
	}
	var dayEnd, dayOff int64
	var dayChanges, dayNear bool
	matches := func(sp oracleSpec, wall int64) bool {
		days := floorDiv(wall, 86400)
		return sp.match(int((wall-days*86400)/60), int((days+4)%7)) // 1970-01-01 was a Thursday
	}
	prev := wallAt(oracleFrom.Unix() - step)
	high := prev + step // readings below high have been shown
	for u := oracleFrom.Unix(); u < oracleTo.Unix(); u += step {
		if u >= dayEnd {
			d := floorDiv(u, 86400) - first
			dayEnd, dayOff = u+86400, offsetAt(u)
			dayChanges, dayNear = changeDay[d], nearChange[d]
		}
		wall := u + dayOff
		if dayChanges {
			wall = wallAt(u)
		}
		if wall != prev+step {
			o.changes = append(o.changes, u)
			require.Equal(t, prev+step-1, wallAt(u-1), "the clock of %s changes exactly at %s", loc, time.Unix(u, 0).UTC())
			for g := high; g < wall; g += step { // skipped, never shown
				for _, sp := range specs {
					if matches(sp, g) {
						o.gaps[sp.cron] = append(o.gaps[sp.cron], gapReading{wall: g, after: u})
					}
				}
			}
		}
		for _, sp := range specs {
			if (sp.dense && !dayNear) || !matches(sp, wall) {
				continue
			}
			r := reading{wall: wall, at: u, repeat: wall < high}
			rs := o.readings[sp.cron]
			for i := len(rs) - 1; r.repeat && i >= 0 && rs[i].at > u-2*86400; i-- {
				if rs[i].wall == wall { // its earlier pass shows it again now
					rs[i].again = true
					break
				}
			}
			o.readings[sp.cron] = append(rs, r)
		}
		prev = wall
		high = max(high, wall+step)
	}
	return o
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b < 0 {
		q--
	}
	return q
}

// fire is what both sides are compared on. Wall is compared for gap fires
// only: elsewhere it is At's reading on both sides by construction.
type fire struct {
	At   int64
	Wall string
	Gap  bool
	Skip bool
}

func (f fire) String() string {
	return fmt.Sprintf("%s (wall %q gap=%v skip=%v)", time.Unix(f.At, 0).UTC().Format(time.RFC3339), f.Wall, f.Gap, f.Skip)
}

// expected applies the policies to the oracle's readings in (from, to].
func (o zoneOracle) expected(spec string, gap cron.Gap, overlap cron.Overlap, from, to int64) []fire {
	var out []fire
	rs := o.readings[spec] // in instant order: look at the window only
	lo, _ := slices.BinarySearchFunc(rs, from, func(r reading, t int64) int { return cmp.Compare(r.at, t) })
	hi, _ := slices.BinarySearchFunc(rs, to+1, func(r reading, t int64) int { return cmp.Compare(r.at, t) })
	for _, r := range rs[lo:hi] {
		keep := overlap == cron.OverlapBoth || (overlap == cron.OverlapFirst && !r.repeat) || (overlap == cron.OverlapLast && !r.again)
		if keep && r.at > from && r.at <= to {
			out = append(out, fire{At: r.at})
		}
	}
	for _, g := range o.gaps[spec] {
		if g.after <= from || g.after > to {
			continue
		}
		// A reading that fires at the instant, or an earlier skipped
		// reading folded there, stands for this one.
		i, taken := slices.BinarySearchFunc(out, g.after, func(e fire, t int64) int { return cmp.Compare(e.At, t) })
		if !taken {
			out = slices.Insert(out, i, fire{At: g.after, Wall: time.Unix(g.wall, 0).UTC().Format("2006-01-02 15:04"), Gap: true, Skip: gap == cron.GapSkip})
		}
	}
	return out
}

func actual(s *cron.Schedule, from, to int64) []fire {
	var out []fire
	for _, f := range s.Between(time.Unix(from, 0), time.Unix(to, 0)) {
		e := fire{At: f.At.Unix(), Gap: f.Gap, Skip: f.Skip}
		if f.Gap {
			e.Wall = f.Wall()
		}
		out = append(out, e)
	}
	return out
}

// TestFireTimesMatchTheOracle2000To2100 compares the fire list of every
// spec under every gap and overlap policy with the oracle's: over the
// whole century for daily and weekly specs, and over the four days around
// each of the century's clock changes for the dense ones.
func TestFireTimesMatchTheOracle2000To2100(t *testing.T) {
	t.Parallel()
	for _, z := range oracleZones {
		t.Run(z.zone, func(t *testing.T) {
			t.Parallel()
			loc, err := cron.LoadZone(z.zone)
			require.NoError(t, err)
			o := runOracle(t, loc, z.specs)
			var changes []int64
			for _, c := range o.changes {
				if c >= rangeFrom.Unix() && c < rangeTo.Unix() {
					changes = append(changes, c)
				}
			}
			require.Len(t, changes, z.changes, "clock changes of %s in 2000–2100", z.zone)

			century := [][2]int64{{rangeFrom.Unix(), rangeTo.Unix()}}
			var nearChanges [][2]int64
			for _, c := range changes {
				nearChanges = append(nearChanges, [2]int64{c - (denseDays-1)*86400, c + (denseDays-1)*86400})
			}
			for _, sp := range z.specs {
				for _, gap := range []cron.Gap{cron.GapShift, cron.GapSkip} {
					for _, overlap := range []cron.Overlap{cron.OverlapFirst, cron.OverlapLast, cron.OverlapBoth} {
						windows := nearChanges
						if sp.century || (!sp.dense && gap == cron.GapShift && overlap == cron.OverlapFirst) {
							windows = century
						}
						s, err := cron.New(cron.Spec{Cron: sp.cron, TZ: z.zone, DST: cron.DST{Gap: gap, Overlap: overlap}})
						require.NoError(t, err)
						total := 0
						for _, w := range windows {
							want := o.expected(sp.cron, gap, overlap, w[0], w[1])
							require.NotEmpty(t, want)
							got := actual(s, w[0], w[1])
							if !slices.Equal(want, got) {
								require.Equal(t, want, got, "%s in %s, gap %s, overlap %s, (%s, %s]", sp.cron, z.zone, gap, overlap,
									time.Unix(w[0], 0).UTC(), time.Unix(w[1], 0).UTC())
							}
							total += len(got)
						}
						t.Logf("%-18s gap=%-5s overlap=%-5s %7d fires equal the oracle's", sp.cron, gap, overlap, total)
					}
				}
			}
		})
	}
}
