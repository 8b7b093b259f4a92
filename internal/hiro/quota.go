package hiro

import (
	"errors"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Hiro's rate-limit headers (SPEC §5.4).
const (
	HeaderCost            = "x-ratelimit-cost-stacks"
	HeaderLimit           = "ratelimit-limit"
	HeaderRemaining       = "ratelimit-remaining"
	HeaderReset           = "ratelimit-reset"
	HeaderRetryAfter      = "retry-after"
	HeaderMinuteRemaining = "x-ratelimit-remaining-stacks-minute"
	HeaderMonthRemaining  = "x-ratelimit-remaining-stacks-month"
	HeaderMonthLimit      = "x-ratelimit-limit-stacks-month"
)

// Quota is what one Hiro response said about the caller's rate limits. A nil
// field means the header was absent or unreadable: callers must treat it as
// unknown, never as zero, or a proxy that strips headers would stop the sweep.
// Counts are int64 and clamped: a header past 2^63-1 (an "unlimited"
// sentinel) reads as math.MaxInt64, never as an overflow or an error.
type Quota struct {
	// StatusCode is the HTTP status of the response the headers came with,
	// so a budget can tell a refusal (429) from an answer.
	StatusCode int
	// Cost is what the request cost against the quotas
	// (x-ratelimit-cost-stacks): 1 when the header is absent or unreadable.
	Cost int64
	// Limit, Remaining and Reset are the IETF-draft headers Hiro sends for
	// its per-IP (or per-key) short window. Remaining below the configured
	// per-minute budget reveals a limit lower than the configured one.
	Limit     *int64
	Remaining *int64
	Reset     *time.Duration
	// RetryAfter is how long Hiro asked us to wait, usually only on a 429.
	RetryAfter *time.Duration
	// The Stacks-specific counters of keyed plans.
	MinuteRemaining *int64
	MonthRemaining  *int64
	MonthLimit      *int64
	// SentAt is when the request went out (the client's clock), in what
	// the Limiter observes: answers to requests in flight together arrive
	// in any order, and an older one's counts are older
	// (budget.Observation.SentAt).
	SentAt time.Time
}

// ParseQuota reads the rate-limit headers of a Hiro response. It never fails:
// a header it cannot read is left unknown. Retry-After is read as seconds
// only; Hiro does not send HTTP dates, and reading one would need a clock.
func ParseQuota(h http.Header) Quota {
	q := Quota{
		Cost:            1,
		Limit:           parseCount(h.Get(HeaderLimit)),
		Remaining:       parseCount(h.Get(HeaderRemaining)),
		Reset:           parseSeconds(h.Get(HeaderReset)),
		RetryAfter:      parseSeconds(h.Get(HeaderRetryAfter)),
		MinuteRemaining: parseCount(h.Get(HeaderMinuteRemaining)),
		MonthRemaining:  parseCount(h.Get(HeaderMonthRemaining)),
		MonthLimit:      parseCount(h.Get(HeaderMonthLimit)),
	}
	// A cost of 0 would let a budget hand out requests for free: it is
	// read as unknown, that is 1.
	if c := parseCount(h.Get(HeaderCost)); c != nil && *c > 0 {
		q.Cost = *c
	}
	return q
}

// MonthLow reports whether less than a fifth of the month quota is left. It is
// false when either number is unknown, so a missing header never raises alarms.
func (q Quota) MonthLow() bool {
	if q.MonthRemaining == nil || q.MonthLimit == nil || *q.MonthLimit <= 0 {
		return false
	}
	// Dividing keeps the test exact and free of overflow for any int64:
	// r*5 < l ⇔ r < ⌈l/5⌉.
	limit := *q.MonthLimit
	fifth := limit / 5
	if limit%5 != 0 {
		fifth++
	}
	return *q.MonthRemaining < fifth
}

// MonthExhausted reports whether the month quota is known to be spent.
func (q Quota) MonthExhausted() bool {
	return q.MonthRemaining != nil && *q.MonthRemaining <= 0
}

// MinuteExhausted reports whether the short window is known to be spent, by
// either the Stacks counter or the generic one.
func (q Quota) MinuteExhausted() bool {
	return (q.MinuteRemaining != nil && *q.MinuteRemaining <= 0) ||
		(q.Remaining != nil && *q.Remaining <= 0)
}

// parseCount reads a non-negative decimal integer, tolerating surrounding
// spaces. One past int64 is clamped to math.MaxInt64: a huge count still
// means "plenty", and must neither wrap nor make the header unknown.
func parseCount(s string) *int64 {
	s = strings.TrimSpace(s)
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		// Signs, exponents and fractions are not counts.
		return nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if errors.Is(err, strconv.ErrRange) {
		n, err = math.MaxInt64, nil
	}
	if err != nil {
		return nil
	}
	return &n
}

// parseSeconds reads a non-negative number of seconds; fractions are allowed
// because some proxies send them.
func parseSeconds(s string) *time.Duration {
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	// The upper bound keeps the conversion to Duration from overflowing; no
	// real header asks for more than a few days.
	// The bound is excluded: as a float64 it rounds up past MaxInt64
	// nanoseconds, and the conversion would wrap to a negative duration.
	if err != nil || math.IsNaN(f) || f < 0 || f >= math.MaxInt64/float64(time.Second) {
		return nil
	}
	d := time.Duration(f * float64(time.Second))
	return &d
}
