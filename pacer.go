// Package pacer holds the domain vocabulary shared by every layer: task names,
// error classes and the results tasks report. It does no I/O, so the workflow,
// the activities, the HTTP API and the CLI can all import it.
package pacer

import (
	"errors"
	"fmt"
	"time"
)

// Task names are fixed by the product contract: they appear in signals,
// updates, the status document and metrics.
const (
	TaskTenero = "tenero"
	TaskSweep  = "sweep"
	TaskAll    = "all"
)

// ErrorClass says what kind of trouble ended a call. Only ClassTransport is
// worth Temporal's activity retries; upstream trouble waits for the next tick.
type ErrorClass string

const (
	ClassRateLimit   ErrorClass = "rate_limit"
	ClassServerError ErrorClass = "server_error"
	ClassTimeout     ErrorClass = "timeout"
	ClassNotFound    ErrorClass = "not_found"
	ClassParseError  ErrorClass = "parse_error"
	ClassTransport   ErrorClass = "transport"
	// ClassPermanent marks an upstream answer that will not change by retrying
	// (410 Gone, 401 with a bad key): the task keeps failing until someone acts.
	ClassPermanent ErrorClass = "permanent"
)

// Error carries a class through wrapping. Upstream clients and the store return
// it; the activity boundary reads the class with ClassOf.
type Error struct {
	Class ErrorClass
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
func Errorf(class ErrorClass, op string, format string, args ...any) *Error {
	return &Error{Class: class, Op: op, Err: fmt.Errorf(format, args...)}
}

// ClassOf returns the class of the first *Error in err's chain, or
// ClassTransport for anything unclassified (a dropped connection, a closed
// pool): the kind of trouble a retry may cure.
func ClassOf(err error) ErrorClass {
	var e *Error
	if errors.As(err, &e) {
		return e.Class
	}
	return ClassTransport
}

// IsUpstreamFailure reports whether a class counts against the upstream's
// health. Item problems (an unknown token, one bad body) do not.
func (c ErrorClass) IsUpstreamFailure() bool {
	return c == ClassRateLimit || c == ClassServerError || c == ClassTimeout
}

// Back-offs applied when an upstream says its quota is spent. A month quota
// wins over a minute quota.
const (
	MinuteQuotaBackoff = 5 * time.Minute
	MonthQuotaBackoff  = 24 * time.Hour
)

// Run is what every task's result reports about the run itself.
type Run struct {
	StartedAt  time.Time `json:"startedAt"`
	DurationMs int64     `json:"durationMs"`
	// RateLimited says an upstream quota cut the run short; the task is then
	// deferred by RateLimitBackoffMs.
	RateLimited        bool  `json:"rateLimited"`
	RateLimitBackoffMs int64 `json:"rateLimitBackoffMs"`
	// What the upstream's headers said was left, when they said it.
	MinuteRemaining *int `json:"minuteRemaining"`
	MonthRemaining  *int `json:"monthRemaining"`
	// What the run cost the upstream, for pacing: calls made, calls refused
	// with 429, and calls that failed for the upstream's own reasons
	// (rate_limit, server_error, timeout; not item problems).
	Requests       int `json:"requests"`
	Rejected       int `json:"rejected"`
	UpstreamFailed int `json:"upstreamFailed"`
	// ErrorClass and Error are set when the run failed as a whole (quota
	// exhausted, every fetch failing, the database down), empty otherwise.
	ErrorClass ErrorClass `json:"errorClass,omitempty"`
	Error      string     `json:"error,omitempty"`
}

// Meta gives generic code the run part of a result.
func (r *Run) Meta() *Run { return r }

// TeneroResult is what one run of the tenero task reports (SPEC §3).
type TeneroResult struct {
	Run
	TokensAttempted int `json:"tokensAttempted"`
	Succeeded       int `json:"succeeded"`
	Failed          int `json:"failed"`
	// Beyond the contract: how the successes split, and the tokens that were
	// never tried because a quota ran out.
	Written   int `json:"written"`
	Unchanged int `json:"unchanged"`
	Pegged    int `json:"pegged"`
	NoPrice   int `json:"noPrice"`
	Skipped   int `json:"skipped"`
	// NextTailFrom is the TailFrom of the next run.
	NextTailFrom int `json:"nextTailFrom,omitempty"`
}

// TeneroInput is the input of the tenero activity.
type TeneroInput struct {
	// MaxTokens caps how many tokens one run refreshes (0 = the whole set);
	// the static base comes first, so a cut keeps it.
	MaxTokens int `json:"maxTokens,omitempty"`
	// TailFrom rotates a cut batch through the traded tokens: the run takes
	// the static base first, then the traded tokens from this position on,
	// wrapping, so every token comes round. The result says where the next
	// run starts.
	TailFrom int `json:"tailFrom,omitempty"`
	// StopAtMinuteRemaining ends the run normally once Tenero says this many
	// requests or fewer are left this minute (0 = run until it says 0). A
	// small reserve keeps a paced run from ever hitting the wall.
	StopAtMinuteRemaining int `json:"stopAtMinuteRemaining,omitempty"`
}

// SweepInput is the input of the sweep activity.
type SweepInput struct {
	// PageSize is how many agents one run walks (0 = 100).
	PageSize int `json:"pageSize,omitempty"`
}

// SweepResult is what one run of the sweep task reports (SPEC §3).
type SweepResult struct {
	Run
	Scanned      int `json:"scanned"`
	Found        int `json:"found"`
	Inserted     int `json:"inserted"`
	AlreadyKnown int `json:"alreadyKnown"`
	Pending      int `json:"pending"`
	Rejected     int `json:"rejected"`
	// RejectionReasons has every reason key, zero when unused.
	RejectionReasons map[string]int `json:"rejectionReasons"`
	// Cursor is the last address of the page when the page was full (the
	// next run starts after it), null when the walk wrapped.
	Cursor *string `json:"cursor"`
	// HiroErrors counts Hiro calls that failed while the walk went on.
	HiroErrors int `json:"hiroErrors"`
}
