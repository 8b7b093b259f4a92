package sim

import (
	"sync"
	"time"
)

// Limits is one rate-limit plan: a per-minute and a per-month budget. The
// windows are fixed, as real quota counters are: a minute window starts on
// the minute, a month window on the first of the month (UTC).
type Limits struct {
	// PerMinute and PerMonth are the budgets; 0 takes the plan's default.
	PerMinute int `json:"perMinute"`
	PerMonth  int `json:"perMonth"`
	// Type is echoed in the upstream's plan header (x-ratelimit-type).
	Type string `json:"type"`
	// NoisyPerMinute is a neighbour on the same budget: each minute window
	// starts with that many requests already spent, and they count against
	// the month too. The neighbour is only active in minutes where we are,
	// which keeps the simulation a pure function of our own traffic.
	NoisyPerMinute int `json:"noisyPerMinute"`
	// HiddenPerMinute, when between 0 and PerMinute, is the per-minute
	// limit really enforced: the headers still advertise PerMinute, and
	// only what is left (ratelimit-remaining) gives the lower one away.
	HiddenPerMinute int `json:"hiddenPerMinute,omitempty"`
	// MonthUsed is what a caller's month has spent already when its
	// budget starts (a plan used before pacer came to it).
	MonthUsed int `json:"monthUsed,omitempty"`
}

// enforced is the per-minute limit requests really meet.
func (l Limits) enforced() int {
	if l.HiddenPerMinute > 0 && l.HiddenPerMinute < l.PerMinute {
		return l.HiddenPerMinute
	}
	return l.PerMinute
}

// withDefaults fills zero fields from def.
func (l Limits) withDefaults(def Limits) Limits {
	if l.PerMinute <= 0 {
		l.PerMinute = def.PerMinute
	}
	if l.PerMonth <= 0 {
		l.PerMonth = def.PerMonth
	}
	if l.Type == "" {
		l.Type = def.Type
	}
	l.NoisyPerMinute = min(max(l.NoisyPerMinute, 0), l.enforced())
	return l
}

// limiter keeps one budget per caller (an IP, or an API key).
type limiter struct {
	limits  Limits
	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	minuteStart time.Time
	minuteUsed  int
	monthStart  time.Time
	monthUsed   int
}

// decision is the limiter's answer to one request.
type decision struct {
	allowed         bool
	minuteRemaining int
	monthRemaining  int
	// retryAfter is the time until the spent window ends, when refused.
	retryAfter time.Duration
}

func newLimiter(l Limits) *limiter {
	return &limiter{limits: l, buckets: map[string]*bucket{}}
}

// take spends cost units of caller's budget at now, if that many are left.
func (l *limiter) take(caller string, now time.Time, cost int) decision {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.buckets[caller]
	if !ok {
		b = &bucket{}
		l.buckets[caller] = b
	}
	b.roll(now, l.limits)

	perMinute := l.limits.enforced()
	minuteSpent := b.minuteUsed+cost > perMinute
	monthSpent := b.monthUsed+cost > l.limits.PerMonth
	d := decision{allowed: !minuteSpent && !monthSpent}
	switch {
	case d.allowed:
		b.minuteUsed += cost
		b.monthUsed += cost
	case monthSpent:
		// The month is the longer wall; pointing at the minute would only
		// invite a retry into it.
		d.retryAfter = b.monthStart.AddDate(0, 1, 0).Sub(now)
	default:
		d.retryAfter = b.minuteStart.Add(time.Minute).Sub(now)
	}
	d.minuteRemaining = perMinute - b.minuteUsed
	d.monthRemaining = l.limits.PerMonth - b.monthUsed
	return d
}

// roll moves the bucket's windows to the ones holding now.
func (b *bucket) roll(now time.Time, l Limits) {
	now = now.UTC()
	month := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	if !month.Equal(b.monthStart) {
		used := 0
		if b.monthStart.IsZero() {
			used = min(max(l.MonthUsed, 0), l.PerMonth)
		}
		b.monthStart, b.monthUsed = month, used
	}
	minute := now.Truncate(time.Minute)
	if !minute.Equal(b.minuteStart) {
		b.minuteStart = minute
		b.minuteUsed = l.NoisyPerMinute
		b.monthUsed = min(b.monthUsed+l.NoisyPerMinute, l.PerMonth)
	}
}

// retryAfterSeconds renders a wait as Retry-After does: whole seconds,
// rounded up so a client that obeys it lands in the next window, never 0.
func retryAfterSeconds(d time.Duration) int64 {
	return max(int64((d+time.Second-1)/time.Second), 1)
}
