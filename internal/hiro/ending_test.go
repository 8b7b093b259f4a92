package hiro

import (
	"errors"
	"testing"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/fault"
)

func TestEndingOf(t *testing.T) {
	t.Parallel()
	zero := int64(0)
	classed := func(c pacer.ErrorClass, err error) error { return &fault.Error{Class: c, Op: "hiro GET /x", Err: err} }
	spent := &BudgetSpentError{What: "the sweep lane's minute budget"}
	for _, tt := range []struct {
		name string
		err  error
		want Ending
	}{
		{"the budget's own count spent", classed(pacer.ClassRateLimit, spent), EndSpent},
		{"spent, unclassified", spent, EndSpent},
		{"the budget held back by Hiro's refusal", classed(pacer.ClassRateLimit, errors.Join(spent, ErrRefused)), EndRefused},
		{"a 429", classed(pacer.ClassRateLimit, &StatusError{StatusCode: 429}), EndRefused},
		{"a 429 with the month spent", classed(pacer.ClassRateLimit, &StatusError{StatusCode: 429, Quota: Quota{MonthRemaining: &zero}}), EndStop},
		{"a 5xx", classed(pacer.ClassServerError, &StatusError{StatusCode: 502}), EndRetry},
		{"a timeout", classed(pacer.ClassTimeout, errors.New("deadline")), EndRetry},
		{"a request Hiro will never answer", classed(pacer.ClassPermanent, &StatusError{StatusCode: 401}), EndStop},
		{"the transport", errors.New("connection reset"), EndStop},
	} {
		if got := EndingOf(tt.err); got != tt.want {
			t.Errorf("%s: EndingOf = %d, want %d", tt.name, got, tt.want)
		}
	}
}
