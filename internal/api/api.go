// Package api serves pacer's HTTP API: cached prices and the scheduler's
// status for the competition's pages, health and readiness for the platform,
// metrics for Prometheus. It reads Postgres and queries Temporal; it never
// calls an upstream, so periodic work stays off the request path.
package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"

	"github.com/pacer-dev/pacer/internal/catalog"
	"github.com/pacer-dev/pacer/internal/competition"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/workflows"
)

// Options are the API's dependencies.
type Options struct {
	Store   *store.Store
	Catalog *catalog.Catalog
	// Status runs the scheduler's status query.
	Status func(ctx context.Context) (workflows.Status, error)
	// Verifier verifies swaps for the agents' fast path.
	Verifier *competition.Verifier
	// TemporalHealth checks that Temporal answers (for /readyz).
	TemporalHealth func(ctx context.Context) error
	Logger         *zap.Logger
	// StatusTTL is how long a status answer is reused: each query is a billed
	// action on Temporal Cloud. Zero means 5 seconds.
	StatusTTL time.Duration
	// Metrics serves GET /metrics: the process's one registry, shared by the
	// Temporal SDK and pacer (metrics.Metrics.Handler). Nil serves the
	// default Prometheus registry.
	Metrics http.Handler
}

// Server is the HTTP handler.
type Server struct {
	o   Options
	mux *http.ServeMux

	mu       sync.Mutex
	cached   *workflows.Status
	cachedAt time.Time
}

// MaxBodyBytes bounds every request body.
const MaxBodyBytes = 64 << 10

// New builds the handler.
func New(o Options) *Server {
	if o.StatusTTL <= 0 {
		o.StatusTTL = 5 * time.Second
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.Metrics == nil {
		o.Metrics = promhttp.Handler()
	}
	s := &Server{o: o, mux: http.NewServeMux()}
	s.mux.HandleFunc("GET /api/prices", s.prices)
	s.mux.HandleFunc("GET /api/scheduler/status", s.status)
	s.mux.HandleFunc("POST /api/competition/trades", s.trade)
	s.mux.HandleFunc("GET /api/competition/tracked-tokens", s.trackedTokens)
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"ok": true})
	})
	s.mux.HandleFunc("GET /readyz", s.ready)
	s.mux.Handle("GET /metrics", o.Metrics)
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no such endpoint: "+r.Method+" "+r.URL.Path)
	})
	return s
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
	s.mux.ServeHTTP(w, r)
}

// Serve listens on addr until ctx ends, then shuts down gracefully.
func Serve(ctx context.Context, addr string, h http.Handler, log *zap.Logger) error {
	srv := &http.Server{
		Addr:              addr,
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    32 << 10,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	log.Info("http.listening", zap.String("addr", addr))
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		return err
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func (s *Server) status(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock() // one query at a time: concurrent callers share it
	if s.cached != nil && time.Since(s.cachedAt) < s.o.StatusTTL {
		writeJSON(w, http.StatusOK, s.cached)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	st, err := s.o.Status(ctx)
	if err != nil {
		s.o.Logger.Warn("api.status_failed", zap.Error(err))
		writeError(w, http.StatusServiceUnavailable, "scheduler status unavailable")
		return
	}
	s.cached, s.cachedAt = &st, time.Now()
	writeJSON(w, http.StatusOK, st)
}

func (s *Server) ready(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
	defer cancel()
	checks := map[string]string{"postgres": "ok", "temporal": "ok"}
	code := http.StatusOK
	if err := s.o.Store.Ping(ctx); err != nil {
		checks["postgres"], code = "unreachable", http.StatusServiceUnavailable
	}
	if s.o.TemporalHealth == nil {
		checks["temporal"], code = "not configured", http.StatusServiceUnavailable
	} else if err := s.o.TemporalHealth(ctx); err != nil {
		checks["temporal"], code = "unreachable", http.StatusServiceUnavailable
	}
	writeJSON(w, code, map[string]any{"ready": code == http.StatusOK, "checks": checks})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, map[string]string{"error": msg})
}
