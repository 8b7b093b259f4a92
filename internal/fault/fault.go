// Package fault classifies what went wrong in a call to an upstream or the
// database (SPEC §3.3): the upstream clients and the store return an Error
// with its class, and the activity boundary reads the class with ClassOf.
// The workflow reads only the class (pacer.ErrorClass), in the activity's
// application error type.
package fault

import (
	"errors"
	"fmt"
	"time"

	"github.com/pacer-dev/pacer"
)

// Error carries a class through wrapping.
type Error struct {
	Class pacer.ErrorClass
	Op    string // what was being done, e.g. "tenero GET /v1/stacks/tokens/stx"
	Err   error
}

func (e *Error) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("%s: %s", e.Op, e.Class)
	}
	return fmt.Sprintf("%s: %s: %v", e.Op, e.Class, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf builds a classified error.
func Errorf(class pacer.ErrorClass, op string, format string, args ...any) *Error {
	return &Error{Class: class, Op: op, Err: fmt.Errorf(format, args...)}
}

// ClassOf returns the class of the first *Error in err's chain, or
// pacer.ClassTransport for anything unclassified (a dropped connection, a
// closed pool): the kind of trouble a retry may cure.
func ClassOf(err error) pacer.ErrorClass {
	var e *Error
	if errors.As(err, &e) {
		return e.Class
	}
	return pacer.ClassTransport
}

// Back-offs applied when an upstream says its quota is spent. A month quota
// wins over a minute quota.
const (
	MinuteQuotaBackoff = 5 * time.Minute
	MonthQuotaBackoff  = 24 * time.Hour
)

// RateLimitBackoff is how long a task Hiro refused waits: a day when the
// month is spent, else until roomAt, when the budget has room again
// (zero: not known), at least a second and at most MinuteQuotaBackoff.
func RateLimitBackoff(monthSpent bool, roomAt, now time.Time) time.Duration {
	switch {
	case monthSpent:
		return MonthQuotaBackoff
	case roomAt.IsZero():
		return MinuteQuotaBackoff
	}
	return min(max(roomAt.Sub(now), time.Second), MinuteQuotaBackoff)
}
