package webhook

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// DefaultLadder is PACER_DELIVERY_LADDER's default (SPEC §10.3).
const DefaultLadder = "1m,5m,15m,1h,2h"

// Bounds of a ladder: a retry sooner than this would hammer an endpoint
// that just failed, one later than MaxStep would outlive the deliveries'
// retention, and more than MaxSteps steps is a typo.
const (
	MinStep  = 100 * time.Millisecond
	MaxStep  = 7 * 24 * time.Hour
	MaxSteps = 20
)

// Jitter is the spread of each step (±10%), so that deliveries that failed
// together do not all come back in the same instant.
const Jitter = 0.10

// MaxRetryAfter caps how long a subscriber's Retry-After may defer a
// retry: an absurd value must not park a delivery for good.
const MaxRetryAfter = 24 * time.Hour

// Ladder is the delays between delivery attempts: after the n-th failed
// attempt the next one comes Ladder[n-1] later; after the last step the
// delivery is exhausted.
type Ladder []time.Duration

// ParseLadder reads a comma-separated list of Go durations ("1m,5m,15m").
func ParseLadder(s string) (Ladder, error) {
	var l Ladder
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			return nil, fmt.Errorf("delivery ladder %q: empty step", s)
		}
		d, err := time.ParseDuration(part)
		if err != nil {
			return nil, fmt.Errorf("delivery ladder %q: %q is not a Go duration (like 5m)", s, part)
		}
		if d < MinStep || d > MaxStep {
			return nil, fmt.Errorf("delivery ladder %q: step %s is outside [%s, %s]", s, part, MinStep, MaxStep)
		}
		l = append(l, d)
	}
	if len(l) > MaxSteps {
		return nil, fmt.Errorf("delivery ladder %q: %d steps, at most %d", s, len(l), MaxSteps)
	}
	return l, nil
}

// String renders the ladder as ParseLadder reads it.
func (l Ladder) String() string {
	parts := make([]string, len(l))
	for i, d := range l {
		parts[i] = d.String()
	}
	return strings.Join(parts, ",")
}

// Next says when to try again after a delivery's failed attempt number
// failed (1 for the first attempt), or ok=false when the ladder is spent
// and the delivery is exhausted. u is a uniform draw in [0, 1) that sets
// the jitter. A retryAfter the subscriber asked for (429, 503) wins when it
// is longer than the jittered step.
func (l Ladder) Next(failed int, retryAfter time.Duration, u float64) (time.Duration, bool) {
	if failed < 1 || failed > len(l) {
		return 0, false
	}
	step := l[failed-1]
	d := time.Duration(float64(step) * (1 - Jitter + 2*Jitter*u))
	if retryAfter > d {
		d = min(retryAfter, MaxRetryAfter)
	}
	return d, true
}

// Total is the sum of the steps: how long a delivery can stay retrying.
func (l Ladder) Total() time.Duration {
	var sum time.Duration
	for _, d := range l {
		sum += d
	}
	return sum
}

// ParseRetryAfter reads a Retry-After header, in seconds or as an HTTP date
// (relative to now). Zero means absent, unreadable or in the past.
func ParseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		if secs > int64(MaxRetryAfter/time.Second) {
			return MaxRetryAfter
		}
		return time.Duration(secs) * time.Second
	}
	if at, err := http.ParseTime(v); err == nil && at.After(now) {
		return min(at.Sub(now), MaxRetryAfter)
	}
	return 0
}
