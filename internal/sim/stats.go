package sim

import (
	"bytes"
	"maps"
	"net/http"
	"sync"
)

// Stats counts the upstream requests served, so a test can assert how many
// calls a client really made. Control routes (/_sim/…) are not counted.
type Stats struct {
	Total int `json:"total"`
	// Routes is keyed by the route's pattern, e.g. TeneroTokenRoute;
	// requests no route matched are kept under "/".
	Routes map[string]RouteStats `json:"routes"`
}

// StatusClientClosed is counted for a request whose client gave up before
// it was answered (a slow fault outlasting the client's timeout); the number
// is nginx's convention.
const StatusClientClosed = 499

// RouteStats counts one route's requests by the status they got.
type RouteStats struct {
	Total    int         `json:"total"`
	ByStatus map[int]int `json:"byStatus"`
}

// Count returns how many requests to route got status; 0 when none did.
func (s Stats) Count(route string, status int) int {
	return s.Routes[route].ByStatus[status]
}

// Stats returns a snapshot of the request counts.
func (s *Server) Stats() Stats {
	s.stats.mu.Lock()
	defer s.stats.mu.Unlock()
	out := Stats{Total: s.stats.Total, Routes: make(map[string]RouteStats, len(s.stats.Routes))}
	for route, rs := range s.stats.Routes {
		out.Routes[route] = RouteStats{Total: rs.Total, ByStatus: maps.Clone(rs.ByStatus)}
	}
	return out
}

// ResetStats sets every count back to zero (New starts from it).
func (s *Server) ResetStats() {
	s.stats.mu.Lock()
	defer s.stats.mu.Unlock()
	s.stats.Stats = Stats{Routes: map[string]RouteStats{}}
}

type counter struct {
	mu sync.Mutex
	Stats
}

func (c *counter) add(route string, status int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	rs := c.Routes[route]
	if rs.ByStatus == nil {
		rs.ByStatus = map[int]int{}
	}
	c.Total, rs.Total = c.Total+1, rs.Total+1
	rs.ByStatus[status]++
	c.Routes[route] = rs
}

// count records each request to route with the status it was answered.
func (s *Server) count(route string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &recorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		status := rec.status
		switch {
		case status != 0:
		case r.Context().Err() != nil:
			status = StatusClientClosed
		default:
			status = http.StatusOK // what net/http sends for a silent handler
		}
		s.stats.add(route, status)
	})
}

// recorder remembers the status a handler answered with; with held set it
// holds the answer back, so that a fault can rewrite its body.
type recorder struct {
	http.ResponseWriter
	status int
	held   *bytes.Buffer
}

func (r *recorder) WriteHeader(status int) {
	if r.status != 0 {
		return
	}
	r.status = status
	if r.held == nil {
		r.ResponseWriter.WriteHeader(status)
	}
}

func (r *recorder) Write(p []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	if r.held != nil {
		return r.held.Write(p)
	}
	return r.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the real writer.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
