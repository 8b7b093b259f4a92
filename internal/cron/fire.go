package cron

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math/bits"
	"slices"
	"time"

	robfig "github.com/robfig/cron/v3"
)

// Schedule computes the fire times of a cron Spec. It is immutable.
type Schedule struct {
	spec  Spec
	match *robfig.SpecSchedule
	loc   *time.Location
}

// New compiles a cron spec (validating it and filling its defaults). An
// interval spec is ErrInterval: it runs its interval after the last start,
// which only the scheduler's state knows.
func New(spec Spec) (*Schedule, error) {
	if !spec.IsCron() {
		return nil, fmt.Errorf("%w (every %s)", ErrInterval, spec.Every)
	}
	spec, err := spec.normalize()
	if err != nil {
		return nil, err
	}
	match, err := parseCron(spec.Cron)
	if err != nil {
		return nil, err
	}
	loc, err := LoadZone(spec.TZ)
	if err != nil {
		return nil, err
	}
	return &Schedule{spec: spec, match: match, loc: loc}, nil
}

// Spec is the schedule's spec, defaults filled in.
func (s *Schedule) Spec() Spec { return s.spec }

// Location is the schedule's zone.
func (s *Schedule) Location() *time.Location { return s.loc }

// Fire is one occurrence of a schedule.
type Fire struct {
	// At is the nominal time: the instant the occurrence stands for, UTC,
	// and with the task its run key.
	At time.Time
	// wall is the wall-clock reading the spec named, as a UTC time with
	// its fields (for a gap, a reading the zone's clock never showed).
	wall time.Time
	// Gap says Wall did not exist that day (spring forward): At is the first
	// instant after the gap.
	Gap bool
	// Skip says the occurrence does not run (a gap under GapSkip); the
	// ledger records it as skipped with reason dst_gap.
	Skip bool
}

// Wall is the wall-clock time the spec named in the schedule's zone,
// "2006-01-02 15:04". For a gap it is a time the zone's clock skipped, and
// differs from At's reading.
func (f Fire) Wall() string { return f.wall.Format("2006-01-02 15:04") }

// Next returns the first fire strictly after `after`. ok is false only for
// a spec that stops firing (never, for a validated spec).
func (s *Schedule) Next(after time.Time) (f Fire, ok bool) {
	it := s.iterAfter(after)
	for {
		f, ok := it.next()
		if !ok || f.At.After(after) {
			return f, ok
		}
	}
}

// Between returns the fires with from < At ≤ to, oldest first. The caller
// bounds the range: a minutely spec fires 1,440 times a day.
func (s *Schedule) Between(from, to time.Time) []Fire {
	var out []Fire
	it := s.iterAfter(from)
	for {
		f, ok := it.next()
		if !ok || f.At.After(to) {
			return out
		}
		if f.At.After(from) {
			out = append(out, f)
		}
	}
}

// DueAt is when the occurrence's run should start: its nominal time plus
// the task's jitter for it. An occurrence that does not run (Skip) is due,
// to be passed, at its nominal time.
func (s *Schedule) DueAt(task string, f Fire) time.Time {
	if f.Skip {
		return f.At
	}
	return f.At.Add(Jitter(task, f.At, s.spec.Jitter))
}

// Jitter is the delay in [0, max) of one occurrence's start, in whole
// milliseconds. It is a hash of the task and the nominal time, not a random
// draw: a replayed workflow, a retried activity and every worker compute the
// same delay.
func Jitter(task string, nominal time.Time, max time.Duration) time.Duration {
	steps := uint64(max / time.Millisecond)
	if steps == 0 {
		return 0
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(task))
	var b [9]byte // a separator, then the time: "ab"+c and "a"+bc differ
	binary.BigEndian.PutUint64(b[1:], uint64(nominal.UnixNano()))
	_, _ = h.Write(b[:])
	return time.Duration(h.Sum64()%steps) * time.Millisecond
}

// nextCivil is the library's next matching wall-clock reading after w.
func nextCivil(m *robfig.SpecSchedule, w time.Time) time.Time {
	w = skipAhead(m, w)
	for range 4 {
		if n := m.Next(w); !n.IsZero() {
			return n
		}
		// The library looks about five years ahead; 29 February can be
		// eight years away (2096 to 2104). Go on from where it stopped.
		w = time.Date(w.Year()+5, time.January, 1, 0, 0, 0, 0, time.UTC).Add(-time.Second)
	}
	return time.Time{}
}

// skipAhead returns a time from which the library finds the same next
// reading as from w, sooner: the library steps a second, a minute, an hour
// at a time, and a minute or hour whose bit the spec does not set cannot
// match, so the search may start just before the next one that can. The
// library still decides every match.
func skipAhead(m *robfig.SpecSchedule, w time.Time) time.Time {
	const minuteBits, hourBits = 1<<60 - 1, 1<<24 - 1
	w = w.Truncate(time.Minute)
	minutes, hours := m.Minute&minuteBits, m.Hour&hourBits
	if rest := minutes >> (w.Minute() + 1); rest != 0 {
		// A later minute of this hour.
		return w.Add(time.Duration(bits.TrailingZeros64(rest))*time.Minute + 59*time.Second)
	}
	first := time.Duration(bits.TrailingZeros64(minutes)) * time.Minute
	day := w.Truncate(24 * time.Hour)
	if rest := hours >> (w.Hour() + 1); rest != 0 {
		// The first minute of a later hour of this day.
		next := w.Hour() + 1 + bits.TrailingZeros64(rest)
		return day.Add(time.Duration(next)*time.Hour + first - time.Second)
	}
	// The first minute of the first hour of a later day.
	return day.Add(24*time.Hour + time.Duration(bits.TrailingZeros64(hours))*time.Hour + first - time.Second)
}

// period is one stretch of a zone with one UTC offset, and the range of
// wall-clock readings its clock shows: [cs, ce). Zero ends are unbounded.
type period struct {
	start, end time.Time
	off        time.Duration
	cs, ce     time.Time
}

func periodAt(t time.Time, loc *time.Location) period {
	lt := t.In(loc)
	start, end := lt.ZoneBounds()
	p := period{start: start.UTC(), off: offsetAt(t, loc)}
	p.end = periodEnd(t, end, p.off, loc)
	if !start.IsZero() {
		p.cs = p.start.Add(p.off)
	}
	if !p.end.IsZero() {
		p.ce = p.end.Add(p.off)
	}
	return p
}

func offsetAt(t time.Time, loc *time.Location) time.Duration {
	_, secs := t.In(loc).Zone()
	return time.Duration(secs) * time.Second
}

// periodEnd is the first instant after t at which loc's offset is no
// longer off (zero: never), starting from the end ZoneBounds gave. Go's
// bounds are exact near a clock change, but past a zone's last listed
// transition, where its TZ rule applies, they are otherwise year
// boundaries, and in a leap year an end that does not pass t (it takes
// every year as 365 days). So an end where the offset does not change is
// passed over, and one that does not advance is stepped past an hour at a
// time.
func periodEnd(t, end time.Time, off time.Duration, loc *time.Location) time.Time {
	at := t
	for range 10_000 {
		switch {
		case end.IsZero():
			return time.Time{}
		case !end.After(at):
			next := at.Add(time.Hour)
			if offsetAt(next, loc) != off {
				return firstChange(at, next, off, loc)
			}
			at = next
		case offsetAt(end.Add(-time.Second), loc) != off:
			return firstChange(at, end, off, loc)
		case offsetAt(end, loc) != off:
			return end.UTC()
		default:
			at = end
		}
		_, end = at.In(loc).ZoneBounds()
	}
	return time.Time{}
}

// firstChange finds, to the second, the first instant in (lo, hi] whose
// offset is not off, given that lo's is and hi's is not.
func firstChange(lo, hi time.Time, off time.Duration, loc *time.Location) time.Time {
	lo, hi = lo.Truncate(time.Second), hi.Truncate(time.Second)
	for hi.Sub(lo) > time.Second {
		mid := lo.Add(hi.Sub(lo) / 2).Truncate(time.Second)
		if offsetAt(mid, loc) == off {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi.UTC()
}

// iter yields a schedule's fires in nominal-time order by walking the
// zone's periods in time order: within a period the clock reads
// [cs, ce) once, at instants reading − offset, so the library's readings
// map to instants in order. Between two periods the clock either jumps
// forward (the readings it skips are a gap) or back (readings it shows
// again are an overlap).
type iter struct {
	s      *Schedule
	p      period
	nextCS time.Time // where the next period's clock starts; zero when p is the last
	w      time.Time // the last reading enumerated in p
	// high is the end of the readings earlier periods showed: a reading
	// below it is shown again (the second pass of an overlap).
	high time.Time
	out  []Fire
}

func (s *Schedule) iterAfter(after time.Time) *iter {
	it := &iter{s: s}
	it.enter(periodAt(after, s.loc))
	// Readings whose instant in p is after `after`.
	it.w = after.UTC().Add(it.p.off)
	if !it.p.start.IsZero() {
		it.high = it.p.start.Add(periodAt(it.p.start.Add(-time.Nanosecond), s.loc).off)
	}
	return it
}

func (it *iter) enter(p period) {
	it.p = p
	it.nextCS = time.Time{}
	if !p.end.IsZero() {
		it.nextCS = p.end.Add(offsetAt(p.end, it.s.loc))
	}
}

func (it *iter) next() (Fire, bool) {
	for len(it.out) == 0 {
		if !it.step() {
			return Fire{}, false
		}
	}
	f := it.out[0]
	it.out = slices.Delete(it.out, 0, 1) // at most two wait: keep the array
	return f, true
}

// step enumerates the next reading of the current period, or moves on to
// the next period. It reports false when the schedule fires no more.
func (it *iter) step() bool {
	w := nextCivil(it.s.match, it.w)
	if w.IsZero() {
		return false
	}
	if !it.p.ce.IsZero() && !w.Before(it.p.ce) {
		return it.advance()
	}
	it.w = w
	repeat := !it.high.IsZero() && w.Before(it.high)
	again := !it.nextCS.IsZero() && !w.Before(it.nextCS)
	keep := true
	switch it.s.spec.DST.Overlap {
	case OverlapFirst:
		keep = !repeat
	case OverlapLast:
		keep = !again
	}
	if keep {
		it.out = append(it.out, Fire{At: w.Add(-it.p.off), wall: w})
	}
	return true
}

// advance moves to the next period. Readings its clock jumps over (none
// shown before, the next clock starting past them) are a gap: they fold
// into one fire at the first instant after it, unless the reading the
// clock jumps to fires itself, which then stands for them.
func (it *iter) advance() bool {
	if it.p.end.IsZero() {
		return false
	}
	if it.p.ce.After(it.high) {
		it.high = it.p.ce
	}
	q := periodAt(it.p.end, it.s.loc)
	q.start, q.cs = it.p.end, it.p.end.Add(q.off)
	if q.cs.After(it.high) {
		m := it.s.match
		gap := nextCivil(m, it.high.Add(-time.Second))
		native := nextCivil(m, q.cs.Add(-time.Second)).Equal(q.cs)
		if !gap.IsZero() && gap.Before(q.cs) && !native {
			it.out = append(it.out, Fire{At: q.start, wall: gap, Gap: true, Skip: it.s.spec.DST.Gap == GapSkip})
		}
	}
	it.enter(q)
	it.w = q.cs.Add(-time.Second)
	return true
}
