package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/fault"
	"github.com/pacer-dev/pacer/internal/hiro"
	"github.com/pacer-dev/pacer/internal/upstream"
)

// The registry's pages (SPEC §12): GET <url> →
// {"agents":[{stxAddress, btcAddress, displayName, erc8004AgentId,
// claimStatus}], "next": "<absolute URL>"|null}.
const (
	// MaxPages bounds one read: a registry that pages forever is an error.
	MaxPages = 1000
	// maxPageBytes bounds one page's body.
	maxPageBytes = 32 << 20
	// attempts of one page before the read fails (429, 5xx, transport).
	attempts = 3
)

// Client reads the registry as one more rate-limited upstream: its own
// budget (Limiter, fed by each response's rate-limit headers), back-off
// on a 429 or a server error, If-None-Match with the last read's ETag.
type Client struct {
	Conn    upstream.Conn
	Limiter hiro.Limiter
}

// Read is one complete read of the registry.
type Read struct {
	// NotModified: the first page answered 304 to the ETag given; Agents
	// is then empty and the registry unchanged.
	NotModified bool
	Agents      []Agent
	// ETag is the first page's, to send next time.
	ETag  string
	Pages int
}

type page struct {
	Agents []json.RawMessage `json:"agents"`
	Next   *string           `json:"next"`
}

// Read reads every page from the configured URL, following next. A page
// that cannot be read, or a record that is bad (named by its page and
// index), fails the whole read: nothing of it is applied.
func (c *Client) Read(ctx context.Context, etag string) (Read, error) {
	conn := c.Conn.WithDefaults("")
	var out Read
	next := conn.BaseURL
	seen := map[string]bool{}
	for next != "" {
		if out.Pages >= MaxPages {
			return Read{}, classified(pacer.ClassParseError, fmt.Errorf("registry: more than %d pages", MaxPages))
		}
		if seen[next] {
			return Read{}, classified(pacer.ClassParseError, errors.New("registry: a page's next names a page already read"))
		}
		seen[next] = true
		ifNone := ""
		if out.Pages == 0 {
			ifNone = etag
		}
		body, tag, status, err := c.get(ctx, conn, next, ifNone)
		if err != nil {
			return Read{}, err
		}
		if status == http.StatusNotModified {
			return Read{NotModified: true, ETag: etag, Pages: 1}, nil
		}
		if out.Pages == 0 {
			out.ETag = tag
		}
		out.Pages++
		var p page
		if err := json.Unmarshal(body, &p); err != nil || p.Agents == nil {
			return Read{}, classified(pacer.ClassParseError, fmt.Errorf("registry page %d: not {\"agents\": [...], \"next\": …}", out.Pages))
		}
		agents, err := DecodeAgents(p.Agents, true)
		if err != nil {
			return Read{}, classified(pacer.ClassParseError, fmt.Errorf("registry page %d: %w", out.Pages, err))
		}
		out.Agents = append(out.Agents, agents...)
		if len(out.Agents) > MaxRecords {
			return Read{}, classified(pacer.ClassParseError, fmt.Errorf("registry: more than %d agents", MaxRecords))
		}
		next = ""
		if p.Next != nil && *p.Next != "" {
			u, err := url.Parse(*p.Next)
			if err != nil || !u.IsAbs() || (u.Scheme != "http" && u.Scheme != "https") {
				return Read{}, classified(pacer.ClassParseError, fmt.Errorf("registry page %d: next is not an absolute URL", out.Pages))
			}
			next = u.String()
		}
	}
	if err := CheckAgents(out.Agents, nil); err != nil {
		return Read{}, classified(pacer.ClassParseError, fmt.Errorf("registry: %w", err))
	}
	return out, nil
}

// get fetches one page, retrying a 429, a server error or a transport
// failure with back-off (Retry-After when the registry gives one).
func (c *Client) get(ctx context.Context, conn upstream.Conn, u, etag string) (body []byte, tag string, status int, err error) {
	backoff := time.Second
	for attempt := 1; ; attempt++ {
		body, tag, status, wait, err := c.attempt(ctx, conn, u, etag)
		if err == nil || attempt == attempts || wait < 0 {
			return body, tag, status, err
		}
		if wait == 0 {
			wait = backoff
			backoff *= 2
		}
		if serr := conn.Sleep(ctx, wait); serr != nil {
			return nil, "", 0, classified(pacer.ClassTimeout, serr)
		}
	}
}

// attempt is one request; wait < 0 means do not retry.
func (c *Client) attempt(ctx context.Context, conn upstream.Conn, u, etag string) ([]byte, string, int, time.Duration, error) {
	if c.Limiter != nil {
		if err := c.Limiter.Wait(ctx); err != nil {
			return nil, "", 0, -1, classified(pacer.ClassRateLimit, fmt.Errorf("registry budget: %w", err))
		}
	}
	actx, cancel := context.WithTimeout(ctx, conn.AttemptTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodGet, u, nil)
	if err != nil {
		return nil, "", 0, -1, classified(pacer.ClassPermanent, errors.New("registry: bad URL"))
	}
	req.Header.Set("Accept", "application/json")
	if etag != "" {
		req.Header.Set("If-None-Match", etag)
	}
	if conn.APIKey != "" {
		req.Header.Set("x-api-key", conn.APIKey)
	}
	resp, err := conn.HTTP.Do(req)
	if err != nil {
		return nil, "", 0, 0, classified(pacer.ClassTransport, errors.New("registry unreachable"))
	}
	defer resp.Body.Close()
	q := hiro.ParseQuota(resp.Header)
	q.StatusCode = resp.StatusCode
	if c.Limiter != nil {
		c.Limiter.Observe(ctx, q)
	}
	switch {
	case resp.StatusCode == http.StatusNotModified:
		return nil, resp.Header.Get("ETag"), resp.StatusCode, 0, nil
	case resp.StatusCode == http.StatusTooManyRequests:
		wait := time.Duration(0)
		if q.RetryAfter != nil {
			wait = *q.RetryAfter
		}
		return nil, "", 0, wait, classified(pacer.ClassRateLimit, errors.New("registry answered 429"))
	case resp.StatusCode >= 500:
		return nil, "", 0, 0, classified(pacer.ClassServerError, fmt.Errorf("registry answered %d", resp.StatusCode))
	case resp.StatusCode == http.StatusNotFound:
		return nil, "", 0, -1, classified(pacer.ClassNotFound, errors.New("registry answered 404"))
	case resp.StatusCode != http.StatusOK:
		return nil, "", 0, -1, classified(pacer.ClassPermanent, fmt.Errorf("registry answered %d", resp.StatusCode))
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxPageBytes+1))
	if err != nil {
		return nil, "", 0, 0, classified(pacer.ClassTransport, errors.New("registry: body cut short"))
	}
	if len(body) > maxPageBytes {
		return nil, "", 0, -1, classified(pacer.ClassParseError, errors.New("registry: page larger than 32 MiB"))
	}
	return body, resp.Header.Get("ETag"), resp.StatusCode, 0, nil
}

func classified(class pacer.ErrorClass, err error) error {
	return &fault.Error{Class: class, Op: "registry GET", Err: err}
}
