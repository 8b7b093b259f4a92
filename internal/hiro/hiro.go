// Package hiro is a typed client for the parts of the Hiro Stacks API that
// pacer reads: an address's transactions, page by page (ListTransactions),
// and one transaction with all its events (Tx). It owns the upstream's
// quirks (timeouts, retries, rate-limit headers, event paging, the v3/v1
// list endpoints, deprecation warnings) and reports every failure as a
// classified *fault.Error.
//
// Every request first takes a slot from the Limiter and then reports the
// response's headers to it, so one budget shared by every process can
// follow what Hiro says (SPEC §5.4).
package hiro

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/fault"
	"github.com/pacer-dev/pacer/internal/upstream"
)

// DefaultBaseURL is Hiro's public mainnet API.
const DefaultBaseURL = "https://api.hiro.so"

// MaxLimit is the largest page size Hiro's list endpoints accept; more is a 400.
const MaxLimit = 50

// Retry policy (SPEC §5.8). The in-call retries stay short because the next
// sweep is the real recovery path.
const (
	maxRateLimitAttempts = 5
	maxFailureAttempts   = 3
	maxRetryAfter        = 30 * time.Second
	// maxBody bounds what one response may cost in memory; a tx with hundreds
	// of events is well under 1 MiB.
	maxBody = 4 << 20
	// maxSnippet is how much of an error body goes into the error message.
	maxSnippet = 256
)

var (
	rateLimitDelays = []time.Duration{1 * time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second}
	failureDelays   = []time.Duration{500 * time.Millisecond, 1 * time.Second}
)

// ErrInvalidArgument is returned, classified permanent, for a call that could
// never succeed (a limit out of range, an empty id, a page token pacer did
// not make); no request is sent.
var ErrInvalidArgument = errors.New("invalid argument")

// errTooLarge is the cause of an answer longer than maxBody.
var errTooLarge = errors.New("body larger than the client accepts")

// Limiter paces calls against a budget shared by everything that calls Hiro.
type Limiter interface {
	// Wait takes one request's slot before every attempt, retries included.
	// It blocks until the budget has one, or returns an error: a
	// *BudgetSpentError when it must not wait (the client fails at once
	// with rate_limit), a *fault.Error that keeps its class, or any other
	// error, which means the budget itself failed (its store is down) and
	// is classified transport, never rate_limit.
	Wait(ctx context.Context) error
	// Observe sees the headers of every response that arrived, refusals
	// and failures included: the budget debits the cost beyond the slot
	// Wait took (q.Cost-1) and follows the windows Hiro reports.
	Observe(ctx context.Context, q Quota)
}

// BudgetSpentError is what a Limiter that never waits (the agents' fast
// path) returns from Wait when no request may be sent now. The client gives
// up at once with a rate_limit error wrapping it; RetryAfter reads the
// delay back.
type BudgetSpentError struct {
	// RetryAfter is when a request may be sent again.
	RetryAfter time.Duration
	// What is the budget that is spent, for people ("fast-path share").
	What string
	// Why names the window that is spent, when the limiter knows it
	// ("minute", "month", "blocked": budget.Why*).
	Why string
}

func (e *BudgetSpentError) Error() string {
	return fmt.Sprintf("%s spent; retry in %s", cmp.Or(e.What, "hiro budget"), e.RetryAfter)
}

// ErrRefused joins the *BudgetSpentError of a Limiter that holds its
// requests back because Hiro itself refused (a 429 with Retry-After), not
// because the budget's own count is spent: a caller can tell a refusal
// from a pace.
var ErrRefused = errors.New("hiro refused: held until its retry-after")

// Ending is how a failed request ends the work that sent it.
type Ending int

// Endings.
const (
	// EndSpent: the caller's budget share is spent; the work goes on
	// when there is room, and nothing failed.
	EndSpent Ending = iota
	// EndRefused: Hiro refused (a rate limit, or a budget held back by
	// one); the work goes on when there is room, counted as a refusal.
	EndRefused
	// EndRetry: trouble that may pass (a 5xx, a timeout): back off.
	EndRetry
	// EndStop: the work cannot go on (the month's quota spent, a request
	// Hiro will never answer, the transport or the budget's store down).
	EndStop
)

// EndingOf is how err, a request's failure, ends the work that sent it.
func EndingOf(err error) Ending {
	var spent *BudgetSpentError
	isSpent := errors.As(err, &spent)
	class := fault.ClassOf(err)
	refused := class == pacer.ClassRateLimit && (!isSpent || errors.Is(err, ErrRefused))
	var se *StatusError
	switch {
	case isSpent && !refused:
		return EndSpent
	case refused && errors.As(err, &se) && se.Quota.MonthExhausted():
		return EndStop
	case refused:
		return EndRefused
	case class == pacer.ClassPermanent, class == pacer.ClassTransport:
		return EndStop
	}
	return EndRetry
}

// RetryAfter returns how long the upstream or the budget asked the caller to
// wait before trying again, when err says so: a spent budget, or a 429 with
// a positive Retry-After.
func RetryAfter(err error) (time.Duration, bool) {
	var be *BudgetSpentError
	if errors.As(err, &be) {
		return be.RetryAfter, true
	}
	var se *StatusError
	if errors.As(err, &se) && se.Quota.RetryAfter != nil && *se.Quota.RetryAfter > 0 {
		return *se.Quota.RetryAfter, true
	}
	return 0, false
}

// Config configures a Client. Only BaseURL matters in production; the rest
// has working defaults and exists so tests and the shared budget can plug in.
type Config struct {
	// BaseURL defaults to DefaultBaseURL.
	BaseURL string
	// APIKey is sent as x-api-key when set. It never appears in errors or logs.
	APIKey string
	// HTTPClient defaults to a client without its own timeout: each attempt
	// gets AttemptTimeout through its context instead. Redirects are never
	// followed, even on a client passed in here.
	HTTPClient *http.Client
	// AttemptTimeout bounds one request, body included. Default 8 s.
	AttemptTimeout time.Duration
	// Sleep waits between retries; it must return early with ctx's error.
	// Defaults to a timer.
	Sleep func(ctx context.Context, d time.Duration) error
	// Logger defaults to a no-op logger.
	Logger *zap.Logger
	// Limiter is asked before every attempt, retries included, and sees
	// every response's headers. Nil means none.
	Limiter Limiter
}

// Client calls Hiro. It is safe for concurrent use.
type Client struct {
	conn    upstream.Conn
	limiter Limiter

	// multipleMissingSince is when tx/multiple was last refused (unix
	// nanoseconds, 0 = never): details go one by one until
	// multipleRecheck has passed.
	multipleMissingSince atomic.Int64

	// v3MissingSince is when the v3 list endpoint last answered 404 (unix
	// nanoseconds, 0 = never): listings use v1 until v3Recheck has passed.
	v3MissingSince atomic.Int64

	// deprecationLogged makes the Warning: 299 log appear once per client,
	// not once per call of a sweep.
	deprecationLogged sync.Once
	// monthLowLogged makes the low-quota warning fire when the quota crosses
	// the threshold rather than on every response below it.
	monthLowLogged atomic.Bool
}

// New builds a Client, filling in defaults.
func New(cfg Config) *Client {
	return &Client{
		conn: upstream.Conn{BaseURL: cfg.BaseURL, APIKey: cfg.APIKey, HTTP: cfg.HTTPClient,
			AttemptTimeout: cfg.AttemptTimeout, Sleep: cfg.Sleep, Log: cfg.Logger}.WithDefaults(DefaultBaseURL),
		limiter: cfg.Limiter,
	}
}

// StatusError is the cause inside a *fault.Error for a non-2xx answer, so a
// caller can log the status and see the quota of the last response.
type StatusError struct {
	StatusCode int
	// Detail explains the status and quotes the start of the body.
	Detail string
	Quota  Quota
	// RayID and RequestID are the response's cf-ray and x-request-id when
	// it had them: what Hiro's support traces a failed request by. Hiro
	// documents neither; api.hiro.so is behind Cloudflare.
	RayID, RequestID string
}

func (e *StatusError) Error() string {
	msg := fmt.Sprintf("status %d: %s", e.StatusCode, e.Detail)
	if e.RayID != "" {
		msg += " (cf-ray " + e.RayID + ")"
	}
	if e.RequestID != "" {
		msg += " (x-request-id " + e.RequestID + ")"
	}
	return msg
}

// result is what get returns: the 2xx body, the quota of the last
// response seen (even on failure) and how many attempts were sent.
type result struct {
	body     []byte
	quota    Quota
	attempts int
}

// response is the outcome of one attempt. err is set for failures before a
// status arrived or while reading the body, which are worth a retry.
type response struct {
	status   int
	header   http.Header
	body     []byte
	err      error
	tooLarge bool
}

// get sends GET path with the retry policy and returns a 2xx body. It never
// sleeps past ctx's deadline: when the next retry would start after it, the
// last failure is returned at once, keeping its class.
func (c *Client) get(ctx context.Context, op, pathAndQuery string) (result, error) {
	var (
		out       result
		limited   int // 429 answers so far
		failures  int // 5xx, network errors and timeouts so far
		lastClass pacer.ErrorClass
		lastErr   error
	)
	for {
		if err := c.wait(ctx, op); err != nil {
			return out, err
		}
		out.attempts++
		sent := time.Now()
		res := c.attempt(ctx, pathAndQuery)
		if ctx.Err() != nil {
			// The caller gave up; its deadline is not Hiro's fault.
			return out, contextError(ctx, op)
		}
		if res.header != nil {
			out.quota = ParseQuota(res.header)
			out.quota.StatusCode = res.status
			q := out.quota
			q.SentAt = sent
			c.observe(ctx, op, res.header, q)
		}

		var delay time.Duration
		switch {
		case res.tooLarge:
			// The same answer would come back: not worth a retry.
			return out, &fault.Error{Class: pacer.ClassParseError, Op: op, Err: fmt.Errorf("%w (%d bytes)", errTooLarge, maxBody)}

		case res.err != nil:
			failures++
			lastClass, lastErr = pacer.ClassServerError, c.redact(res.err)
			if isTimeout(res.err) {
				lastClass = pacer.ClassTimeout
			}
			if failures >= maxFailureAttempts {
				return out, &fault.Error{Class: lastClass, Op: op, Err: fmt.Errorf("after %d attempts: %w", failures, lastErr)}
			}
			delay = failureDelays[failures-1]

		case res.status >= 200 && res.status < 300:
			out.body = res.body
			return out, nil

		case res.status == http.StatusTooManyRequests:
			limited++
			lastClass, lastErr = pacer.ClassRateLimit, c.statusError(res, out.quota, "rate limited")
			if out.quota.MonthExhausted() {
				// Retrying cannot help until the month turns over.
				return out, &fault.Error{Class: pacer.ClassRateLimit, Op: op, Err: fmt.Errorf("month quota exhausted: %w", lastErr)}
			}
			if limited >= maxRateLimitAttempts {
				return out, &fault.Error{Class: pacer.ClassRateLimit, Op: op, Err: fmt.Errorf("after %d attempts: %w", limited, lastErr)}
			}
			delay = rateLimitDelays[limited-1]
			// Retry-After: 0 (or a negative one, which reads as unknown)
			// keeps the default delay: retrying back to back would only
			// spend the budget on more 429s.
			if ra := out.quota.RetryAfter; ra != nil && *ra > 0 {
				delay = min(*ra, maxRetryAfter)
			}

		case res.status >= 500:
			failures++
			lastClass, lastErr = pacer.ClassServerError, c.statusError(res, out.quota, "server error")
			if failures >= maxFailureAttempts {
				return out, &fault.Error{Class: lastClass, Op: op, Err: fmt.Errorf("after %d attempts: %w", failures, lastErr)}
			}
			delay = failureDelays[failures-1]

		default:
			return out, c.clientError(op, res, out.quota)
		}

		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < delay {
			return out, &fault.Error{Class: lastClass, Op: op, Err: fmt.Errorf("no time left to retry in %s: %w", delay, lastErr)}
		}
		c.conn.Log.Debug("hiro.retry",
			zap.String("op", op),
			zap.Int("status", res.status),
			zap.Int("rateLimited", limited),
			zap.Int("failures", failures),
			zap.Duration("delay", delay),
			zap.Error(lastErr))
		if err := c.conn.Sleep(ctx, delay); err != nil {
			return out, contextError(ctx, op)
		}
	}
}

// clientError classifies a 4xx other than 429; none of them is retried.
func (c *Client) clientError(op string, res response, quota Quota) error {
	switch res.status {
	case http.StatusNotFound:
		return &fault.Error{Class: pacer.ClassNotFound, Op: op, Err: c.statusError(res, quota, "not found")}
	case http.StatusGone:
		return &fault.Error{Class: pacer.ClassPermanent, Op: op, Err: c.statusError(res, quota,
			"Hiro has retired this endpoint (410 Gone); pacer must move to its replacement before this call can work again")}
	case http.StatusUnauthorized, http.StatusForbidden:
		return &fault.Error{Class: pacer.ClassPermanent, Op: op, Err: c.statusError(res, quota,
			"Hiro refused the request; check HIRO_API_KEY")}
	default:
		return &fault.Error{Class: pacer.ClassPermanent, Op: op, Err: c.statusError(res, quota, "request rejected")}
	}
}

// statusError builds the cause for a non-2xx answer, quoting the start of the
// body because Hiro explains most refusals there.
func (c *Client) statusError(res response, quota Quota, what string) *StatusError {
	detail := what
	if snippet := strings.TrimSpace(string(res.body)); snippet != "" {
		if len(snippet) > maxSnippet {
			snippet = strings.ToValidUTF8(snippet[:maxSnippet], "") + "…"
		}
		detail += ": " + snippet
	}
	return &StatusError{StatusCode: res.status, Detail: c.redactString(detail), Quota: quota,
		RayID:     c.redactString(upstream.TraceID(res.header, upstream.HeaderCFRay)),
		RequestID: c.redactString(upstream.TraceID(res.header, upstream.HeaderRequestID))}
}

// attempt sends one request under its own timeout and reads the body.
func (c *Client) attempt(ctx context.Context, pathAndQuery string) response {
	ctx, cancel := context.WithTimeout(ctx, c.conn.AttemptTimeout)
	defer cancel()

	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.conn.BaseURL+pathAndQuery, nil)
	if err != nil {
		return response{err: err}
	}
	req.Header.Set("Accept", "application/json")
	if c.conn.APIKey != "" {
		req.Header.Set("x-api-key", c.conn.APIKey)
	}
	resp, err := c.conn.HTTP.Do(req)
	if err != nil {
		return response{err: err}
	}
	defer resp.Body.Close()

	res := response{status: resp.StatusCode, header: resp.Header}
	ok := resp.StatusCode >= 200 && resp.StatusCode < 300
	limit := int64(maxBody)
	if !ok {
		// Only a snippet of an error body is ever used.
		limit = maxSnippet
	}
	res.body, err = io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		res.err = fmt.Errorf("reading body: %w", err)
	}
	cut := int64(len(res.body)) > limit
	res.tooLarge = ok && cut
	res.body = c.redactBody(res.body, cut)
	return res
}

// wait asks the shared budget for a slot. A spent budget that must not wait
// is a rate limit; a budget that already classifies its refusal keeps that
// class; any other error is the budget's own failure (its store is down),
// which is transport trouble: reporting it as a rate limit would defer the
// task as if Hiro had said no.
func (c *Client) wait(ctx context.Context, op string) error {
	if c.limiter == nil {
		return nil
	}
	err := c.limiter.Wait(ctx)
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return contextError(ctx, op)
	}
	var be *BudgetSpentError
	if errors.As(err, &be) {
		return &fault.Error{Class: pacer.ClassRateLimit, Op: op, Err: err}
	}
	var pe *fault.Error
	if errors.As(err, &pe) {
		return err
	}
	return &fault.Error{Class: pacer.ClassTransport, Op: op, Err: fmt.Errorf("hiro budget: %w", err)}
}

// observe reports a response's headers to the budget and the logs.
func (c *Client) observe(ctx context.Context, op string, h http.Header, q Quota) {
	if c.limiter != nil {
		c.limiter.Observe(ctx, q)
	}
	if q.MonthRemaining != nil && q.MonthLimit != nil {
		low := q.MonthLow()
		if low && !c.monthLowLogged.Swap(true) {
			c.conn.Log.Warn("hiro.month_quota_low",
				zap.Int64("monthRemaining", *q.MonthRemaining),
				zap.Int64("monthLimit", *q.MonthLimit))
		} else if !low {
			// A new month (or a bigger plan): warn again next time it runs low.
			c.monthLowLogged.Store(false)
		}
	}
	for _, w := range h.Values("Warning") {
		if strings.HasPrefix(strings.TrimSpace(w), "299") {
			c.deprecationLogged.Do(func() {
				c.conn.Log.Warn("hiro.deprecated_endpoint", zap.String("op", op), zap.String("warning", c.redactString(w)))
			})
			break
		}
	}
}

// redact removes the API key from an error's text. The chain is kept when the
// key is absent, so callers can still match on the cause.
func (c *Client) redact(err error) error {
	if c.conn.APIKey == "" || !strings.Contains(err.Error(), c.conn.APIKey) {
		return err
	}
	return errors.New(c.redactString(err.Error()))
}

// redactBody removes the API key from a body before any of it is quoted: an
// upstream that echoes the key must not put it, or a piece of it, into a
// message. A read cut short may end in the first bytes of an echoed key,
// which no replace can recognise, so a cut body also loses a key's length
// of tail.
func (c *Client) redactBody(body []byte, cut bool) []byte {
	if c.conn.APIKey == "" {
		return body
	}
	body = bytes.ReplaceAll(body, []byte(c.conn.APIKey), []byte("[redacted]"))
	if cut {
		body = body[:max(0, len(body)-len(c.conn.APIKey))]
	}
	return body
}

func (c *Client) redactString(s string) string {
	if c.conn.APIKey == "" {
		return s
	}
	return strings.ReplaceAll(s, c.conn.APIKey, "[redacted]")
}

// contextError classifies the caller's own context ending.
func contextError(ctx context.Context, op string) error {
	class := pacer.ClassTransport
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		class = pacer.ClassTimeout
	}
	return &fault.Error{Class: class, Op: op, Err: ctx.Err()}
}

// abbreviate keeps a hostile value from bloating error messages.
func abbreviate(s string) string {
	const keep = 80
	if len(s) <= keep {
		return s
	}
	return strings.ToValidUTF8(s[:keep], "") + "…"
}

func isTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
