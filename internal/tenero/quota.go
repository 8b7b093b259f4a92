package tenero

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/pacer-dev/pacer/internal/fault"
)

// Header names Tenero uses to describe the caller's budget.
const (
	HeaderMinuteRemaining = "x-ratelimit-minute-remaining"
	HeaderMonthRemaining  = "x-ratelimit-month-remaining"
	HeaderType            = "x-ratelimit-type"
	HeaderRetryAfter      = "Retry-After"
)

// maxRetryAfterHeader clamps absurd Retry-After values so the conversion to a
// Duration cannot overflow; anything this long means "not in this run" anyway.
const maxRetryAfterHeader = 366 * 24 * time.Hour

// MaxCount is the ceiling of a parsed count. A count above it (a plan past
// 2^31, an "unlimited" sentinel, twenty digits of nonsense) is "plenty", not
// unknown and not an error: it is clamped here, so it fits a bigint column,
// keeps the pacing arithmetic far from overflow, and reads exactly as a
// JavaScript number in the status document.
const MaxCount = 1<<53 - 1

// Quota is what the rate-limit headers said on one response. A nil counter
// means the header was absent or unreadable: callers must treat it as unknown,
// never as zero, or a proxy that strips headers would stop every refresh.
type Quota struct {
	MinuteRemaining *int64 `json:"minuteRemaining"`
	MonthRemaining  *int64 `json:"monthRemaining"`
	Type            string `json:"type,omitempty"`
	// RetryAfter is zero when the header was absent or unreadable. It is kept
	// out of JSON because a Duration would encode as opaque nanoseconds.
	RetryAfter time.Duration `json:"-"`
}

// ParseQuota reads Tenero's rate-limit headers. It never fails: a header it
// cannot read is left unknown, a negative count is treated as unreadable
// (some gateways use -1 for "unlimited"), and a count past MaxCount is
// MaxCount. Retry-After is read as whole
// seconds only; Tenero does not send HTTP dates and reading one would need a
// clock, which would make this function impure.
func ParseQuota(h http.Header) Quota {
	return Quota{
		MinuteRemaining: parseCount(h.Get(HeaderMinuteRemaining)),
		MonthRemaining:  parseCount(h.Get(HeaderMonthRemaining)),
		Type:            parseType(h.Get(HeaderType)),
		RetryAfter:      parseRetryAfter(h.Get(HeaderRetryAfter)),
	}
}

// Exhausted reports whether a quota is spent and how long the task should be
// deferred. The month quota wins because waiting five minutes would only walk
// into the same wall again.
func (q Quota) Exhausted() (time.Duration, bool) {
	switch {
	case q.MonthRemaining != nil && *q.MonthRemaining <= 0:
		return fault.MonthQuotaBackoff, true
	case q.MinuteRemaining != nil && *q.MinuteRemaining <= 0:
		return fault.MinuteQuotaBackoff, true
	default:
		return 0, false
	}
}

func parseCount(s string) *int64 {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if errors.Is(err, strconv.ErrRange) && n > 0 {
		err = nil // too large for int64 is still a count: clamped below
	}
	if err != nil || n < 0 {
		return nil
	}
	n = min(n, MaxCount)
	return &n
}

func parseRetryAfter(s string) time.Duration {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || n <= 0 {
		return 0
	}
	if n > int64(maxRetryAfterHeader/time.Second) {
		return maxRetryAfterHeader
	}
	return time.Duration(n) * time.Second
}

// parseType keeps the plan name only when it looks like one, because it ends
// up in logs and the status document and must not carry control characters.
func parseType(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 64 {
		return ""
	}
	for _, r := range s {
		if r < 0x20 || r > 0x7e {
			return ""
		}
	}
	return s
}
