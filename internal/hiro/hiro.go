// Package hiro is a typed client for the parts of the Hiro Stacks API that
// pacer reads: an address's recent transactions and one transaction with its
// events. It owns the upstream's quirks (timeouts, retries, rate-limit headers,
// deprecation warnings) and reports every failure as a classified *pacer.Error.
package hiro

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/pacer-dev/pacer"
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
// never succeed (a limit out of range, an empty id); no request is sent.
var ErrInvalidArgument = errors.New("invalid argument")

// Limiter paces calls against a budget shared by everything that calls Hiro.
// Wait blocks until one request may be sent.
type Limiter interface {
	Wait(ctx context.Context) error
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
	// Limiter is asked before every attempt, retries included. Nil means none.
	Limiter Limiter
	// OnQuota, when set, sees the rate-limit headers of every response,
	// failed ones and retried ones included, so a shared budget can follow
	// what Hiro reports.
	OnQuota func(Quota)
}

// Client calls Hiro. It is safe for concurrent use.
type Client struct {
	conn    upstream.Conn
	limiter Limiter
	onQuota func(Quota)

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
		onQuota: cfg.OnQuota,
	}
}

// AddressTransactions returns the newest transactions of a principal (an
// address or a contract id). limit must be within 1..MaxLimit.
func (c *Client) AddressTransactions(ctx context.Context, principal string, limit int) (Page, error) {
	path := "/extended/v1/address/" + url.PathEscape(principal) + "/transactions"
	op := "hiro GET " + path
	if principal == "" {
		return Page{}, &pacer.Error{Class: pacer.ClassPermanent, Op: op, Err: fmt.Errorf("%w: empty principal", ErrInvalidArgument)}
	}
	if limit < 1 || limit > MaxLimit {
		return Page{}, &pacer.Error{Class: pacer.ClassPermanent, Op: op, Err: fmt.Errorf("%w: limit %d outside 1..%d", ErrInvalidArgument, limit, MaxLimit)}
	}
	body, quota, err := c.get(ctx, op, path+"?limit="+strconv.Itoa(limit))
	if err != nil {
		return Page{Quota: quota}, err
	}
	var page Page
	if err := json.Unmarshal(body, &page); err != nil {
		return Page{Quota: quota}, &pacer.Error{Class: pacer.ClassParseError, Op: op, Err: err}
	}
	page.Quota = quota
	return page, nil
}

// Tx returns one transaction with its events and the body as Hiro sent it.
func (c *Client) Tx(ctx context.Context, txid string) (Tx, error) {
	path := "/extended/v1/tx/" + url.PathEscape(txid)
	op := "hiro GET " + path
	if txid == "" {
		return Tx{}, &pacer.Error{Class: pacer.ClassPermanent, Op: op, Err: fmt.Errorf("%w: empty txid", ErrInvalidArgument)}
	}
	body, quota, err := c.get(ctx, op, path)
	if err != nil {
		return Tx{Quota: quota}, err
	}
	var tx Tx
	if err := json.Unmarshal(body, &tx); err != nil {
		return Tx{Quota: quota}, &pacer.Error{Class: pacer.ClassParseError, Op: op, Err: err}
	}
	if tx.TxID == "" {
		// A body like {} or null decodes cleanly but describes no transaction.
		return Tx{Quota: quota}, &pacer.Error{Class: pacer.ClassParseError, Op: op, Err: errors.New("response has no tx_id")}
	}
	tx.Raw = body
	tx.Quota = quota
	return tx, nil
}

// StatusError is the cause inside a *pacer.Error for a non-2xx answer, so a
// caller can log the status and see the quota of the last response.
type StatusError struct {
	StatusCode int
	// Detail explains the status and quotes the start of the body.
	Detail string
	Quota  Quota
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("status %d: %s", e.StatusCode, e.Detail)
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

// get sends GET path with the retry policy and returns a 2xx body. The quota
// returned is that of the last response seen, even on failure.
func (c *Client) get(ctx context.Context, op, pathAndQuery string) ([]byte, Quota, error) {
	var (
		quota     Quota
		limited   int // 429 answers so far
		failures  int // 5xx, network errors and timeouts so far
		lastClass pacer.ErrorClass
		lastErr   error
	)
	for {
		if err := c.wait(ctx, op); err != nil {
			return nil, quota, err
		}
		res := c.attempt(ctx, pathAndQuery)
		if ctx.Err() != nil {
			// The caller gave up; its deadline is not Hiro's fault.
			return nil, quota, contextError(ctx, op)
		}
		if res.header != nil {
			quota = ParseQuota(res.header)
			c.observe(op, res.header, quota)
		}

		var delay time.Duration
		switch {
		case res.tooLarge:
			// The same answer would come back: not worth a retry.
			return nil, quota, &pacer.Error{Class: pacer.ClassParseError, Op: op, Err: fmt.Errorf("body larger than %d bytes", maxBody)}

		case res.err != nil:
			failures++
			lastClass, lastErr = pacer.ClassServerError, c.redact(res.err)
			if isTimeout(res.err) {
				lastClass = pacer.ClassTimeout
			}
			if failures >= maxFailureAttempts {
				return nil, quota, &pacer.Error{Class: lastClass, Op: op, Err: fmt.Errorf("after %d attempts: %w", failures, lastErr)}
			}
			delay = failureDelays[failures-1]

		case res.status >= 200 && res.status < 300:
			return res.body, quota, nil

		case res.status == http.StatusTooManyRequests:
			limited++
			lastErr = c.statusError(res, quota, "rate limited")
			if quota.MonthExhausted() {
				// Retrying cannot help until the month turns over.
				return nil, quota, &pacer.Error{Class: pacer.ClassRateLimit, Op: op, Err: fmt.Errorf("month quota exhausted: %w", lastErr)}
			}
			if limited >= maxRateLimitAttempts {
				return nil, quota, &pacer.Error{Class: pacer.ClassRateLimit, Op: op, Err: fmt.Errorf("after %d attempts: %w", limited, lastErr)}
			}
			delay = rateLimitDelays[limited-1]
			if quota.RetryAfter != nil {
				delay = min(*quota.RetryAfter, maxRetryAfter)
			}

		case res.status >= 500:
			failures++
			lastClass, lastErr = pacer.ClassServerError, c.statusError(res, quota, "server error")
			if failures >= maxFailureAttempts {
				return nil, quota, &pacer.Error{Class: lastClass, Op: op, Err: fmt.Errorf("after %d attempts: %w", failures, lastErr)}
			}
			delay = failureDelays[failures-1]

		default:
			return nil, quota, c.clientError(op, res, quota)
		}

		c.conn.Log.Debug("hiro.retry",
			zap.String("op", op),
			zap.Int("status", res.status),
			zap.Int("rateLimited", limited),
			zap.Int("failures", failures),
			zap.Duration("delay", delay),
			zap.Error(lastErr))
		if err := c.conn.Sleep(ctx, delay); err != nil {
			return nil, quota, contextError(ctx, op)
		}
	}
}

// clientError classifies a 4xx other than 429; none of them is retried.
func (c *Client) clientError(op string, res response, quota Quota) error {
	switch res.status {
	case http.StatusNotFound:
		return &pacer.Error{Class: pacer.ClassNotFound, Op: op, Err: c.statusError(res, quota, "not found")}
	case http.StatusGone:
		return &pacer.Error{Class: pacer.ClassPermanent, Op: op, Err: c.statusError(res, quota,
			"Hiro has retired this endpoint (410 Gone); pacer must move to its replacement before this call can work again")}
	case http.StatusUnauthorized, http.StatusForbidden:
		return &pacer.Error{Class: pacer.ClassPermanent, Op: op, Err: c.statusError(res, quota,
			"Hiro refused the request; check HIRO_API_KEY")}
	default:
		return &pacer.Error{Class: pacer.ClassPermanent, Op: op, Err: c.statusError(res, quota, "request rejected")}
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
	return &StatusError{StatusCode: res.status, Detail: c.redactString(detail), Quota: quota}
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

// wait asks the shared budget for a slot. A budget that already classifies
// its refusal keeps that class; anything else means the budget said no.
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
	var pe *pacer.Error
	if errors.As(err, &pe) {
		return err
	}
	return &pacer.Error{Class: pacer.ClassRateLimit, Op: op, Err: fmt.Errorf("hiro budget: %w", err)}
}

// observe reports a response's headers to the budget and the logs.
func (c *Client) observe(op string, h http.Header, q Quota) {
	if c.onQuota != nil {
		c.onQuota(q)
	}
	if q.MonthRemaining != nil && q.MonthLimit != nil {
		low := q.MonthLow()
		if low && !c.monthLowLogged.Swap(true) {
			c.conn.Log.Warn("hiro.month_quota_low",
				zap.Int("monthRemaining", *q.MonthRemaining),
				zap.Int("monthLimit", *q.MonthLimit))
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
	return &pacer.Error{Class: class, Op: op, Err: ctx.Err()}
}

func isTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
