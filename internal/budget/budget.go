// Package budget is the one Hiro budget every pacer process shares (SPEC
// §5.4), as a pure state machine: State.Take decides whether a request may
// go out now, State.Observe follows what the response's rate-limit headers
// said. The store keeps one State in Postgres and applies each Take and
// Observe inside a transaction, so all processes see one budget; the
// discovery benchmark drives the same code in virtual time.
//
// Two windows bind:
//
//   - the minute window: at most Config.PerMinute a window, lowered to what
//     the upstream says. Its remaining count (ratelimit-remaining) caps what
//     is left of the current window and teaches the window's capacity, so a
//     hidden limit below the configured one is followed from the first
//     answer of each window instead of being found by a wall of 429s. Its
//     reset (ratelimit-reset) aligns the window's end with the upstream's.
//   - the month quota (x-ratelimit-*-stacks-month, when sent): paced, not
//     spent: credit accrues at what is left of the month over what is left
//     of the month's time, so the month never runs dry early, and a lane
//     may bank at most CreditHorizon of it. What the month left unspent so
//     far (more left than an even spend would have left) is banked too:
//     the sweep spends it at the window's pace before its credit.
//
// Two lanes share them. The agents' fast path (LaneFast) may use at most
// FastShare of a window and of the month's pace, and never waits; the sweep
// (LaneSweep) gets the rest, and may use the fast lane's unused share of a
// window too, except for a small FastReserve kept for it. So the sweep is
// never starved by the fast path, and an idle fast path costs the sweep
// little. Each request is debited its cost (x-ratelimit-cost-stacks).
//
// A limit below the configured one may also not be a fixed window
// (SPEC §5.4 names no shape): what ratelimit-remaining says may rise
// within a window, as a sliding window (its room comes back a window
// after each request went) or a token bucket (its room comes back evenly)
// do. The budget tells them apart by what the answers say is left:
// regenLeft follows a sliding window by when its own requests went, a
// limit that frees more than those explain as one that frees room evenly.
//
// A third lane, LaneManual, is an operator's explicit refresh (SPEC §3.1):
// it takes from the minute window by the sweep's rules (the window counts
// it as the sweep's, and it leaves the fast lane its reserve), but the
// month does not pace it: it may spend the month reserve, needs no credit,
// takes none from the other lanes, and is refused only when the month's
// remaining count would go below zero.
package budget

import (
	"cmp"
	"math"
	"slices"
	"time"
)

// Lane is who takes from the budget.
type Lane string

// Lanes.
const (
	LaneSweep Lane = "sweep"
	LaneFast  Lane = "fast"
	// LaneManual is an operator's explicit run: the sweep's window, the
	// whole month's remaining count.
	LaneManual Lane = "manual"
)

// Defaults.
const (
	DefaultFastShare     = 0.2
	DefaultFastReserve   = 0.05
	DefaultMonthReserve  = 0.005
	DefaultCreditHorizon = time.Hour
	DefaultWindow        = time.Minute
	// alignTolerance is how far an upstream reset may be from the window's
	// end and still name the same window (resets come in whole seconds).
	alignTolerance = 1500 * time.Millisecond
)

// Config is the configured plan.
type Config struct {
	// PerMinute is the most requests a window, all lanes together.
	PerMinute int64
	// FastShare is the share of a window and of the month's pace the fast
	// lane may use.
	FastShare float64
	// FastReserve is the share of a window the sweep leaves to the fast
	// lane while the fast lane has not used it.
	FastReserve float64
	// MonthReserve is the share of the month quota never paced out: what
	// an operator's refresh can still spend at the month's end.
	MonthReserve float64
	// CreditHorizon bounds how much unspent month pace a lane banks.
	CreditHorizon time.Duration
	// Window is the minute window's length.
	Window time.Duration
}

// WithDefaults fills the zero fields.
func (c Config) WithDefaults() Config {
	c.FastShare = cmp.Or(c.FastShare, DefaultFastShare)
	c.FastReserve = cmp.Or(c.FastReserve, DefaultFastReserve)
	c.MonthReserve = cmp.Or(c.MonthReserve, DefaultMonthReserve)
	c.CreditHorizon = cmp.Or(c.CreditHorizon, DefaultCreditHorizon)
	c.Window = cmp.Or(c.Window, DefaultWindow)
	c.PerMinute = max(c.PerMinute, 1)
	return c
}

// Observation is what one response's headers said; nil is unknown.
type Observation struct {
	// Status is the HTTP status (429 is a refusal).
	Status int
	// Cost is what the request cost (x-ratelimit-cost-stacks), 1 if unsaid.
	Cost int64
	// Limit and Remaining are the minute window's (ratelimit-limit,
	// ratelimit-remaining, or the lower of it and
	// x-ratelimit-remaining-stacks-minute); Reset is the time until it
	// ends.
	Limit, Remaining *int64
	Reset            *time.Duration
	RetryAfter       *time.Duration
	MonthLimit       *int64
	MonthRemaining   *int64
	// SentAt is when the request went out, on its sender's clock (zero:
	// unknown, taken as the newest).
	SentAt time.Time
}

// State is the budget as every process shares it. The zero State is a
// fresh budget.
type State struct {
	// WindowEnd is when the current minute window ends; WindowStart when
	// it began for us.
	WindowEnd   time.Time `json:"windowEnd"`
	WindowStart time.Time `json:"windowStart"`
	// SweepUsed and FastUsed are the lanes' spend in the window.
	SweepUsed int64 `json:"sweepUsed"`
	FastUsed  int64 `json:"fastUsed"`
	// Left is what the upstream said is left of the window, less what was
	// spent since; nil until the window's first answer.
	Left *int64 `json:"left,omitempty"`
	// WindowCapacity is what the upstream's answers in this window say one
	// window holds for us (our spend plus what it said was left); Capacity
	// is the last window's, which sizes a window until its first answer.
	WindowCapacity *int64 `json:"windowCapacity,omitempty"`
	Capacity       *int64 `json:"capacity,omitempty"`
	// LeftAt is when Left was last read from an answer. Regen is what
	// the answers showed of the limit's shape: true when what is left
	// rose within a window (a sliding window or a token bucket frees
	// room as it goes), false when a probe was refused until the
	// window's end (a fixed window), nil before either.
	LeftAt time.Time `json:"leftAt,omitzero"`
	Regen  *bool     `json:"regen,omitempty"`
	// Sent are when the requests taken in about the last window went,
	// kept while the limit binds below the configured rate (a window
	// holds less) or frees room as it goes: a sliding window frees each
	// one's room a window after it went (regenLeft), and an answer does
	// not count those taken after its request went. Even is true once
	// the limit freed more than they explain: it frees room evenly over
	// time (a token bucket), whatever was sent when.
	Sent []time.Time `json:"sent,omitempty"`
	Even bool        `json:"even,omitempty"`
	// ProbedAt is when the last probe went (probe).
	ProbedAt time.Time `json:"probedAt,omitzero"`
	// LeftSent is when the request went out whose answer Left was last
	// read from (Observation.SentAt): an answer to an earlier one,
	// arriving out of order, says what was left before it and may only
	// lower Left, never show a rise.
	LeftSent time.Time `json:"leftSent,omitzero"`
	// Uncounted are the requests answered without a count since Left
	// was read (they may have taken nothing).
	Uncounted int64 `json:"uncounted,omitempty"`
	// BlockedUntil holds every request after a 429 with Retry-After.
	BlockedUntil time.Time `json:"blockedUntil"`
	Month        Month     `json:"month"`
	// SweepTaken counts the sweep lane's requests (ingest.Allocations).
	SweepTaken int64 `json:"sweepTaken,omitempty"`
}

func (s *State) taken(lane Lane, cost int64) {
	if lane == LaneSweep {
		s.SweepTaken += max(cost, 0)
	}
}

// Month is the month quota's state; Remaining nil means no quota is known.
type Month struct {
	Start       time.Time `json:"start"`
	Limit       *int64    `json:"limit,omitempty"`
	Remaining   *int64    `json:"remaining,omitempty"`
	SweepCredit float64   `json:"sweepCredit"`
	FastCredit  float64   `json:"fastCredit"`
	CreditAt    time.Time `json:"creditAt"`
}

// Decision is the answer to a Take.
type Decision struct {
	OK bool
	// RetryIn is how long until the lane may try again, when refused.
	RetryIn time.Duration
	// Why names the window that refused: "minute", "month" or "blocked".
	Why string
}

// Why values.
const (
	WhyMinute  = "minute"
	WhyMonth   = "month"
	WhyBlocked = "blocked"
)

// Take spends cost for lane at now if the budget allows it.
func (s *State) Take(c Config, lane Lane, cost int64, now time.Time) Decision {
	c = c.WithDefaults()
	cost = max(cost, 1)
	s.roll(c, now)
	if now.Before(s.BlockedUntil) {
		return Decision{RetryIn: s.BlockedUntil.Sub(now), Why: WhyBlocked}
	}
	untilWindow := Decision{RetryIn: s.WindowEnd.Sub(now), Why: WhyMinute}

	fastCap, keep := s.fastShare(c, s.capacity(c))
	switch lane {
	case LaneFast:
		keep = 0
		if s.FastUsed+cost > fastCap {
			return untilWindow
		}
	case LaneManual:
	default:
		lane = LaneSweep
	}
	if s.windowLeft(c, now)-cost < keep {
		wait, ok := s.probe(c, cost, keep, now)
		if !ok {
			return Decision{RetryIn: min(wait, untilWindow.RetryIn), Why: WhyMinute}
		}
	}

	_, monthEnd := MonthOf(now)
	if s.Month.Remaining != nil && lane == LaneManual {
		if *s.Month.Remaining-cost < 0 {
			return Decision{RetryIn: monthEnd.Sub(now), Why: WhyMonth}
		}
		*s.Month.Remaining -= cost
	} else if s.Month.Remaining != nil {
		s.accrue(c, now)
		credit := s.Month.credit(lane)
		switch {
		case float64(*s.Month.Remaining-cost) < s.monthReserve(c):
			return Decision{RetryIn: monthEnd.Sub(now), Why: WhyMonth}
		case lane == LaneSweep && *credit < float64(cost) && s.surplus(c, now) >= float64(cost):
			// The month's unspent pace, banked: a backlog spends it at
			// the window's pace; the credit is kept for later.
			*credit += float64(cost)
		case *credit < float64(cost):
			rate := s.monthPace(c, now) * laneShare(c, lane)
			wait := monthEnd.Sub(now)
			if rate > 0 {
				wait = min(wait, time.Duration((float64(cost)-*credit)/rate*float64(time.Second))+time.Millisecond)
			}
			return Decision{RetryIn: wait, Why: WhyMonth}
		}
		*credit -= float64(cost)
		*s.Month.Remaining -= cost
	}
	*s.used(lane) += cost
	s.taken(lane, cost)
	if s.regenerates() && s.Left != nil {
		left, at := s.regenLeft(c, now)
		s.Left, s.LeftAt = &left, at
	}
	if s.Left != nil {
		*s.Left -= cost
	}
	s.send(c, cost, now)
	return Decision{OK: true}
}

// Observe follows one response to a request lane took.
func (s *State) Observe(c Config, lane Lane, o Observation, now time.Time) {
	c = c.WithDefaults()
	s.roll(c, now)
	extra := max(o.Cost, 1) - 1
	if o.Reset != nil && *o.Reset >= 0 && !now.Add(*o.Reset).After(s.WindowEnd.Add(alignTolerance-c.Window)) {
		o.Reset, o.Remaining = nil, nil // a late answer: its window ended before this one began
	}
	if o.Reset != nil && *o.Reset >= 0 {
		end := now.Add(*o.Reset)
		switch d := end.Sub(s.WindowEnd); {
		case d < -alignTolerance:
			// The upstream's window ends sooner (never before now): follow
			// it, keeping this window's counts (a conservative reading).
			s.WindowEnd = end
		case d > alignTolerance:
			// Later: follow it, but never past one window from when this
			// one began, so a reset that keeps saying "a minute" (a
			// stopped clock, a broken proxy) cannot hold a window open
			// for good.
			s.WindowEnd = end
			if most := s.WindowStart.Add(c.Window + alignTolerance); most.Before(end) {
				s.WindowEnd = most
			}
		}
	}
	*s.used(lane) += extra
	s.taken(lane, extra)
	if o.Status == 429 {
		s.unsend(max(o.Cost, 1), o.SentAt) // a refused request takes no room a window long
	}
	if o.Status == 429 && s.regenerates() {
		// A refused request took no room of a limit that frees room as
		// it goes: counted, it would teach the window a capacity it
		// does not have.
		*s.used(lane) = max(0, *s.used(lane)-max(o.Cost, 1))
	}
	if o.Remaining == nil {
		// Answered without a count (a server error): it may have taken
		// nothing, so a count that follows may be higher by it.
		s.Uncounted += max(o.Cost, 1)
	}
	switch {
	case o.Remaining != nil && !o.SentAt.IsZero() && o.SentAt.Before(s.LeftSent):
		// An older answer, out of order: what was left before the
		// requests already read; it may only lower what is left.
		lower(&s.Left, *o.Remaining)
	case o.Remaining != nil:
		r, used := *o.Remaining, s.SweepUsed+s.FastUsed
		if !s.regenerates() && s.Left == nil && s.Capacity != nil && o.Status != 429 && len(s.Sent) > 0 &&
			r+riseMargin < *s.Capacity-(used-s.sentAfter(o.SentAt)) &&
			r <= *s.Capacity-s.sentWithin(c, now)+riseMargin {
			// The window's first answer says it is far from whole, and
			// by about what was sent in the last window's length: the
			// limit carried it over the window's end, as a sliding
			// window does (taken for a fixed window of what it said,
			// the rest of the minute waited and its rate planned for a
			// few a minute). A fixed window's limit that fell is not
			// short by what was sent.
			s.Regen = new(true)
		}
		if s.Regen == nil || s.regenerates() {
			// Requests taken after this one went are not counted in
			// what it says is left.
			r -= s.sentAfter(o.SentAt)
		}
		if s.Left != nil && s.Uncounted == 0 && r > *s.Left+riseMargin && o.Status != 429 {
			s.Regen = new(true) // room came back within the window
		}
		if s.regenerates() && s.Left != nil && s.Uncounted == 0 && r > *s.Left+s.expired(c, now, 0)+riseMargin && o.Status != 429 {
			s.Even = true // it freed more than our requests leaving a sliding window would
		}
		if !o.SentAt.IsZero() {
			s.LeftSent = o.SentAt
		}
		if s.regenerates() {
			// What is left now is the answer's: it rises as the limit
			// frees room, and the window holds what was spent in it
			// and what is left at once, at most.
			s.Left = &r
			if s.WindowCapacity == nil || used+r > *s.WindowCapacity {
				s.WindowCapacity = new(used + r)
			}
		} else {
			lower(&s.Left, r)
			lower(&s.WindowCapacity, used+r)
		}
		s.LeftAt, s.Uncounted = now, 0
	case s.Left != nil:
		*s.Left -= extra
	}
	if o.Limit != nil && (s.WindowCapacity != nil || !s.regenerates()) {
		// (A limit that frees room as it goes learns its capacity from
		// what it said was left, not from what it advertises.)
		lower(&s.WindowCapacity, *o.Limit)
	}
	if o.Status == 429 {
		// Refused: nothing more until Hiro's Retry-After, or until the
		// window ends when it names none.
		s.Left, s.LeftAt = new(int64), now
		until := s.WindowEnd
		if o.RetryAfter != nil && *o.RetryAfter > 0 {
			until = now.Add(*o.RetryAfter)
		}
		if s.Regen == nil && !until.Before(s.WindowEnd.Add(-alignTolerance)) {
			s.Regen = new(false) // refused until the window's end: a fixed window
		}
		if until.After(s.BlockedUntil) {
			s.BlockedUntil = until
		}
	}
	s.observeMonth(c, lane, o, extra, now)
}

func (s *State) observeMonth(c Config, lane Lane, o Observation, extra int64, now time.Time) {
	m := &s.Month
	if o.MonthRemaining == nil {
		if m.Remaining != nil {
			*m.Remaining -= extra
		}
		s.debitCredit(lane, extra)
		return
	}
	start, _ := MonthOf(now)
	fresh := m.Remaining == nil || !m.Start.Equal(start) ||
		(o.MonthLimit != nil && (m.Limit == nil || *m.Limit != *o.MonthLimit))
	r := *o.MonthRemaining
	if fresh && m.Remaining != nil && m.Start.Equal(start) && r > *m.Remaining {
		// A limit that changed within the month is believed, but what is
		// left does not rise on it: this answer may predate requests
		// already taken and in flight, and forgetting them spends past
		// Hiro's count (a 429 on an explicit run's last requests).
		r = *m.Remaining
	}
	if fresh {
		// The limit is only ever read: sharing the observation's is safe.
		s.startMonth(c, start, cmp.Or(o.MonthLimit, m.Limit), r, now)
		return
	}
	lower(&m.Remaining, r)
	s.debitCredit(lane, extra)
}

func (s *State) debitCredit(lane Lane, n int64) {
	if s.Month.Remaining != nil && lane != LaneManual {
		*s.Month.credit(lane) -= float64(n)
	}
}

// riseMargin is how much more than Left an answer must say is left to
// show a limit that frees room within a window: more than the requests
// in flight at once (the sweep's concurrent visits), whose answers may
// come out of order, each saying what was left before the others.
const riseMargin = 3

// regenerates reports whether the answers showed the limit freeing room
// within a window.
func (s *State) regenerates() bool { return s.Regen != nil && *s.Regen }

// probe decides whether one request may go when what the upstream said
// is left (Left) is spent and the limit's shape is not known yet: a limit
// that is not a fixed window frees room as time goes, and only a request
// can find out. One may go each quarter of a window after the last
// answer (a fixed window refuses it until its end, and no more go). It
// reports how long until the next may go otherwise.
func (s *State) probe(c Config, cost, keep int64, now time.Time) (time.Duration, bool) {
	switch {
	case s.regenerates() && s.Left != nil:
		left, _ := s.regenLeft(c, now)
		return s.regenWait(c, cost+keep-left, now), false
	case s.Left == nil || s.LeftAt.IsZero() || s.Regen != nil:
		return s.WindowEnd.Sub(now), false
	}
	if next := later(s.LeftAt, s.ProbedAt).Add(c.Window / 4); now.Before(next) {
		return next.Sub(now), false
	}
	s.ProbedAt = now // one probe an interval, until its answer says more
	return 0, true
}

// regenWait is how long until a limit that frees room as it goes has
// freed units more: a sliding window's as the requests taken leave it;
// a token bucket's (or a window's whose room our requests do not
// explain) at its capacity over its window.
func (s *State) regenWait(c Config, units int64, now time.Time) time.Duration {
	even := time.Duration(float64(units) * float64(c.Window) / float64(s.regenCapacity(c)))
	if s.Even {
		return even
	}
	var next []time.Time
	for _, at := range s.Sent {
		if f := freedAt(c, at); f.After(now) {
			next = append(next, f)
		}
	}
	if int64(len(next)) < units {
		return even
	}
	slices.SortFunc(next, time.Time.Compare)
	return next[units-1].Sub(now)
}

// regenCapacity is what a window of a limit that frees room as it goes
// holds: what the last whole one held, unless this one shows more.
func (s *State) regenCapacity(c Config) int64 { return max(s.capacity(c), 1) }

// regenLeft is what a limit that frees room as it goes has left at now:
// what its last answer said (less what was taken since), and what it
// freed since, at most its capacity. A sliding window frees the room of
// each request a window after it went (expired); a limit that freed
// more than that (Even: a token bucket) frees its capacity a window,
// evenly. at is when what was freed was counted to (LeftAt, moved on).
//
// Counting a sliding window's room as freeing evenly sends into its
// waits: the room of a burst comes back a window later all at once, none
// before, so a sweep that spends what it found in bursts was refused
// there and, waiting its Retry-After, left the room of the next burst
// (the real stack's first start under a hidden sliding 30/min: 83% used,
// 2.2% refused).
func (s *State) regenLeft(c Config, now time.Time) (left int64, at time.Time) {
	capacity := s.regenCapacity(c)
	if !s.Even {
		left, at = *s.Left+s.expired(c, now, sentLag), later(now, s.LeftAt)
	} else {
		perUnit := time.Duration(float64(c.Window) / float64(capacity))
		freed := int64(max(now.Sub(s.LeftAt), 0) / perUnit)
		left, at = *s.Left+freed, s.LeftAt.Add(time.Duration(freed)*perUnit)
	}
	if left >= capacity {
		left, at = max(*s.Left, capacity), later(now, s.LeftAt)
	}
	return left, at
}

// sentLag is how long after a request was taken a sliding window may
// still count it, beyond its window: the request's way to the upstream.
const sentLag = 500 * time.Millisecond

// freedAt is when a sliding window frees the room of a request taken at.
func freedAt(c Config, at time.Time) time.Time { return at.Add(c.Window + sentLag) }

// expired is how many requests taken, not counted as freed by LeftAt,
// a sliding window freed by now, lag after a window from when they were
// taken (sentLag; 0: the most it can have freed).
func (s *State) expired(c Config, now time.Time, lag time.Duration) int64 {
	n := int64(0)
	for _, at := range s.Sent {
		if freedAt(c, at).After(s.LeftAt) && !at.Add(c.Window+lag).After(now) {
			n++
		}
	}
	return n
}

// sentWithin is how many requests were taken in the window's length up
// to now.
func (s *State) sentWithin(c Config, now time.Time) int64 {
	n := int64(0)
	for _, at := range s.Sent {
		if at.After(now.Add(-c.Window)) {
			n++
		}
	}
	return n
}

// sentAfter is how many requests were taken after one that went at sent
// (zero: unknown, none).
func (s *State) sentAfter(sent time.Time) int64 {
	n := int64(0)
	for _, at := range s.Sent {
		if !sent.IsZero() && at.After(sent) {
			n++
		}
	}
	return n
}

// send notes cost requests taken at now while the limit binds below the
// configured rate or frees room as it goes (one taken for a fixed window
// may yet show that it frees room), forgetting those no answer's count
// can free any more.
func (s *State) send(c Config, cost int64, now time.Time) {
	if !s.regenerates() && s.capacity(c) >= c.PerMinute {
		s.Sent = nil
		return
	}
	kept := s.Sent[:0]
	for _, at := range s.Sent {
		if freedAt(c, at).After(s.LeftAt) && at.After(now.Add(-2*c.Window)) {
			kept = append(kept, at)
		}
	}
	s.Sent = kept
	for range min(cost, c.PerMinute) {
		s.Sent = append(s.Sent, now)
	}
}

// unsend forgets cost requests taken, the last taken when the one sent at
// sent went (zero: the last).
func (s *State) unsend(cost int64, sent time.Time) {
	for range cost {
		i := len(s.Sent) - 1
		for i >= 0 && !sent.IsZero() && s.Sent[i].After(sent) {
			i--
		}
		if i < 0 {
			return
		}
		s.Sent = slices.Delete(s.Sent, i, i+1)
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// RoomEnd is until when what Room counts now must last, for a plan that
// keeps some of it for work due later: the minute window's end, or, for
// a limit that frees room as it goes, about when it frees the next
// request's room (work due later is paid by what it frees by then).
func (s *State) RoomEnd(c Config, now time.Time) time.Time {
	c, probe := s.rolled(c, now)
	if !probe.regenerates() {
		return probe.WindowEnd
	}
	return now.Add(time.Duration(float64(c.Window) / float64(probe.regenCapacity(c))))
}

// used is the lane's spend in the window; the manual lane's counts as the
// sweep's.
func (s *State) used(lane Lane) *int64 {
	if lane == LaneFast {
		return &s.FastUsed
	}
	return &s.SweepUsed
}

// credit is the lane's banked month pace.
func (m *Month) credit(lane Lane) *float64 {
	if lane == LaneFast {
		return &m.FastCredit
	}
	return &m.SweepCredit
}

// lower sets *p to v when it is unset or above v.
func lower(p **int64, v int64) {
	if *p == nil || v < **p {
		*p = &v
	}
}

// roll moves to the window holding now, keeping the upstream's alignment.
func (s *State) roll(c Config, now time.Time) {
	if s.WindowEnd.IsZero() {
		s.WindowEnd, s.WindowStart = now.Truncate(c.Window).Add(c.Window), now
	}
	if now.Before(s.WindowEnd) {
		return
	}
	n := now.Sub(s.WindowEnd)/c.Window + 1
	s.WindowEnd = s.WindowEnd.Add(n * c.Window)
	s.WindowStart = now
	if s.WindowCapacity != nil {
		s.Capacity = s.WindowCapacity
	}
	left := s.Left
	s.SweepUsed, s.FastUsed, s.Left, s.WindowCapacity = 0, 0, nil, nil
	if s.regenerates() {
		// A limit that frees room as it goes is not whole again at our
		// window's start: it has what its last answer said, and frees
		// more as time goes (probe).
		s.Left = left
	}

	if start, _ := MonthOf(now); s.Month.Remaining != nil && !s.Month.Start.Equal(start) {
		// A new month: the quota is whole again until a header says
		// otherwise.
		s.startMonth(c, start, s.Month.Limit, *cmp.Or(s.Month.Limit, s.Month.Remaining), now)
	}
}

// startMonth starts a month with remaining left of its quota, and one
// window's worth of pace as credit, so a new month does not wait for credit
// before its first request.
func (s *State) startMonth(c Config, start time.Time, limit *int64, remaining int64, now time.Time) {
	s.Month = Month{Start: start, Limit: limit, Remaining: &remaining, CreditAt: now}
	pace := s.monthPace(c, now) * c.Window.Seconds()
	s.Month.SweepCredit, s.Month.FastCredit = pace*laneShare(c, LaneSweep), pace*laneShare(c, LaneFast)
}

// capacity is what the current window holds for us: for a limit that
// frees room as it goes, what the last whole one held unless this one
// shows more (its start shows only what is left then).
func (s *State) capacity(c Config) int64 {
	capacity := c.PerMinute
	if learned := cmp.Or(s.WindowCapacity, s.Capacity); learned != nil {
		if s.regenerates() && s.Capacity != nil {
			learned = new(max(*learned, *s.Capacity))
		}
		capacity = min(capacity, *learned)
	}
	return max(capacity, 0)
}

// fastShare is the fast lane's cap in a window of capacity, and what the
// sweep must still leave it.
func (s *State) fastShare(c Config, capacity int64) (fastCap, keep int64) {
	if capacity < 2 {
		return 0, 0
	}
	fastCap = max(1, int64(math.Floor(float64(capacity)*c.FastShare)))
	reserve := min(fastCap, int64(math.Ceil(float64(capacity)*c.FastReserve)))
	return fastCap, max(0, reserve-s.FastUsed)
}

func laneShare(c Config, lane Lane) float64 {
	if lane == LaneFast {
		return c.FastShare
	}
	return 1 - c.FastShare
}

func (s *State) monthReserve(c Config) float64 {
	if s.Month.Limit == nil {
		return 0
	}
	return float64(*s.Month.Limit) * c.MonthReserve
}

// monthPace is the month's requests a second that spend what is left
// above the reserve evenly over what is left of the month.
func (s *State) monthPace(c Config, now time.Time) float64 {
	if s.Month.Remaining == nil {
		return math.Inf(1)
	}
	_, end := MonthOf(now)
	left := float64(*s.Month.Remaining) - s.monthReserve(c)
	secs := end.Sub(now).Seconds()
	if left <= 0 || secs <= 0 {
		return 0
	}
	return left / secs
}

// surplus is the month's unspent pace, banked: what is left of the month
// above its reserve beyond what spending the whole month evenly would
// have left by now. The sweep may spend it at the window's pace (a first
// start, a registration, a gap); once it is spent, what is left paces the
// rest of the month evenly, reserve kept. 0 without the month's limit.
func (s *State) surplus(c Config, now time.Time) float64 {
	if s.Month.Remaining == nil || s.Month.Limit == nil {
		return 0
	}
	start, end := MonthOf(now)
	even := float64(*s.Month.Limit) * end.Sub(now).Seconds() / end.Sub(start).Seconds()
	return float64(*s.Month.Remaining) - s.monthReserve(c) - even
}

// accrue adds the month credit earned since the last take. The fast lane
// banks at most CreditHorizon of its share; what it would bank beyond
// spills to the sweep.
func (s *State) accrue(c Config, now time.Time) {
	m := &s.Month
	dt := now.Sub(m.CreditAt).Seconds()
	if dt <= 0 {
		return
	}
	pace := s.monthPace(c, now)
	horizon := c.CreditHorizon.Seconds()
	fastCap := pace * c.FastShare * horizon
	m.FastCredit += pace * c.FastShare * dt
	spill := max(0, m.FastCredit-fastCap)
	m.FastCredit = min(m.FastCredit, fastCap)
	m.SweepCredit = min(m.SweepCredit+pace*(1-c.FastShare)*dt+spill, pace*horizon)
	m.CreditAt = now
}

// Rate is the lane's sustainable requests a minute at now: the lower of
// its share of a window and its share of the month's pace. LaneManual is
// not paced by the month: its rate is the sweep's share of a window.
func (s *State) Rate(c Config, lane Lane, now time.Time) float64 {
	c, probe := s.rolled(c, now)
	capacity := probe.capacity(c)
	fastCap, _ := probe.fastShare(c, capacity)
	perWindow := float64(fastCap)
	if lane != LaneFast {
		reserve := min(fastCap, int64(math.Ceil(float64(capacity)*c.FastReserve)))
		perWindow = float64(capacity - reserve)
	}
	perMinute := perWindow * float64(time.Minute) / float64(c.Window)
	if s.Month.Remaining != nil && lane != LaneManual && (lane == LaneFast || probe.surplus(c, now) < 1) {
		share := laneShare(c, lane)
		if lane != LaneFast {
			share = 1 // an idle fast lane spills its month share to the sweep
		}
		perMinute = min(perMinute, probe.monthPace(c, now)*share*60)
	}
	return perMinute
}

// Remaining is what is left of the minute window and of the month (nil
// when unknown), for status and metrics.
func (s *State) Remaining(c Config, now time.Time) (minute int64, month *int64) {
	c, probe := s.rolled(c, now)
	return max(0, probe.windowLeft(c, now)), probe.Month.Remaining // a copy: probe shares no pointer
}

// windowLeft is what is left of the window, all lanes together: for a
// limit that frees room as it goes, what its last answer said.
func (s *State) windowLeft(c Config, now time.Time) int64 {
	if s.regenerates() && s.Left != nil {
		left, _ := s.regenLeft(c, now)
		return left
	}
	if left := s.capacity(c) - s.SweepUsed - s.FastUsed; s.Left == nil || left < *s.Left {
		return left
	}
	return *s.Left
}

// Room is what lane may take at now, the minute window (less the fast
// lane's reserve, which the other lanes leave it) and the month (its
// banked pace included) together: n requests, or, when n is 0, when it
// may take one again and which window binds (Decision.Why). The first of
// them is as Take would answer; it changes nothing.
func (s *State) Room(c Config, lane Lane, now time.Time) (n int64, at time.Time, why string) {
	c, probe := s.rolled(c, now)
	fastCap, keep := probe.fastShare(c, probe.capacity(c))
	n = probe.windowLeft(c, now)
	if lane == LaneFast {
		n, keep = min(n, fastCap-probe.FastUsed), 0
	}
	n = max(0, n-keep)
	if m := &probe.Month; m.Remaining != nil {
		month := float64(*m.Remaining)
		if lane != LaneManual {
			probe.accrue(c, now)
			credit := *m.credit(lane)
			if lane != LaneFast {
				credit = max(credit, probe.surplus(c, now))
			}
			month = min(math.Floor(credit), month-probe.monthReserve(c))
		}
		n = min(n, int64(max(0, month)))
	}
	if d := probe.Take(c, lane, 1, now); !d.OK {
		return 0, now.Add(d.RetryIn), d.Why
	}
	return max(n, 1), time.Time{}, ""
}

// clone is a copy that shares no pointer with s.
func (s State) clone() State {
	cp := func(p *int64) *int64 {
		if p == nil {
			return nil
		}
		v := *p
		return &v
	}
	s.Left, s.WindowCapacity, s.Capacity = cp(s.Left), cp(s.WindowCapacity), cp(s.Capacity)
	s.Sent = slices.Clone(s.Sent)
	s.Month.Limit, s.Month.Remaining = cp(s.Month.Limit), cp(s.Month.Remaining)
	return s
}

// rolled is a copy of the state as it stands at now (its window rolled),
// sharing no pointer with s, with the config's defaults: what the
// read-only views look at.
func (s *State) rolled(c Config, now time.Time) (Config, State) {
	c = c.WithDefaults()
	probe := s.clone()
	probe.roll(c, now)
	return c, probe
}

// MinuteCapacity is what the minute window at now holds, all lanes
// together: the configured rate, lowered to what the upstream taught.
func (s *State) MinuteCapacity(c Config, now time.Time) int64 {
	c, probe := s.rolled(c, now)
	return probe.capacity(c)
}

// MonthOf is the calendar month (UTC) holding t: the month quota's
// period, for every reader of it.
func MonthOf(t time.Time) (start, end time.Time) {
	t = t.UTC()
	start = time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
	return start, start.AddDate(0, 1, 0)
}
