package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// MaxResponseHeaderBytes bounds a receiver's response headers; a longer
// answer is a failed attempt. The body is never read.
const MaxResponseHeaderBytes = 16 << 10

// AttemptTimeout bounds one delivery attempt, connection to last header
// (SPEC §10.3).
const AttemptTimeout = 10 * time.Second

// Result is what became of one attempt.
type Result string

const (
	// Delivered means the endpoint answered 2xx.
	Delivered Result = "delivered"
	// Gone means the endpoint answered 410; its subscriber is disabled.
	Gone Result = "gone"
	// HTTPError means any other status, redirects included (never followed).
	HTTPError Result = "http_error"
	// Timeout means no complete answer within the attempt timeout.
	Timeout Result = "timeout"
	// Network means the connection failed (refused, reset, DNS, TLS).
	Network Result = "network"
)

// Results lists every Result, the values of the metrics' outcome label.
var Results = []Result{Delivered, Gone, HTTPError, Timeout, Network}

// Outcome is one attempt as pacer records it. Error is short and safe to
// store and log: it never holds the URL, a header or a body.
type Outcome struct {
	Result Result
	// Status is the HTTP status, 0 when there was no answer.
	Status int
	Error  string
	// RetryAfter is what a 429 or 503 asked for (0 when absent).
	RetryAfter time.Duration
	Took       time.Duration
}

// Message is one signed POST.
type Message struct {
	ID     string // webhook-id
	URL    string
	Secret string // "whsec_…"
	// PreviousSecret is a rotated secret still valid (SPEC §10.2): while
	// it is set the message carries a signature by each, so a receiver
	// that knows either verifies it.
	PreviousSecret string
	Body           []byte
}

// Sender POSTs signed messages.
type Sender struct {
	client  *http.Client
	timeout time.Duration
	now     func() time.Time
}

// SenderOptions configure NewSender; zero values take the defaults.
type SenderOptions struct {
	// Timeout bounds each attempt (AttemptTimeout).
	Timeout time.Duration
	// Transport carries the requests (a fresh pooled transport that
	// connects through Dial, never through a proxy: the guard must see the
	// destination itself).
	Transport http.RoundTripper
	// AllowPrivate lets deliveries reach loopback, private and link-local
	// addresses (PACER_WEBHOOK_ALLOW_PRIVATE=1, for development).
	AllowPrivate bool
	// Dial connects the default transport; nil is Guard with AllowPrivate.
	Dial ConnectFunc
	// Now stamps webhook-timestamp (time.Now). It is the wall clock on
	// purpose: receivers compare it with theirs to refuse replays.
	Now func() time.Time
}

// NewSender builds a sender that never follows redirects: a 3xx is a
// failed attempt, so a delivery (and its signature) only ever reaches the
// URL its subscriber registered.
func NewSender(o SenderOptions) *Sender {
	if o.Timeout <= 0 {
		o.Timeout = AttemptTimeout
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Transport == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.Proxy = nil
		t.DialContext = o.Dial
		if t.DialContext == nil {
			t.DialContext = Guard(GuardOptions{AllowPrivate: o.AllowPrivate})
		}
		t.MaxIdleConnsPerHost = 4
		t.ResponseHeaderTimeout = o.Timeout
		// A receiver is anyone on the internet: its headers must not cost
		// pacer 10 MB (Go's default) per attempt in flight.
		t.MaxResponseHeaderBytes = MaxResponseHeaderBytes
		o.Transport = t
	}
	return &Sender{
		client: &http.Client{
			Transport: o.Transport,
			CheckRedirect: func(*http.Request, []*http.Request) error {
				return http.ErrUseLastResponse
			},
		},
		timeout: o.Timeout,
		now:     o.Now,
	}
}

// Timeout is the per-attempt bound the sender applies.
func (s *Sender) Timeout() time.Duration { return s.timeout }

// Sign returns the Standard Webhooks headers of a message signed at ts.
// With a previous secret, webhook-signature holds both signatures,
// space-separated, the current one first, as Standard Webhooks describes
// for a rotation.
func Sign(m Message, ts time.Time) (http.Header, error) {
	sig, err := signWith(m.Secret, m, ts)
	if err != nil {
		return nil, err
	}
	if m.PreviousSecret != "" && m.PreviousSecret != m.Secret {
		old, err := signWith(m.PreviousSecret, m, ts)
		if err != nil {
			return nil, err
		}
		sig += " " + old
	}
	h := http.Header{}
	h.Set(standardwebhooks.HeaderWebhookID, m.ID)
	h.Set(standardwebhooks.HeaderWebhookTimestamp, strconv.FormatInt(ts.Unix(), 10))
	h.Set(standardwebhooks.HeaderWebhookSignature, sig)
	return h, nil
}

// signWith is one "v1,<base64>" signature of m by secret.
func signWith(secret string, m Message, ts time.Time) (string, error) {
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		// The library's error quotes no secret, but say less anyway.
		return "", errors.New("signing secret is not whsec_ + base64")
	}
	sig, err := wh.Sign(m.ID, ts, m.Body)
	if err != nil {
		return "", errors.New("signing failed")
	}
	return sig, nil
}

// Send makes one attempt. It never returns early for anything but ctx: an
// attempt ends with an answer, a failure, or the timeout. The response
// body is not read: a 2xx status is success however slowly the body would
// follow, so a slow receiver holds nothing once it has answered.
func (s *Sender) Send(ctx context.Context, m Message) Outcome {
	start := time.Now()
	out := s.send(ctx, m)
	out.Took = time.Since(start)
	return out
}

func (s *Sender) send(ctx context.Context, m Message) Outcome {
	h, err := Sign(m, s.now())
	if err != nil {
		return Outcome{Result: Network, Error: err.Error()}
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.URL, bytes.NewReader(m.Body))
	if err != nil {
		return Outcome{Result: Network, Error: "bad request URL"}
	}
	req.Header = h
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "pacer-webhooks/1")
	req.ContentLength = int64(len(m.Body))
	resp, err := s.client.Do(req)
	if err != nil {
		return classify(ctx, err)
	}
	_ = resp.Body.Close()
	out := Outcome{Status: resp.StatusCode}
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		out.Result = Delivered
	case resp.StatusCode == http.StatusGone:
		out.Result, out.Error = Gone, "HTTP 410 Gone"
	default:
		out.Result, out.Error = HTTPError, fmt.Sprintf("HTTP %d", resp.StatusCode)
		if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
			out.RetryAfter = ParseRetryAfter(resp.Header.Get("Retry-After"), s.now())
		}
	}
	return out
}

// classify turns a client error into a short, URL-free description.
func classify(ctx context.Context, err error) Outcome {
	var netErr net.Error
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, os.ErrDeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return Outcome{Result: Timeout, Error: "no answer within the attempt timeout"}
	case errors.Is(err, context.Canceled):
		return Outcome{Result: Network, Error: "attempt cancelled"}
	}
	var dnsErr *net.DNSError
	var opErr *net.OpError
	switch {
	case errors.Is(err, ErrForbiddenDestination):
		return Outcome{Result: Network, Error: "destination refused: not a public address"}
	case errors.As(err, &dnsErr):
		return Outcome{Result: Network, Error: "host name does not resolve"}
	case errors.As(err, &opErr) && opErr.Op == "dial":
		return Outcome{Result: Network, Error: "connection refused or unreachable"}
	}
	return Outcome{Result: Network, Error: "connection failed before an answer"}
}
