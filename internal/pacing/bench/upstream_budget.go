// The pacer strategy's model of an upstream budget: what the scheduler
// workflow kept before the Postgres budget (internal/budget, SPEC §5.4)
// became the one model of Hiro's quota. Only the simulation reads it.
package bench

import (
	"cmp"
	"math"
	"math/bits"
	"time"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/budget"
)

// BudgetConfig is what is documented about an upstream's plan. Every field
// is optional: the budget learns the real figures from the headers the runs
// report, and the headers win.
type BudgetConfig struct {
	// MinuteLimit and MonthLimit are the documented plan; 0 = unknown.
	MinuteLimit int `json:"minuteLimit,omitempty"`
	MonthLimit  int `json:"monthLimit,omitempty"`
	// Reserve is kept out of month pacing: for explicit refreshes, and so
	// that pacing alone never spends the month to 0 (a spent month defers
	// the task by a day, pacer.MonthQuotaBackoff, into the next month).
	Reserve int `json:"reserve,omitempty"`
	// MinuteReserve is left in every minute window: a run stops when the
	// window is down to it (StopAt). A window pacer never spends to 0 never
	// triggers the 5-minute back-off of a spent minute quota
	// (pacer.MinuteQuotaBackoff), and leaves room for what else calls the
	// upstream (the agents' fast path shares Hiro's budget).
	MinuteReserve int `json:"minuteReserve,omitempty"`
	// Window is the length of the minute window (default 1 minute). Windows
	// are fixed, as real quota counters are: they start on the minute.
	Window pacer.Duration `json:"window,omitempty"`
	// CreditHorizon bounds how long unspent month pace accrues (default 24
	// hours), so that a long pause does not end in one huge burst.
	CreditHorizon pacer.Duration `json:"creditHorizon,omitempty"`
}

// WithDefaults fills the zero fields that have defaults.
func (c BudgetConfig) WithDefaults() BudgetConfig {
	c.Window = cmp.Or(c.Window, pacer.Duration(time.Minute))
	c.CreditHorizon = cmp.Or(c.CreditHorizon, pacer.Duration(24*time.Hour))
	return c
}

// Report is what one run tells the budget: how many requests it made and
// what the upstream's headers said last.
type Report struct {
	// Start and End bound the run; End is when the last header was read.
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// Requests is every upstream request the run made; Rejected those
	// answered 429, which do not spend the quota.
	Requests int `json:"requests"`
	Rejected int `json:"rejected"`
	// The last rate-limit headers seen, nil when the upstream sent none.
	MinuteRemaining *int `json:"minuteRemaining,omitempty"`
	MonthRemaining  *int `json:"monthRemaining,omitempty"`
	// MinuteLimit when a header tells it (Hiro's ratelimit-limit; Tenero
	// sends none); 0 = not told.
	MinuteLimit int `json:"minuteLimit,omitempty"`
	// ResetAt is when the minute window ends, when the upstream said
	// (Retry-After, ratelimit-reset); nil assumes the next minute boundary.
	ResetAt *time.Time `json:"resetAt,omitempty"`
}

// HourCount is our requests in one clock hour.
type HourCount struct {
	Hour     time.Time `json:"hour"`
	Requests int       `json:"requests"`
}

// Budget follows one upstream's minute and month windows. Build it with
// NewBudget; it is plain data carried across continue-as-new.
type Budget struct {
	Config BudgetConfig `json:"config"`

	// MinuteRemaining is what the last report said was left of the window
	// ending at MinuteResetAt.
	MinuteRemaining *int      `json:"minuteRemaining,omitempty"`
	MinuteResetAt   time.Time `json:"minuteResetAt"`
	// MinuteCapacity is what one window holds for us, learned from runs that
	// stayed inside one window (our spend plus what was left); a neighbour on
	// the same budget makes it smaller than the plan's limit.
	MinuteCapacity int `json:"minuteCapacity"`

	// MonthStart is the first instant of the month the fields below count.
	MonthStart time.Time `json:"monthStart"`
	// MonthSpent is our own spend this month, the fallback when no header
	// tells what is left.
	MonthSpent int `json:"monthSpent"`
	// MonthRemaining is the last header this month, seen at MonthSeenAt;
	// MonthFirst* is the first one, to measure how fast the month drains
	// (neighbours included).
	MonthRemaining      *int       `json:"monthRemaining,omitempty"`
	MonthSeenAt         *time.Time `json:"monthSeenAt,omitempty"`
	MonthFirstRemaining *int       `json:"monthFirstRemaining,omitempty"`
	MonthFirstAt        *time.Time `json:"monthFirstAt,omitempty"`
	// MonthOthers is what others on the same quota spent this month between
	// our headers (the drop in remaining beyond our own spend). Pacing leaves
	// them their share at their rate, or they would run the month dry.
	MonthOthers int `json:"monthOthers"`
	// CreditFrom is where month pacing's credit starts accruing: spending
	// moves it forward by the time the spend was worth. Nil until the first
	// report, so that a new budget starts at once and learns the headers.
	CreditFrom *time.Time `json:"creditFrom,omitempty"`

	// Hours counts our requests per clock hour over the last day.
	Hours []HourCount `json:"hours"`
}

// NewBudget returns an empty budget for a plan.
func NewBudget(cfg BudgetConfig) *Budget {
	return &Budget{Config: cfg.WithDefaults(), MinuteCapacity: cfg.MinuteLimit}
}

// SetConfig replaces the documented plan (a deploy changed it), keeping
// what was learned.
func (b *Budget) SetConfig(cfg BudgetConfig) {
	b.Config = cfg.WithDefaults()
	if b.MinuteCapacity == 0 {
		b.MinuteCapacity = cfg.MinuteLimit
	}
}

// monthView is the month window holding now, as far as the budget knows it.
type monthView struct {
	start, end time.Time
	// left is what remains of the quota; known is false when neither a
	// header nor the documented plan tells.
	left  int
	known bool
	// creditFrom is nil when month pacing has not started.
	creditFrom *time.Time
	// others is what others spent over othersSpan, to project their rate.
	others     int
	othersSpan time.Duration
}

func (b *Budget) month(now time.Time) monthView {
	start, end := budget.MonthOf(now)
	v := monthView{start: start, end: end}
	if !start.Equal(b.MonthStart) {
		// A month the budget has not seen yet: a fresh quota.
		if b.Config.MonthLimit > 0 {
			v.left, v.known = b.Config.MonthLimit, true
		}
		if b.CreditFrom != nil {
			v.creditFrom = &start
		}
		return v
	}
	v.creditFrom = b.CreditFrom
	if b.MonthFirstAt != nil {
		v.others, v.othersSpan = b.MonthOthers, b.MonthSeenAt.Sub(*b.MonthFirstAt)
	}
	switch {
	case b.MonthRemaining != nil:
		v.left, v.known = max(*b.MonthRemaining, 0), true
	case b.Config.MonthLimit > 0:
		v.left, v.known = max(b.Config.MonthLimit-b.MonthSpent, 0), true
	}
	return v
}

// paced is what month pacing may spread from now to the month's end: the
// quota left, minus the reserve, minus what others will spend by then at the
// rate they have (once it has been watched for ten minutes).
func (v monthView) paced(now time.Time, reserve int) int64 {
	left := int64(max(v.left-reserve, 0))
	if v.others > 0 && v.othersSpan >= 10*time.Minute && now.Before(v.end) {
		left -= mulDiv(int64(v.others), int64(v.end.Sub(now)), int64(v.othersSpan))
	}
	return max(left, 0)
}

// credit is how many requests month pacing allows at now: the pace (what is
// left over what remains of the month) times the time since CreditFrom, at
// most CreditHorizon of it.
func (b *Budget) credit(v monthView, now time.Time) int64 {
	if !now.Before(v.end) {
		return v.paced(now, b.Config.Reserve)
	}
	elapsed := min(now.Sub(*v.creditFrom), time.Duration(b.Config.CreditHorizon))
	if elapsed <= 0 {
		return 0
	}
	// Near the month's end the pace times a long wait would exceed what is
	// left: never more than that.
	paced := v.paced(now, b.Config.Reserve)
	return min(mulDiv(paced, int64(elapsed), int64(v.end.Sub(now))), paced)
}

// Record folds a finished run into the budget.
func (b *Budget) Record(r Report) {
	spent := max(r.Requests-r.Rejected, 0)
	before := b.month(r.End)
	if !before.start.Equal(b.MonthStart) {
		b.MonthStart, b.MonthSpent = before.start, 0
		b.MonthRemaining, b.MonthSeenAt, b.MonthFirstRemaining, b.MonthFirstAt = nil, nil, nil, nil
		b.MonthOthers = 0
		b.CreditFrom = before.creditFrom
	}

	// Month pacing: the spend uses up the credit it was worth at the pace
	// the credit accrued at. Overspending (an explicit refresh) leaves
	// CreditFrom in the future: a debt the next runs wait out.
	switch {
	case b.CreditFrom == nil:
		end := r.End
		b.CreditFrom = &end
	case before.known && before.paced(r.End, b.Config.Reserve) > 0 && r.End.Before(before.end):
		worth := mulDiv(int64(spent), int64(before.end.Sub(r.End)), before.paced(r.End, b.Config.Reserve))
		from := b.CreditFrom.Add(time.Duration(min(worth, math.MaxInt64/2)))
		if floor := r.End.Add(-time.Duration(b.Config.CreditHorizon)); from.Before(floor) {
			from = floor
		}
		b.CreditFrom = &from
	}
	b.MonthSpent += spent
	if r.MonthRemaining != nil {
		left, at := *r.MonthRemaining, r.End
		if b.MonthRemaining != nil {
			b.MonthOthers += max(*b.MonthRemaining-left-spent, 0)
		}
		b.MonthRemaining, b.MonthSeenAt = &left, &at
		if b.MonthFirstRemaining == nil {
			first, firstAt := left, at
			b.MonthFirstRemaining, b.MonthFirstAt = &first, &firstAt
		}
	}

	b.recordMinute(r, spent)
	b.recordHour(r)
}

// recordMinute follows the minute window and learns its capacity.
func (b *Budget) recordMinute(r Report, spent int) {
	w := time.Duration(b.Config.Window)
	reset := r.End.Truncate(w).Add(w)
	if r.ResetAt != nil {
		reset = *r.ResetAt
	}
	switch {
	case r.MinuteRemaining != nil:
		left := max(*r.MinuteRemaining, 0)
		b.MinuteRemaining, b.MinuteResetAt = &left, reset
	case r.Rejected > 0:
		// A 429 without headers: the window is spent, whatever it held.
		zero := 0
		b.MinuteRemaining, b.MinuteResetAt = &zero, reset
	}
	if b.MinuteCapacity == 0 && r.MinuteLimit > 0 {
		b.MinuteCapacity = r.MinuteLimit
	}
	// Only a run inside one window tells its capacity: spend in an earlier
	// window would be counted against this one.
	if r.MinuteRemaining == nil || spent == 0 || !r.Start.Truncate(w).Equal(r.End.Truncate(w)) {
		return
	}
	left := max(*r.MinuteRemaining, 0)
	if left == 0 {
		// Spent to the last request: the capacity exactly, even if it shrank.
		b.MinuteCapacity = spent
		return
	}
	b.MinuteCapacity = max(b.MinuteCapacity, spent+left)
}

// recordHour counts the run's requests in its hour and forgets hours older
// than a day.
func (b *Budget) recordHour(r Report) {
	if r.Requests <= 0 {
		return
	}
	hour := r.End.Truncate(time.Hour)
	if n := len(b.Hours); n > 0 && b.Hours[n-1].Hour.Equal(hour) {
		b.Hours[n-1].Requests += r.Requests
	} else {
		b.Hours = append(b.Hours, HourCount{Hour: hour, Requests: r.Requests})
	}
	oldest := hour.Add(-23 * time.Hour)
	for len(b.Hours) > 0 && b.Hours[0].Hour.Before(oldest) {
		b.Hours = b.Hours[1:]
	}
}

// minuteLeft is what we may still spend of the current minute window (what
// is left above the reserve), if known.
func (b *Budget) minuteLeft(now time.Time) (int, bool) {
	if b.MinuteRemaining == nil || !now.Before(b.MinuteResetAt) {
		return 0, false
	}
	return max(*b.MinuteRemaining-b.Config.MinuteReserve, 0), true
}

// StopAt is the minute remaining at which a run should stop: the reserve.
// The activity stops there as it stops at 0, but without deferring the task,
// since the window is not spent.
func (b *Budget) StopAt() int { return b.Config.MinuteReserve }

// perWindow is the most one run can spend in a window: the learned capacity
// less the reserve; 0 when unknown.
func (b *Budget) perWindow() int {
	if b.MinuteCapacity <= 0 {
		return 0
	}
	return max(b.MinuteCapacity-b.Config.MinuteReserve, 1)
}

// Allowance is how many requests a run may spend at now: what is left of
// the minute window, and the month pacing's credit so that the month's quota
// lasts to the month's end. bounded is false when neither is known (a new
// budget, an upstream without headers): the run is then limited by its batch
// alone, and its headers will tell.
func (b *Budget) Allowance(now time.Time) (n int, bounded bool) {
	n = math.MaxInt
	if left, ok := b.minuteLeft(now); ok {
		n, bounded = left, true
	}
	if v := b.month(now); v.known && v.creditFrom != nil {
		n, bounded = min(n, int(min(b.credit(v, now), math.MaxInt32))), true
	}
	return n, bounded
}

// Cap is want limited by the allowance.
func (b *Budget) Cap(now time.Time, want int) int {
	n, _ := b.Allowance(now)
	return max(min(want, n), 0)
}

// ReadyAt is the earliest moment from now at which a run of want requests
// is worth starting: the minute window has room for it (or has reset), and
// month pacing has accrued it. A run never spends more than a window holds,
// so want is capped at the learned capacity less the minute reserve. A month whose quota is
// spent is ready when the next month begins.
func (b *Budget) ReadyAt(now time.Time, want int) time.Time {
	if want <= 0 {
		return now
	}
	if w := b.perWindow(); w > 0 {
		want = min(want, w)
	}
	ready := now
	if left, ok := b.minuteLeft(now); ok && left < want {
		ready = b.MinuteResetAt
	}
	v := b.month(now)
	if !v.known || v.creditFrom == nil {
		return ready
	}
	// The others' share shrinks as the month goes by, so pacing with
	// today's figure is late rather than early: the credit is there at t.
	paced := v.paced(now, b.Config.Reserve)
	if paced == 0 {
		return latest(ready, v.end)
	}
	w, cf, end, h := int64(want), *v.creditFrom, v.end, int64(b.Config.CreditHorizon)
	// credit(t) = paced·(t−cf)/(end−t) ≥ w  ⇔  t ≥ cf + w·(end−cf)/(paced+w);
	// past the horizon, credit(t) = paced·h/(end−t) ≥ w  ⇔  t ≥ end − paced·h/w.
	t := cf.Add(time.Duration(mulDivCeil(w, int64(end.Sub(cf)), paced+w)))
	if t.Sub(cf) > time.Duration(h) {
		t = end.Add(-time.Duration(mulDiv(paced, h, w)))
	}
	if !t.Before(end) {
		t = end
	}
	return latest(ready, t)
}

// BudgetStatus is the budget as the status document shows it.
type BudgetStatus struct {
	// MinuteRemaining is null once the window it was read in has passed.
	MinuteRemaining *int `json:"minuteRemaining"`
	// MinuteCapacity is what one window holds for us, as learned.
	MinuteCapacity int `json:"minuteCapacity"`
	// MonthRemaining is null when neither headers nor the plan tell.
	MonthRemaining *int      `json:"monthRemaining"`
	MonthEndsAt    time.Time `json:"monthEndsAt"`
	// Allowance is what a run may spend now; null when unbounded.
	Allowance *int `json:"allowance"`
	// PacePerDay is what month pacing allows a day from here on.
	PacePerDay *float64 `json:"pacePerDay"`
	// RequestsPerDay counts our requests over the last 24 hours.
	RequestsPerDay int `json:"requestsPerDay"`
	// RunOutAt is when the month's quota runs out at the rate it drains
	// (neighbours included when the headers show them); null when it lasts
	// the month or nothing drains it. RunsOutEarly is its alarm.
	RunOutAt     *time.Time `json:"runOutAt"`
	RunsOutEarly bool       `json:"runsOutEarly"`
}

// Status reports the budget at now. It changes nothing.
func (b *Budget) Status(now time.Time) BudgetStatus {
	v := b.month(now)
	st := BudgetStatus{MinuteCapacity: b.MinuteCapacity, MonthEndsAt: v.end, RequestsPerDay: b.RequestsPerDay(now)}
	if b.MinuteRemaining != nil && now.Before(b.MinuteResetAt) {
		left := *b.MinuteRemaining
		st.MinuteRemaining = &left
	}
	if n, bounded := b.Allowance(now); bounded {
		st.Allowance = &n
	}
	if !v.known {
		return st
	}
	left := v.left
	st.MonthRemaining = &left
	pace := float64(v.paced(now, b.Config.Reserve)) / v.end.Sub(now).Hours() * 24
	st.PacePerDay = &pace
	// Compared in hours first: a slow drain would overflow a Duration.
	if perHour := b.drainPerHour(now); perHour > 0 && float64(left)/perHour < v.end.Sub(now).Hours() {
		at := now.Add(time.Duration(float64(left) / perHour * float64(time.Hour)))
		st.RunOutAt, st.RunsOutEarly = &at, true
	}
	return st
}

// drainPerHour is how fast the month's quota drains: from the month's
// headers when they span at least ten minutes (they include neighbours),
// otherwise from our own last day of requests.
func (b *Budget) drainPerHour(now time.Time) float64 {
	if b.MonthFirstAt != nil && b.MonthStart.Equal(b.month(now).start) {
		if span := b.MonthSeenAt.Sub(*b.MonthFirstAt); span >= 10*time.Minute {
			return float64(*b.MonthFirstRemaining-*b.MonthRemaining) / span.Hours()
		}
	}
	return float64(b.RequestsPerDay(now)) / 24
}

// RequestsPerDay counts our requests over the 24 hours before now.
func (b *Budget) RequestsPerDay(now time.Time) int {
	oldest := now.Truncate(time.Hour).Add(-23 * time.Hour)
	n := 0
	for _, h := range b.Hours {
		if !h.Hour.Before(oldest) && !h.Hour.After(now) {
			n += h.Requests
		}
	}
	return n
}

// mulDiv is a·b/c rounded down, for non-negative a, b and positive c,
// without overflowing in between (durations in nanoseconds times counts do).
func mulDiv(a, b, c int64) int64 {
	q, _ := mulDivRem(a, b, c)
	return q
}

// mulDivCeil is a·b/c rounded up.
func mulDivCeil(a, b, c int64) int64 {
	q, rem := mulDivRem(a, b, c)
	if rem > 0 && q < math.MaxInt64 {
		q++
	}
	return q
}

// mulDivRem is a·b/c and its remainder in 128-bit arithmetic, saturating at
// MaxInt64; 0 for arguments out of range.
func mulDivRem(a, b, c int64) (q int64, rem uint64) {
	if a <= 0 || b <= 0 || c <= 0 {
		return 0, 0
	}
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi >= uint64(c) {
		return math.MaxInt64, 0
	}
	uq, rem := bits.Div64(hi, lo, uint64(c))
	return int64(min(uq, math.MaxInt64)), rem
}
