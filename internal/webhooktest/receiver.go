// Package webhooktest is a webhook receiver for tests: a real HTTP server
// per subscriber that verifies every delivery's signature with the
// standard-webhooks library (not pacer's code), records each arrival by
// webhook-id, and fails on purpose: 5xx, timeouts, slow responses, 429 with
// Retry-After, 410. It is test support only.
package webhooktest

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// Mode is how a receiver misbehaves while it fails.
type Mode string

const (
	// OK answers 204.
	OK Mode = "ok"
	// ServerError answers 500.
	ServerError Mode = "5xx"
	// Timeout never answers: it holds the request until the sender gives up.
	Timeout Mode = "timeout"
	// SlowBody answers 200, but a byte at a time over Hold, so that the
	// answer is never complete within the sender's timeout.
	SlowBody Mode = "slow"
	// TooManyRequests answers 429 with Retry-After.
	TooManyRequests Mode = "429"
	// Gone answers 410 (it never recovers).
	Gone Mode = "410"
	// Down hangs up without a word, like a host whose service is not
	// listening; the receiver still sees each attempt arrive.
	Down Mode = "down"
)

// Behaviour is what a receiver does.
type Behaviour struct {
	Mode Mode
	// FailFor ends the misbehaviour that long after the first request:
	// from then on the receiver answers 204. Zero fails for ever.
	FailFor time.Duration
	// RetryAfter is the 429's Retry-After, in whole seconds.
	RetryAfter time.Duration
	// Hold is how long Timeout and SlowBody stall (default 30 s); the
	// sender must give up first.
	Hold time.Duration
}

// Arrival is one request as the receiver saw it.
type Arrival struct {
	ID string
	// At is when the request arrived, End when the receiver was done with
	// it: it answered, or the sender hung up.
	At, End time.Time
	// Status is what the receiver answered (0: nothing complete).
	Status int
	// Acked: a 2xx answer went out whole while the sender was still there.
	Acked bool
	// VerifyErr is the library's verdict on the signature (nil: valid).
	VerifyErr error
	Header    http.Header
	Body      []byte
}

// Receiver is one subscriber's endpoint.
type Receiver struct {
	URL string

	srv *httptest.Server
	b   Behaviour

	mu       sync.Mutex
	secret   string
	first    time.Time
	arrivals []Arrival
}

// New starts a receiver; Close stops it.
func New(b Behaviour) *Receiver {
	if b.Mode == "" {
		b.Mode = OK
	}
	if b.Hold <= 0 {
		b.Hold = 30 * time.Second
	}
	r := &Receiver{b: b}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	r.URL = r.srv.URL + "/hook"
	return r
}

// Close stops the server: its URL then refuses connections.
func (r *Receiver) Close() {
	r.srv.CloseClientConnections()
	r.srv.Close()
}

// SetSecret gives the receiver the secret to verify signatures with (it
// is known only once the subscriber is registered with the URL).
func (r *Receiver) SetSecret(secret string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.secret = secret
}

// Arrivals returns every request so far, in arrival order.
func (r *Receiver) Arrivals() []Arrival {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.arrivals)
}

// ByID groups the arrivals by webhook-id, each in arrival order.
func (r *Receiver) ByID() map[string][]Arrival {
	out := map[string][]Arrival{}
	for _, a := range r.Arrivals() {
		out[a.ID] = append(out[a.ID], a)
	}
	return out
}

// Duplicates lists the webhook-ids that arrived again after they had been
// acknowledged: what a delivery system must never do (retries of attempts
// that were not acknowledged are not duplicates).
func (r *Receiver) Duplicates() []string {
	var dups []string
	for id, as := range r.ByID() {
		for i, a := range as {
			if a.Acked && i < len(as)-1 {
				dups = append(dups, id)
				break
			}
		}
	}
	slices.Sort(dups)
	return dups
}

// Recovered reports whether a receiver that misbehaves for a while
// (FailFor > 0) has had its first request and its misbehaviour has ended.
// One that never fails is recovered; one that fails for ever never is.
func (r *Receiver) Recovered(now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.b.Mode == OK:
		return true
	case r.b.FailFor == 0 || r.first.IsZero():
		return false
	}
	return !now.Before(r.first.Add(r.b.FailFor))
}

func (r *Receiver) failing(now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.first.IsZero() {
		r.first = now
	}
	return r.b.Mode != OK && (r.b.FailFor == 0 || now.Before(r.first.Add(r.b.FailFor)))
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	a := Arrival{At: time.Now(), ID: req.Header.Get(standardwebhooks.HeaderWebhookID), Header: req.Header.Clone()}
	body, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	if err != nil {
		a.VerifyErr = fmt.Errorf("read body: %w", err)
	}
	a.Body = body
	r.mu.Lock()
	secret := r.secret
	r.mu.Unlock()
	if a.VerifyErr == nil {
		a.VerifyErr = Verify(secret, body, req.Header)
	}
	// The arrival is on record before any answer goes out (a sender that
	// got its answer may look at once); its outcome is filled in after.
	r.mu.Lock()
	i := len(r.arrivals)
	r.arrivals = append(r.arrivals, a)
	r.mu.Unlock()
	defer func() {
		if a.End.IsZero() {
			a.End = time.Now()
		}
		r.mu.Lock()
		r.arrivals[i] = a
		r.mu.Unlock()
	}()

	mode := r.b.Mode
	if !r.failing(a.At) {
		mode = OK
	}
	switch mode {
	case OK:
		w.WriteHeader(http.StatusNoContent)
		// The answer is complete once flushed; a sender still connected
		// has it.
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		a.Status, a.Acked = http.StatusNoContent, req.Context().Err() == nil
	case ServerError:
		a.Status = http.StatusInternalServerError
		w.WriteHeader(a.Status)
	case TooManyRequests:
		a.Status = http.StatusTooManyRequests
		w.Header().Set("Retry-After", fmt.Sprint(int(r.b.RetryAfter.Seconds())))
		w.WriteHeader(a.Status)
	case Gone:
		a.Status = http.StatusGone
		w.WriteHeader(a.Status)
	case Timeout:
		select {
		case <-req.Context().Done():
		case <-time.After(r.b.Hold):
		}
	case SlowBody:
		r.dribble(w, &a)
	case Down:
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			_ = conn.Close()
		}
	}
}

// dribble writes a whole 200 answer a byte at a time over Hold, on the raw
// connection, so that even its status line is late. It stops when the
// sender hangs up, which a read on the connection sees at once.
func (r *Receiver) dribble(w http.ResponseWriter, a *Arrival) {
	conn, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	gone := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, buf) // the request is read: only a hang-up ends this
		close(gone)
	}()
	resp := []byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
	step := r.b.Hold / time.Duration(len(resp))
	for _, c := range resp {
		select {
		case <-gone:
			a.End = time.Now()
			return
		case <-time.After(step):
		}
		if _, err := conn.Write([]byte{c}); err != nil {
			a.End = time.Now()
			return
		}
	}
	// Written whole, but later than any sender waits: never acknowledged.
}

// Verify checks a delivery as a subscriber would, with the standard-webhooks
// library: signature, id and timestamp (within its 5-minute tolerance).
func Verify(secret string, body []byte, h http.Header) error {
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		return fmt.Errorf("secret: %w", err)
	}
	return wh.Verify(body, h)
}
