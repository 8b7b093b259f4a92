package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
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

// Page is one page of the registry as a read found it: its URL, its
// ETag, the agents it listed and its next link. The pages of the last read
// applied are kept, so that a page answering 304 to its ETag stands for
// what it listed then.
type Page struct {
	URL    string  `json:"url"`
	ETag   string  `json:"etag,omitempty"`
	Agents []Agent `json:"agents"`
	Next   string  `json:"next,omitempty"`
}

// Read is one complete read of the registry.
type Read struct {
	// NotModified: every page answered 304 to its ETag; Agents is then
	// what the pages listed before.
	NotModified bool
	Agents      []Agent
	// Pages are the pages read, to keep for the next read.
	Pages []Page
	// Requests counts the pages asked for (304s included).
	Requests int
}

// Read reads every page from the configured URL, following next, each
// with If-None-Match when the previous read (prev) had its ETag: a 304
// stands for what that page listed then, and changes on any page are read
// (revalidating only the first would read a changed later page only once
// the first changed too). A page that cannot be read, a record that is bad
// (named by its page and index), a next link off the configured origin or
// more records than MaxRecords fail the whole read: nothing of it is
// applied. progress is told the pages read so far after each page.
func (c *Client) Read(ctx context.Context, prev []Page, progress func(pages int)) (Read, error) {
	conn := c.Conn.WithDefaults("")
	origin, err := url.Parse(conn.BaseURL)
	if err != nil || !origin.IsAbs() {
		return Read{}, classified(pacer.ClassPermanent, errors.New("registry: the configured URL is not absolute"))
	}
	known := make(map[string]Page, len(prev))
	for _, p := range prev {
		known[p.URL] = p
	}
	out := Read{NotModified: true}
	next := conn.BaseURL
	seen := map[string]bool{}
	for next != "" {
		n := len(out.Pages) + 1
		if n > MaxPages {
			return Read{}, classified(pacer.ClassParseError, fmt.Errorf("registry: more than %d pages", MaxPages))
		}
		if seen[next] {
			return Read{}, classified(pacer.ClassParseError, errors.New("registry: a page's next names a page already read"))
		}
		seen[next] = true
		old, ok := known[next]
		etag := ""
		if ok {
			etag = old.ETag
		}
		got, err := c.get(ctx, conn, next, etag, MaxRecords-len(out.Agents))
		out.Requests += got.requests
		if err != nil {
			return Read{}, pageError(n, err)
		}
		page := Page{URL: next, ETag: got.etag, Agents: got.agents}
		if got.notModified {
			page = old
		} else {
			out.NotModified = false
			if got.next != nil {
				page.Next = *got.next
			}
		}
		out.Pages = append(out.Pages, page)
		out.Agents = append(out.Agents, page.Agents...)
		if len(out.Agents) > MaxRecords {
			return Read{}, classified(pacer.ClassParseError, fmt.Errorf("registry: more than %d agents", MaxRecords))
		}
		if next, err = sameOrigin(origin, page.Next); err != nil {
			return Read{}, classified(pacer.ClassParseError, fmt.Errorf("registry page %d: %w", n, err))
		}
		if progress != nil {
			progress(n)
		}
	}
	if err := CheckAgents(out.Agents, nil); err != nil {
		return Read{}, classified(pacer.ClassParseError, fmt.Errorf("registry: %w", err))
	}
	return out, nil
}

// pageError names the page a record error came from; other errors are
// classified already.
func pageError(n int, err error) error {
	var re *RecordError
	if errors.As(err, &re) {
		return classified(pacer.ClassParseError, fmt.Errorf("registry page %d: %w", n, err))
	}
	return err
}

// sameOrigin checks a page's next link: an absolute URL of the configured
// URL's scheme, host and port, without credentials. The registry's answer
// decides which page comes next, never which host pacer asks: a next link
// to loopback, the operator's listener or a metadata address, or from
// https down to http, is refused. Empty is the last page.
func sameOrigin(origin *url.URL, next string) (string, error) {
	if next == "" {
		return "", nil
	}
	u, err := url.Parse(next)
	switch {
	case err != nil || !u.IsAbs() || u.Opaque != "":
		return "", errors.New("next is not an absolute URL")
	case u.User != nil:
		return "", errors.New("next carries credentials")
	case !strings.EqualFold(u.Scheme, origin.Scheme) || !strings.EqualFold(u.Hostname(), origin.Hostname()) ||
		portOf(u) != portOf(origin):
		return "", fmt.Errorf("next leaves %s://%s (the configured URL's scheme, host and port)", origin.Scheme, origin.Host)
	}
	return u.String(), nil
}

// portOf is u's port, the scheme's default when it names none.
func portOf(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
		return "443"
	case "http":
		return "80"
	}
	return ""
}

// answer is one page as the registry answered it.
type answer struct {
	notModified bool
	etag        string
	agents      []Agent
	next        *string
	requests    int
}

// get fetches one page, retrying a 429, a server error or a transport
// failure with back-off (Retry-After when the registry gives one). A page
// may list at most limit records.
func (c *Client) get(ctx context.Context, conn upstream.Conn, u, etag string, limit int) (answer, error) {
	backoff := time.Second
	for attempt := 1; ; attempt++ {
		got, wait, err := c.attempt(ctx, conn, u, etag, limit)
		got.requests = attempt
		if err == nil || attempt == attempts || wait < 0 {
			return got, err
		}
		if wait == 0 {
			wait = backoff
			backoff *= 2
		}
		if serr := conn.Sleep(ctx, wait); serr != nil {
			return got, classified(pacer.ClassTimeout, serr)
		}
	}
}

// attempt is one request; wait < 0 means do not retry.
func (c *Client) attempt(ctx context.Context, conn upstream.Conn, u, etag string, limit int) (answer, time.Duration, error) {
	if c.Limiter != nil {
		if err := c.Limiter.Wait(ctx); err != nil {
			return answer{}, -1, classified(pacer.ClassRateLimit, fmt.Errorf("registry budget: %w", err))
		}
	}
	actx, cancel := context.WithTimeout(ctx, conn.AttemptTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodGet, u, nil)
	if err != nil {
		return answer{}, -1, classified(pacer.ClassPermanent, errors.New("registry: bad URL"))
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
		return answer{}, 0, classified(pacer.ClassTransport, errors.New("registry unreachable"))
	}
	defer resp.Body.Close()
	q := hiro.ParseQuota(resp.Header)
	q.StatusCode = resp.StatusCode
	if c.Limiter != nil {
		c.Limiter.Observe(ctx, q)
	}
	switch {
	case resp.StatusCode == http.StatusNotModified && etag != "":
		return answer{notModified: true, etag: etag}, 0, nil
	case resp.StatusCode == http.StatusTooManyRequests:
		wait := time.Duration(0)
		if q.RetryAfter != nil {
			wait = *q.RetryAfter
		}
		return answer{}, wait, classified(pacer.ClassRateLimit, errors.New("registry answered 429"))
	case resp.StatusCode >= 500:
		return answer{}, 0, classified(pacer.ClassServerError, fmt.Errorf("registry answered %d", resp.StatusCode))
	case resp.StatusCode == http.StatusNotFound:
		return answer{}, -1, classified(pacer.ClassNotFound, errors.New("registry answered 404"))
	case resp.StatusCode != http.StatusOK:
		return answer{}, -1, classified(pacer.ClassPermanent, fmt.Errorf("registry answered %d", resp.StatusCode))
	}
	body := &bodyReader{r: &io.LimitedReader{R: resp.Body, N: maxPageBytes + 1}}
	agents, next, err := decodePage(body, limit)
	switch {
	case body.err != nil:
		return answer{}, 0, classified(pacer.ClassTransport, errors.New("registry: body cut short"))
	case body.r.N <= 0:
		return answer{}, -1, classified(pacer.ClassParseError, errors.New("registry: page larger than 32 MiB"))
	case err != nil:
		return answer{}, -1, err
	}
	return answer{etag: resp.Header.Get("ETag"), agents: agents, next: next}, 0, nil
}

// bodyReader keeps the first read error that is not the end of the body:
// a connection cut mid-page is the transport's, not the page's.
type bodyReader struct {
	r   *io.LimitedReader
	err error
}

func (b *bodyReader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) && b.err == nil {
		b.err = err
	}
	return n, err
}

// decodePage reads {"agents": [...], "next": "<url>"|null} as a stream,
// each record checked as it arrives: a page of more than limit records
// fails at the first one past it, before the rest is decoded. A bad
// record is named by its index on the page.
func decodePage(r io.Reader, limit int) (agents []Agent, next *string, err error) {
	shape := func() error {
		return classified(pacer.ClassParseError, errors.New(`registry page: not {"agents": [...], "next": …}`))
	}
	dec := json.NewDecoder(r)
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, nil, shape()
	}
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		key, ok := t.(string)
		if err != nil || !ok || seen[key] {
			return nil, nil, shape()
		}
		seen[key] = true
		switch key {
		case "agents":
			if t, err := dec.Token(); err != nil || t != json.Delim('[') {
				return nil, nil, shape()
			}
			agents = []Agent{}
			for i := 0; dec.More(); i++ {
				if i >= limit {
					return nil, nil, classified(pacer.ClassParseError, fmt.Errorf("registry: more than %d agents", MaxRecords))
				}
				var obj map[string]json.RawMessage
				if err := dec.Decode(&obj); err != nil || obj == nil {
					return nil, nil, &RecordError{Index: i, Msg: "not a JSON object"}
				}
				a, err := agentFromJSON(obj, true)
				if err != nil {
					return nil, nil, position(err, 0, i)
				}
				agents = append(agents, a)
			}
			if _, err := dec.Token(); err != nil {
				return nil, nil, shape()
			}
		case "next":
			if err := dec.Decode(&next); err != nil {
				return nil, nil, shape()
			}
		default:
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return nil, nil, shape()
			}
		}
	}
	if _, err := dec.Token(); err != nil || agents == nil {
		return nil, nil, shape()
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, nil, shape() // something after the object
	}
	return agents, next, nil
}

func classified(class pacer.ErrorClass, err error) error {
	return &fault.Error{Class: class, Op: "registry GET", Err: err}
}
