package hiro

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Quota is what one Hiro response said about the caller's rate limits. A nil
// field means the header was absent or unreadable: callers must treat it as
// unknown, never as zero, or a proxy that strips headers would stop the sweep.
type Quota struct {
	// Remaining and Reset are the IETF-draft headers Hiro sends for its
	// per-IP (or per-key) short window.
	Remaining *int
	Reset     *time.Duration
	// RetryAfter is how long Hiro asked us to wait, usually only on a 429.
	RetryAfter *time.Duration
	// The Stacks-specific counters of keyed plans.
	MinuteRemaining *int
	MonthRemaining  *int
	MonthLimit      *int
}

// ParseQuota reads the rate-limit headers of a Hiro response. It never fails:
// a header it cannot read is left unknown. Retry-After is read as seconds
// only; Hiro does not send HTTP dates, and reading one would need a clock.
func ParseQuota(h http.Header) Quota {
	return Quota{
		Remaining:       parseCount(h.Get("ratelimit-remaining")),
		Reset:           parseSeconds(h.Get("ratelimit-reset")),
		RetryAfter:      parseSeconds(h.Get("retry-after")),
		MinuteRemaining: parseCount(h.Get("x-ratelimit-remaining-stacks-minute")),
		MonthRemaining:  parseCount(h.Get("x-ratelimit-remaining-stacks-month")),
		MonthLimit:      parseCount(h.Get("x-ratelimit-limit-stacks-month")),
	}
}

// MonthLow reports whether less than a fifth of the month quota is left. It is
// false when either number is unknown, so a missing header never raises alarms.
func (q Quota) MonthLow() bool {
	if q.MonthRemaining == nil || q.MonthLimit == nil || *q.MonthLimit <= 0 {
		return false
	}
	// Integer arithmetic keeps the 20% boundary exact.
	return int64(*q.MonthRemaining)*5 < int64(*q.MonthLimit)
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

// parseCount reads a non-negative integer, tolerating surrounding spaces.
func parseCount(s string) *int {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 0 {
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
