package sim

import (
	"cmp"
	"crypto/subtle"
	"math"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/pacer-dev/pacer/internal/budget"
)

// Limits is one rate-limit plan: a per-minute and a per-month budget. The
// month window is fixed, on the first of the month (UTC). The minute's is
// of the plan's Shape: a fixed window on the minute (the default), a
// sliding one (at most the limit in any 60 s), or a token bucket. Whatever
// the shape, the headers say a fixed minute window ends on the minute:
// only what is left (ratelimit-remaining) tells the shape, as an upstream
// that does not document its limiter would.
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
	// Shape is the minute limit's: ShapeFixed (""), ShapeSliding or
	// ShapeBucket. A neighbour (NoisyPerMinute) spends only in fixed
	// windows.
	Shape Shape `json:"shape,omitempty"`
	// Burst is a token bucket's size (0: the per-minute limit); it fills
	// at the per-minute limit.
	Burst int `json:"burst,omitempty"`
	// HeaderLag makes the remaining header lag: it says what was left
	// before the caller's last HeaderLag requests (at most what the
	// limit holds), as a counter read before it is updated does.
	HeaderLag int `json:"headerLag,omitempty"`
}

// Shape is a minute limit's shape.
type Shape string

// Shapes.
const (
	ShapeFixed   Shape = ""
	ShapeSliding Shape = "sliding"
	ShapeBucket  Shape = "bucket"
)

// enforced is the per-minute limit requests really meet.
func (l Limits) enforced() int {
	if l.HiddenPerMinute > 0 && l.HiddenPerMinute < l.PerMinute {
		return l.HiddenPerMinute
	}
	return l.PerMinute
}

// withDefaults fills zero fields from def.
func (l Limits) withDefaults(def Limits) Limits {
	l.PerMinute = cmp.Or(max(l.PerMinute, 0), def.PerMinute)
	l.PerMonth = cmp.Or(max(l.PerMonth, 0), def.PerMonth)
	l.Type = cmp.Or(l.Type, def.Type)
	l.NoisyPerMinute = min(max(l.NoisyPerMinute, 0), l.enforced())
	return l
}

// plans are an upstream's two plans and the API keys it accepts (any key
// when none is set), with one Quota per caller: an IP on the anonymous
// plan, an API key on the keyed one.
type plans struct {
	anonymous, keyed Limits
	apiKeys          []string
	mu               sync.Mutex
	quotas           map[string]*Quota // by "ip:…" or "key:…"
}

func newPlans(anonymous, keyed Limits, apiKeys []string) *plans {
	return &plans{anonymous: anonymous, keyed: keyed, apiKeys: apiKeys, quotas: map[string]*Quota{}}
}

// take spends cost units of the budget of the request's caller at now, if
// that many are left: its API key's on the keyed plan, or its IP's on the
// anonymous one. False for a key not accepted.
func (p *plans) take(r *http.Request, now time.Time, cost int) (Limits, Answer, bool) {
	l, caller := p.anonymous, "ip:"+r.RemoteAddr
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		caller = "ip:" + host
	}
	if key := r.Header.Get("x-api-key"); key != "" {
		valid := len(p.apiKeys) == 0
		for _, k := range p.apiKeys {
			valid = valid || subtle.ConstantTimeCompare([]byte(k), []byte(key)) == 1
		}
		if !valid {
			return Limits{}, Answer{}, false
		}
		l, caller = p.keyed, "key:"+key
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	q, ok := p.quotas[caller]
	if !ok {
		q = &Quota{Limits: l}
		p.quotas[caller] = q
	}
	return l, q.Take(now, cost), true
}

// Quota is one caller's windows of a plan: the one model of an upstream's
// limits, which the simulator serves and the benchmarks (internal/pacing/bench,
// internal/ingest/bench) spend in virtual time. Its Limits may change
// between takes (a benchmark's phases); a minute window takes the
// neighbour's share when it starts. The zero value of Limits.PerMonth is no
// month quota.
type Quota struct {
	Limits      Limits
	minuteStart time.Time
	minuteUsed  int
	// recent are the units spent in the last minute, oldest first
	// (ShapeSliding); tokens what a bucket holds at tokensAt
	// (ShapeBucket).
	recent   []time.Time
	tokens   float64
	tokensAt time.Time
	// lagged are the minute's remaining counts after the last requests,
	// newest last (HeaderLag).
	lagged     []int
	monthStart time.Time
	monthUsed  int
	// DryAt is when the month quota first refused a request.
	DryAt *time.Time
}

// Answer is the quota's answer to one request.
type Answer struct {
	Allowed         bool
	MinuteRemaining int
	// MonthRemaining is what is left of the month; meaningless without a
	// month quota.
	MonthRemaining int
	// RetryAfter is the time until the spent window ends, when refused.
	RetryAfter time.Duration
}

// Take spends cost units at now, if that many are left.
func (q *Quota) Take(now time.Time, cost int) Answer {
	q.roll(now)
	perMinute, perMonth := q.Limits.enforced(), q.perMonth()
	minuteLeft, minuteWait := q.minute(now, perMinute)
	minuteSpent := cost > minuteLeft
	monthSpent := q.monthUsed+cost > perMonth
	a := Answer{Allowed: !minuteSpent && !monthSpent}
	switch {
	case a.Allowed:
		q.spend(now, cost)
		q.monthUsed += cost
	case monthSpent:
		// The month is the longer wall; pointing at the minute would only
		// invite a retry into it.
		a.RetryAfter = q.monthStart.AddDate(0, 1, 0).Sub(now)
		if q.DryAt == nil {
			q.DryAt = &now
		}
	default:
		a.RetryAfter = minuteWait(cost)
	}
	a.MinuteRemaining, _ = q.minute(now, perMinute)
	if lag := q.Limits.HeaderLag; lag > 0 {
		q.lagged = append(q.lagged, a.MinuteRemaining)
		if len(q.lagged) > lag+1 {
			q.lagged = q.lagged[1:]
		}
		a.MinuteRemaining = q.lagged[0]
	}
	a.MonthRemaining = perMonth - q.monthUsed
	return a
}

// minute is what the minute limit has left at now, and how long until it
// has n units.
func (q *Quota) minute(now time.Time, perMinute int) (left int, wait func(n int) time.Duration) {
	switch q.Limits.Shape {
	case ShapeSliding:
		for len(q.recent) > 0 && !q.recent[0].Add(time.Minute).After(now) {
			q.recent = q.recent[1:]
		}
		return perMinute - len(q.recent), func(n int) time.Duration {
			if i := len(q.recent) - perMinute + n - 1; i >= 0 && i < len(q.recent) {
				return q.recent[i].Add(time.Minute).Sub(now)
			}
			return time.Second
		}
	case ShapeBucket:
		burst := float64(cmp.Or(max(q.Limits.Burst, 0), perMinute))
		fill := float64(perMinute) / time.Minute.Seconds() // units a second
		if q.tokensAt.IsZero() {
			q.tokens = burst
		} else if dt := now.Sub(q.tokensAt).Seconds(); dt > 0 {
			q.tokens = math.Min(burst, q.tokens+dt*fill)
		}
		q.tokensAt = now
		return int(q.tokens), func(n int) time.Duration {
			return time.Duration((float64(n) - q.tokens) / fill * float64(time.Second))
		}
	}
	return perMinute - q.minuteUsed, func(int) time.Duration { return q.minuteStart.Add(time.Minute).Sub(now) }
}

// spend debits the minute limit cost units at now.
func (q *Quota) spend(now time.Time, cost int) {
	switch q.Limits.Shape {
	case ShapeSliding:
		for range cost {
			q.recent = append(q.recent, now)
		}
	case ShapeBucket:
		q.tokens -= float64(cost)
	default:
		q.minuteUsed += cost
	}
}

// MonthLeft is what is left of the month last used; -1 without a quota.
func (q *Quota) MonthLeft() int {
	if !q.Limits.HasMonth() {
		return -1
	}
	return q.perMonth() - q.monthUsed
}

// HasMonth reports whether the plan has a month quota.
func (l Limits) HasMonth() bool { return l.PerMonth > 0 && l.PerMonth < noMonthQuota }

// noMonthQuota is the month of a plan without a month quota (as Hiro's
// anonymous one): more than any caller spends.
const noMonthQuota = math.MaxInt32

func (q *Quota) perMonth() int {
	if q.Limits.PerMonth <= 0 {
		return noMonthQuota
	}
	return q.Limits.PerMonth
}

// roll moves the windows to the ones holding now.
func (q *Quota) roll(now time.Time) {
	l := q.Limits
	if month, _ := budget.MonthOf(now); !month.Equal(q.monthStart) {
		used := 0
		if q.monthStart.IsZero() {
			used = min(max(l.MonthUsed, 0), q.perMonth())
		}
		q.monthStart, q.monthUsed = month, used
	}
	minute := now.Truncate(time.Minute)
	if !minute.Equal(q.minuteStart) && l.Shape == ShapeFixed {
		q.minuteStart = minute
		q.minuteUsed = l.NoisyPerMinute
		q.monthUsed = min(q.monthUsed+l.NoisyPerMinute, q.perMonth())
	}
}

// retryAfterSeconds renders a wait as Retry-After does: whole seconds,
// rounded up so a client that obeys it lands in the next window, never 0.
func retryAfterSeconds(d time.Duration) int64 {
	return max(int64((d+time.Second-1)/time.Second), 1)
}
