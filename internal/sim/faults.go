package sim

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pacer-dev/pacer"
)

// Faults says how often upstream requests go wrong, and how. Each rate is
// the share of matching requests (0..1) that get the fault; the dice are
// rolled per request from a seeded source, so a run is repeatable when its
// requests arrive in the same order. The zero value injects nothing.
type Faults struct {
	// PathPrefix limits faults to requests whose path starts with it, e.g.
	// "/v1/" for Tenero only or "/extended/" for Hiro only. Empty: all.
	PathPrefix string `json:"pathPrefix,omitempty"`
	// Path limits faults to requests whose path is exactly it, e.g.
	// "/extended/v1/tx" for the feed alone (a transaction's details,
	// /extended/v1/tx/{id}, still answer). Empty: any path PathPrefix
	// lets through.
	Path string `json:"path,omitempty"`
	// TxID limits faults to requests that name this transaction: its
	// detail (/extended/v1/tx/{id}) or a tx/multiple naming it. Empty: any.
	TxID string `json:"txid,omitempty"`

	// TooManyRequests answers 429 with a short Retry-After although the
	// quota headers say there is room: a storm the client cannot predict.
	TooManyRequests float64 `json:"tooManyRequests,omitempty"`
	// ServerError answers 500, 502 or 503.
	ServerError float64 `json:"serverError,omitempty"`
	// Slow delays the answer by SlowDelay (default 10 s, past a client's
	// 8 s attempt timeout); it combines with the other faults.
	Slow      float64  `json:"slow,omitempty"`
	SlowDelay Duration `json:"slowDelay,omitempty"`
	// Truncated cuts the body in half: a 200 with broken JSON.
	Truncated float64 `json:"truncated,omitempty"`
	// WrongType turns every value below the top level of the body into an
	// object, e.g. Tenero's data.price_usd: well-formed JSON of the wrong
	// shape.
	WrongType float64 `json:"wrongType,omitempty"`
	// Huge pads the body with HugeBytes of whitespace (default 2 MiB):
	// valid JSON that a client must refuse to read whole.
	Huge      float64 `json:"huge,omitempty"`
	HugeBytes int     `json:"hugeBytes,omitempty"`

	// WSSilent stops Hiro's WebSocket without closing it (ws.go): every
	// subscription alive while it is on, or taken then, is dropped
	// silently for good, as Hiro's server drops a subscriber that missed
	// a ping. WSRefused answers the WebSocket's upgrade 503. Neither
	// heeds the path filters.
	WSSilent  bool `json:"wsSilent,omitempty"`
	WSRefused bool `json:"wsRefused,omitempty"`
}

const (
	defaultSlowDelay = 10 * time.Second
	maxSlowDelay     = 10 * time.Minute
	defaultHugeBytes = 2 << 20
	maxHugeBytes     = 64 << 20
)

// Validate reports the first field out of range.
func (f Faults) Validate() error {
	rates := []struct {
		name string
		v    float64
	}{
		{"tooManyRequests", f.TooManyRequests},
		{"serverError", f.ServerError},
		{"slow", f.Slow},
		{"truncated", f.Truncated},
		{"wrongType", f.WrongType},
		{"huge", f.Huge},
	}
	for _, r := range rates {
		if math.IsNaN(r.v) || r.v < 0 || r.v > 1 {
			return fmt.Errorf("faults: %s must be between 0 and 1, got %v", r.name, r.v)
		}
	}
	if f.SlowDelay < 0 || time.Duration(f.SlowDelay) > maxSlowDelay {
		return fmt.Errorf("faults: slowDelay must be between 0 and %v, got %v", maxSlowDelay, time.Duration(f.SlowDelay))
	}
	if f.HugeBytes < 0 || f.HugeBytes > maxHugeBytes {
		return fmt.Errorf("faults: hugeBytes must be between 0 and %d, got %d", maxHugeBytes, f.HugeBytes)
	}
	return nil
}

// Duration is the project's JSON duration: Go duration text ("1.5s"),
// which an operator can type into a PUT /_sim/faults.
type Duration = pacer.Duration

// SetFaults replaces the faults in force.
func (s *Server) SetFaults(f Faults) error {
	if err := f.Validate(); err != nil {
		return err
	}
	s.faults.mu.Lock()
	defer s.faults.mu.Unlock()
	s.faults.faults = f
	return nil
}

// Faults returns the faults in force.
func (s *Server) Faults() Faults {
	s.faults.mu.Lock()
	defer s.faults.mu.Unlock()
	return s.faults.faults
}

// injector rolls the fault dice. The source is shared by concurrent requests,
// hence the mutex.
type injector struct {
	mu     sync.Mutex
	rng    *rand.Rand
	faults Faults
}

// fate is what the dice decided for one request.
type fate struct {
	delay      time.Duration
	status     int // 0: let the handler answer
	retryAfter int64
	// rewrite spoils the handler's body; nil leaves it intact.
	rewrite func([]byte) []byte
}

// roll decides one request's fate. The dice are rolled in a fixed order and
// only for a fault that is switched on, so switching one on does not reshuffle
// another's sequence more than it must.
func (in *injector) roll(r *http.Request) fate {
	path := r.URL.Path
	in.mu.Lock()
	defer in.mu.Unlock()
	f := in.faults
	var out fate
	if !strings.HasPrefix(path, f.PathPrefix) || f.Path != "" && path != f.Path ||
		f.TxID != "" && !strings.HasSuffix(path, "/"+f.TxID) && !slices.Contains(r.URL.Query()["tx_id"], f.TxID) {
		return out
	}
	hit := func(rate float64) bool { return rate > 0 && in.rng.Float64() < rate }
	if hit(f.Slow) {
		out.delay = cmp.Or(time.Duration(f.SlowDelay), defaultSlowDelay)
	}
	switch {
	case hit(f.TooManyRequests):
		out.status = http.StatusTooManyRequests
		out.retryAfter = 1 + in.rng.Int64N(5)
	case hit(f.ServerError):
		out.status = []int{http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable}[in.rng.IntN(3)]
	case hit(f.Truncated):
		out.rewrite = func(body []byte) []byte { return body[:len(body)/2] }
	case hit(f.WrongType):
		out.rewrite = wrongType
	case hit(f.Huge):
		n := cmp.Or(f.HugeBytes, defaultHugeBytes)
		out.rewrite = func(body []byte) []byte { return pad(body, n) }
	}
	return out
}

// inject applies the faults to an upstream handler.
func (s *Server) inject(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f := s.faults.roll(r)
		if f.delay > 0 {
			if err := s.sleep(r.Context(), f.delay); err != nil {
				return // the client gave up; nobody is left to answer
			}
		}
		switch {
		case f.status != 0:
			if f.retryAfter > 0 { // a 429's
				w.Header().Set("Retry-After", strconv.FormatInt(f.retryAfter, 10))
			}
			writeError(w, f.status, http.StatusText(f.status))
			return
		case f.rewrite == nil:
			next.ServeHTTP(w, r)
			return
		}
		buf := &recorder{ResponseWriter: w, held: new(bytes.Buffer)}
		next.ServeHTTP(buf, r)
		w.Header().Del("Content-Length")
		w.WriteHeader(cmp.Or(buf.status, http.StatusOK))
		_, _ = w.Write(f.rewrite(buf.held.Bytes()))
	})
}

// wrongType replaces every scalar below the top level with an object holding
// it, so the envelope still looks right and the fields a client reads do not.
// A body that is not JSON is returned as it is.
func wrongType(body []byte) []byte {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return body
	}
	out, err := json.Marshal(boxScalars(v, 0))
	if err != nil {
		return body
	}
	return out
}

func boxScalars(v any, depth int) any {
	switch c := v.(type) {
	case map[string]any:
		for k, child := range c {
			c[k] = boxScalars(child, depth+1)
		}
	case []any:
		for i, child := range c {
			c[i] = boxScalars(child, depth+1)
		}
	case nil:
	default:
		if depth >= 2 {
			return map[string]any{"value": v}
		}
	}
	return v
}

// pad inserts n bytes of whitespace inside the body's outer brackets, where
// JSON allows it, so the body stays valid and only its size is wrong.
func pad(body []byte, n int) []byte {
	out := make([]byte, 0, len(body)+n)
	if len(body) > 0 && (body[0] == '{' || body[0] == '[') {
		out = append(out, body[0])
		body = body[1:]
	}
	out = append(out, bytes.Repeat([]byte{' '}, n)...)
	return append(out, body...)
}
