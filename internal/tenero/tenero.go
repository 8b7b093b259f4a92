// Package tenero is a typed client for the one Tenero endpoint pacer reads:
// a token's USD price, GET {BaseURL}/v1/stacks/tokens/{address} (SPEC §4).
//
// The whole API:
//
//	c := tenero.New(tenero.Config{BaseURL: …, APIKey: …})
//	p, err := c.Price(ctx, "SP….ststx-token::ststx")
//	if d, spent := p.Quota.Exhausted(); spent { /* defer the task by d */ }
//
// plus ParseQuota, the pure header reader (fuzzed), and Address, which maps a
// token id to the address Tenero keys on.
//
// Price owns the upstream's quirks so callers do not have to:
//
//   - the price is exact decimal text, whether Tenero sent a number or a
//     numeric string; null or 0 is a confirmed "no price" (PriceUSD nil, no
//     error);
//   - every error is a *fault.Error: 404 (or a body saying 404) is not_found,
//     429 rate_limit, 5xx and an unreachable upstream server_error, a silent
//     upstream timeout, an unreadable body parse_error, and 401/403/410 or any
//     other unexpected status permanent;
//   - retries stay inside one call and stay small, because the next tick is
//     the real recovery path: a 429 twice (Retry-After capped at 30 s, else
//     1.5 s then 3 s), 5xx, timeouts and network errors twice (0.5 s, 1 s),
//     and nothing at all once a response says a quota is spent;
//   - a failure Tenero answered with a cf-ray header carries it (RayError,
//     RayID), and its text ends with it;
//   - the rate-limit headers of the last response come back in Price.Quota,
//     on errors too, so the caller can pace itself;
//   - the API key is sent as x-api-key and never appears in an error or a log.
package tenero

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/fault"
	"github.com/pacer-dev/pacer/internal/upstream"
)

// DefaultBaseURL is Tenero's public API.
const DefaultBaseURL = "https://api.tenero.io"

// DefaultAttemptTimeout bounds one request, body included (SPEC §4.5).
const DefaultAttemptTimeout = upstream.DefaultAttemptTimeout

const (
	// maxRetryAfter caps how long one call waits on Tenero's say-so; longer
	// waits belong to the scheduler, not to a running activity.
	maxRetryAfter = 30 * time.Second
	// maxBody bounds what one answer may cost; a token document is a few
	// hundred bytes, so anything near this is broken or hostile.
	maxBody = 1 << 20
	// maxErrorBody is how much of a non-2xx body is read for its message.
	maxErrorBody = 4 << 10
)

var (
	rateLimitDelays = []time.Duration{1500 * time.Millisecond, 3 * time.Second}
	failureDelays   = []time.Duration{500 * time.Millisecond, 1 * time.Second}
)

// Config configures a Client. Only BaseURL and APIKey matter in production;
// the rest has working defaults and exists so tests can plug in.
type Config struct {
	// BaseURL defaults to DefaultBaseURL.
	BaseURL string
	// APIKey is sent as x-api-key when non-empty. It never appears in errors
	// or logs.
	APIKey string
	// HTTPClient defaults to a client without its own timeout: each attempt
	// gets AttemptTimeout through its context instead. Redirects are never
	// followed, even on a client passed in here, because Go would forward
	// x-api-key to whatever host the redirect names.
	HTTPClient *http.Client
	// AttemptTimeout bounds one attempt, body included. Default 8 s.
	AttemptTimeout time.Duration
	// Sleep waits between retries and must return early with ctx's error.
	// Defaults to a timer.
	Sleep func(ctx context.Context, d time.Duration) error
	// Logger defaults to a no-op logger. Retries are logged at debug level;
	// the returned error is the caller's to log.
	Logger *zap.Logger
}

// Client fetches token prices from Tenero. It is safe for concurrent use.
type Client struct {
	conn upstream.Conn
}

// New returns a Client with cfg's defaults filled in.
func New(cfg Config) *Client {
	return &Client{conn: upstream.Conn{BaseURL: cfg.BaseURL, APIKey: cfg.APIKey, HTTP: cfg.HTTPClient,
		AttemptTimeout: cfg.AttemptTimeout, Sleep: cfg.Sleep, Log: cfg.Logger}.WithDefaults(DefaultBaseURL)}
}

// Price is one token's answer.
type Price struct {
	// TokenID is the id as asked for, ::asset suffix included.
	TokenID string
	// PriceUSD is the exact decimal text of a finite price above 0, or nil
	// for Tenero's confirmed "no price" (null or 0).
	PriceUSD *string
	// Decimals is nil when Tenero did not say.
	Decimals *int
	// Quota is what the last response received said, filled on errors too;
	// zero when no response came back at all.
	Quota Quota
}

// Address is the address Tenero keys a token on: "stx", or the contract id
// without any ::asset suffix.
func Address(tokenID string) string {
	addr, _, _ := strings.Cut(tokenID, "::")
	return addr
}

// Price fetches one token's price, retrying within the limits described in
// the package documentation. Errors are *fault.Error; when ctx ends first
// the class is timeout for a deadline and transport for a cancellation.
func (c *Client) Price(ctx context.Context, tokenID string) (Price, error) {
	p := Price{TokenID: tokenID}
	addr := Address(tokenID)
	op := "tenero GET /v1/stacks/tokens/" + addr
	if addr == "" {
		return p, fault.Errorf(pacer.ClassNotFound, op, "empty token id")
	}
	target := c.conn.BaseURL + "/v1/stacks/tokens/" + url.PathEscape(addr)

	var rateLimited, failed int
	for attempt := 1; ; attempt++ {
		out := c.attempt(ctx, target)
		if out.responded {
			p.Quota = out.quota
		}
		if out.err != nil && out.rayID != "" {
			out.err = &RayError{RayID: out.rayID, Err: out.err}
		}
		if out.err == nil {
			p.PriceUSD, p.Decimals = out.token.priceUSD, out.token.decimals
			return p, nil
		}
		if ctx.Err() != nil {
			return p, contextError(op, ctx.Err(), out.err)
		}
		delay, again := nextDelay(out, &rateLimited, &failed)
		if !again {
			return p, &fault.Error{Class: out.class, Op: op, Err: out.err}
		}
		c.conn.Log.Debug("tenero.retry",
			zap.String("token", tokenID),
			zap.Int("attempt", attempt),
			zap.Int("status", out.status),
			zap.String("class", string(out.class)),
			zap.Duration("delay", delay),
			zap.Error(out.err))
		if err := c.conn.Sleep(ctx, delay); err != nil {
			return p, contextError(op, err, out.err)
		}
	}
}

// retryKind says which retry budget a failed attempt draws on.
type retryKind int

const (
	noRetry retryKind = iota
	retryRateLimit
	retryFailure
)

// RayError is the cause inside a *fault.Error for a failure Tenero
// answered with a cf-ray header: the id its support traces the request by
// (Tenero is behind Cloudflare). Its text ends with the id, so the one log
// line that reports the failure carries it.
type RayError struct {
	RayID string
	Err   error
}

func (e *RayError) Error() string { return e.Err.Error() + " (cf-ray " + e.RayID + ")" }

func (e *RayError) Unwrap() error { return e.Err }

// RayID returns the cf-ray of the answer that err reports, or "" when the
// answer had none or no answer came.
func RayID(err error) string {
	if re, ok := errors.AsType[*RayError](err); ok {
		return re.RayID
	}
	return ""
}

// outcome is what one attempt produced.
type outcome struct {
	token     decodedToken
	responded bool
	// rayID is the answer's cf-ray header, when it had a plausible one.
	rayID  string
	status int
	quota  Quota
	class  pacer.ErrorClass
	retry  retryKind
	err    error
}

// nextDelay decides whether a failed attempt is worth another and how long
// to wait first, spending the matching budget.
func nextDelay(out outcome, rateLimited, failed *int) (time.Duration, bool) {
	// A spent quota will not come back within this call: retrying would only
	// burn requests that the neighbours on our egress IP share.
	if _, spent := out.quota.Exhausted(); out.responded && spent {
		return 0, false
	}
	switch out.retry {
	case retryRateLimit:
		if *rateLimited >= len(rateLimitDelays) {
			return 0, false
		}
		d := rateLimitDelays[*rateLimited]
		*rateLimited++
		if ra := out.quota.RetryAfter; ra > 0 {
			d = min(ra, maxRetryAfter)
		}
		return d, true
	case retryFailure:
		if *failed >= len(failureDelays) {
			return 0, false
		}
		d := failureDelays[*failed]
		*failed++
		return d, true
	default:
		return 0, false
	}
}

// attempt sends one request under its own timeout and classifies the answer.
func (c *Client) attempt(ctx context.Context, target string) outcome {
	actx, cancel := context.WithTimeout(ctx, c.conn.AttemptTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodGet, target, nil)
	if err != nil {
		// Only a malformed BaseURL gets here, and no retry will mend it.
		return outcome{class: pacer.ClassPermanent, err: fmt.Errorf("build request: %w", err)}
	}
	req.Header.Set("Accept", "application/json")
	if c.conn.APIKey != "" {
		req.Header.Set("x-api-key", c.conn.APIKey)
	}
	resp, err := c.conn.HTTP.Do(req)
	if err != nil {
		return c.scrub(networkFailure(actx, err, c.conn.AttemptTimeout))
	}
	defer resp.Body.Close()

	out := outcome{responded: true, status: resp.StatusCode, quota: ParseQuota(resp.Header),
		rayID: upstream.TraceID(resp.Header, upstream.HeaderCFRay)}
	if c.conn.APIKey != "" && strings.Contains(out.rayID, c.conn.APIKey) {
		out.rayID = "" // an upstream echoing the key into a header must not get it into a log
	}
	ok := resp.StatusCode >= 200 && resp.StatusCode <= 299
	limit := int64(maxErrorBody)
	if ok {
		limit = maxBody
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil && ok {
		failure := networkFailure(actx, err, c.conn.AttemptTimeout)
		out.class, out.retry, out.err = failure.class, failure.retry, failure.err
		return c.scrub(out)
	}
	if ok && len(body) > maxBody {
		out.class, out.err = pacer.ClassParseError, fmt.Errorf("body exceeds %d bytes", maxBody)
		return out
	}
	if c.conn.APIKey != "" {
		// An upstream that echoes the key must not reach a message: redact it
		// before any snippet is cut, or a cut through the key would leave a
		// piece that scrub no longer recognises.
		body = bytes.ReplaceAll(body, []byte(c.conn.APIKey), []byte("[redacted]"))
	}
	if ok {
		out.token, err = decodeToken(body)
		if bodyErr, wrapped := errors.AsType[*bodyStatusError](err); wrapped {
			// The HTTP status said OK, so there is no telling whether a
			// retry would help: classify, but leave it to the next tick.
			out.class, _ = classifyStatus(bodyErr.code)
			out.err = err
		} else if err != nil {
			out.class, out.err = pacer.ClassParseError, err
		}
		return c.scrub(out)
	}

	out.err = statusError(resp.StatusCode, body)
	out.class, out.retry = classifyStatus(resp.StatusCode)
	return c.scrub(out)
}

// classifyStatus maps a failing status to its class and retry budget.
func classifyStatus(code int) (pacer.ErrorClass, retryKind) {
	switch {
	case code == http.StatusNotFound:
		return pacer.ClassNotFound, noRetry
	case code == http.StatusTooManyRequests:
		return pacer.ClassRateLimit, retryRateLimit
	case code == http.StatusRequestTimeout:
		return pacer.ClassTimeout, retryFailure
	case code >= 500:
		return pacer.ClassServerError, retryFailure
	default:
		// 401/403 (a bad or revoked key), 410, a redirect, any other 4xx:
		// the same request will get the same answer until someone acts.
		return pacer.ClassPermanent, noRetry
	}
}

// networkFailure classifies an error from sending a request or reading its
// body. An unreachable upstream counts as server_error rather than transport
// because it is Tenero's trouble, recovered by the next tick, not ours.
func networkFailure(actx context.Context, err error, timeout time.Duration) outcome {
	var netErr net.Error
	if errors.Is(actx.Err(), context.DeadlineExceeded) || (errors.As(err, &netErr) && netErr.Timeout()) {
		return outcome{class: pacer.ClassTimeout, retry: retryFailure, err: fmt.Errorf("no answer within %v: %w", timeout, err)}
	}
	return outcome{class: pacer.ClassServerError, retry: retryFailure, err: fmt.Errorf("upstream unreachable: %w", err)}
}

// statusError describes a non-2xx answer, with the body's message when it
// has one so that "Token not found" or "Invalid API key" reach the log.
func statusError(code int, body []byte) error {
	msg := ""
	if env, err := decodeEnvelope(body); err == nil {
		msg = messageOf(env.Message)
	}
	if msg == "" {
		return fmt.Errorf("status %d", code)
	}
	return fmt.Errorf("status %d: %s", code, msg)
}

// scrub guarantees the API key never leaves in an error: an upstream that
// echoes request headers back would otherwise put it into our logs. The chain
// is given up only in that case.
func (c *Client) scrub(out outcome) outcome {
	if c.conn.APIKey != "" && out.err != nil && strings.Contains(out.err.Error(), c.conn.APIKey) {
		out.err = errors.New(strings.ReplaceAll(out.err.Error(), c.conn.APIKey, "[redacted]"))
	}
	return out
}

// contextError reports that ctx ended the call, keeping the last attempt's
// error for the log. A deadline is the caller's timeout; a cancellation is
// nobody's upstream trouble.
func contextError(op string, ctxErr, last error) *fault.Error {
	class := pacer.ClassTransport
	if errors.Is(ctxErr, context.DeadlineExceeded) {
		class = pacer.ClassTimeout
	}
	return &fault.Error{Class: class, Op: op, Err: fmt.Errorf("%w (last attempt: %w)", ctxErr, last)}
}
