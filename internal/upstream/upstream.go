// Package upstream holds what every upstream API client of pacer shares:
// how it reaches the upstream (Conn) and the defaults of that.
package upstream

import (
	"context"
	"net/http"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/pacer-dev/pacer/internal/wait"
)

// DefaultAttemptTimeout bounds one request, body included (SPEC §4.5, §5.8).
const DefaultAttemptTimeout = 8 * time.Second

// Conn is how a client reaches its upstream.
type Conn struct {
	BaseURL string
	// APIKey is sent as x-api-key when set; it never appears in errors or logs.
	APIKey string
	HTTP   *http.Client
	// AttemptTimeout bounds one attempt through its context: HTTP has no
	// timeout of its own.
	AttemptTimeout time.Duration
	// Sleep waits between retries and returns early with ctx's error.
	Sleep func(ctx context.Context, d time.Duration) error
	Log   *zap.Logger
}

// WithDefaults fills what c leaves unset: defaultBaseURL, a client that
// never follows redirects (see NoRedirects), DefaultAttemptTimeout, a real
// timer and a no-op logger. A trailing slash of BaseURL is dropped.
func (c Conn) WithDefaults(defaultBaseURL string) Conn {
	c.BaseURL = strings.TrimRight(c.BaseURL, "/")
	if c.BaseURL == "" {
		c.BaseURL = defaultBaseURL
	}
	c.HTTP = NoRedirects(c.HTTP)
	if c.AttemptTimeout <= 0 {
		c.AttemptTimeout = DefaultAttemptTimeout
	}
	if c.Sleep == nil {
		c.Sleep = wait.Sleep
	}
	if c.Log == nil {
		c.Log = zap.NewNop()
	}
	return c
}

// NoRedirects returns a copy of hc (a new client when hc is nil) that never
// follows a redirect: Go would forward the x-api-key header to whatever host
// the redirect names. The caller sees the 3xx itself. hc is not changed.
func NoRedirects(hc *http.Client) *http.Client {
	c := http.Client{}
	if hc != nil {
		c = *hc
	}
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &c
}
