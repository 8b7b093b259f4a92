// Package api serves pacer's HTTP API: cached prices and the scheduler's
// status for the competition's pages, health and readiness for the platform,
// metrics for Prometheus. It reads Postgres and queries Temporal; it never
// calls an upstream, so periodic work stays off the request path.
package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"
	"golang.org/x/time/rate"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/api/openapi"
	"github.com/pacer-dev/pacer/internal/catalog"
	"github.com/pacer-dev/pacer/internal/competition"
	"github.com/pacer-dev/pacer/internal/ingest"
	"github.com/pacer-dev/pacer/internal/page"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/workflows"
)

// Options are the API's dependencies.
type Options struct {
	Store   *store.Store
	Catalog *catalog.Catalog
	// Status runs the scheduler's status query.
	Status func(ctx context.Context) (workflows.Status, error)
	// Verifier verifies swaps for the agents' fast path; its Hiro client
	// must take from the budget's fast lane, which never waits.
	Verifier *competition.Verifier
	// FastPathPerMinute is each client address's fast-path requests a
	// minute (0 = DefaultFastPathPerMinute).
	FastPathPerMinute int
	// FastPathPerSecond is the fast-path requests the process verifies a
	// second, all clients together (0 = DefaultFastPathPerSecond).
	FastPathPerSecond int
	// HiroBudget is the Hiro budget every process shares, which the
	// operator's page shows; nil leaves the page to what runs reported.
	HiroBudget *store.SharedBudget
	// TemporalHealth checks that Temporal answers (for /readyz?scope=worker).
	TemporalHealth func(ctx context.Context) error
	Logger         *zap.Logger
	// StatusTTL is how long a status answer is reused: each query is a billed
	// action on Temporal Cloud. Zero means 5 seconds.
	StatusTTL time.Duration
	// StatusWait is how long a status request waits for a query before it
	// gets the last good answer, marked stale. Zero means 2 seconds.
	StatusWait time.Duration
	// RequestTimeout is every request's deadline: past it the answer is a
	// 503 and the work behind it is cancelled. Zero means 10 seconds.
	RequestTimeout time.Duration
	// Metrics serves GET /metrics: the process's one registry, shared by the
	// Temporal SDK and pacer (metrics.Metrics.Handler). Nil serves the
	// default Prometheus registry.
	Metrics http.Handler
	// Registerer receives the API's own series (the fetches behind its
	// caches); nil keeps them unregistered.
	Registerer prometheus.Registerer
	// ChainhookSecret is PACER_CHAINHOOK_SECRET: the consumer secret(s) of
	// POST /api/chainhook, comma-separated while a rotation rolls over;
	// empty turns the endpoint off (404).
	ChainhookSecret string
	// ChainhookMaxBytes bounds a delivery's body
	// (PACER_CHAINHOOK_MAX_BYTES); zero means chainhook.DefaultMaxBodyBytes.
	ChainhookMaxBytes int64
	// ChainhookAnswerWithin bounds a delivery's work once its body is
	// read; past it the answer is a 503 and Chainhooks tries again. Zero
	// means 5 s (well inside Chainhooks' own wait for an answer).
	ChainhookAnswerWithin time.Duration
	// HintEvery is how often public input (the fast path, chainhook
	// deliveries) may make one agent due: PACER_HOT_EVERY, the fastest any
	// agent is visited. Zero means ingest.DefaultHotEvery.
	HintEvery time.Duration
	// Waker signals the scheduler when a hint went through; nil sends no
	// signal (the sweep finds the agent due at its next run).
	Waker Waker
	// Admin serves the admin API under AdminPrefix on the operator
	// listener; nil answers 404 there.
	Admin http.Handler
	// SchedulerHealth tells the operator's page whether the scheduler's
	// workflow tasks keep failing (nil: the page leaves the line out).
	SchedulerHealth func(ctx context.Context) (page.SchedulerHealth, error)
	// OperatorTokens guard the operator listener (PACER_OPERATOR_TOKEN);
	// none leaves it open to whoever can reach its address.
	OperatorTokens []OperatorToken
	// AdminHosts are the Host names the operator listener serves besides
	// loopback ones (PACER_ADMIN_HOSTS, and PACER_ADMIN_ADDR's host).
	AdminHosts []string
	// TrustedProxies are the proxies whose X-Forwarded-For names the
	// client (PACER_TRUSTED_PROXIES); none trusts no header.
	TrustedProxies []netip.Prefix
	// ReadStore serves the public reads from a pool of its own, so that a
	// flood of reads cannot take the workers' connections; nil uses Store.
	ReadStore *store.Store
	// Gatherer is what the public /metrics serves (less the private
	// families); nil is the default Prometheus registry.
	Gatherer prometheus.Gatherer
	// MaxReadsInFlight, ReadsPerMinute and ReadsPerSecond bound the public
	// reads (0 = DefaultMaxReadsInFlight, DefaultReadsPerMinute per
	// client, DefaultReadsPerSecond for the process).
	MaxReadsInFlight int
	ReadsPerMinute   int
	ReadsPerSecond   int
	// CORSOrigins are the origins whose browsers may read the public API
	// (PACER_CORS_ORIGINS); never the operator listener.
	CORSOrigins []string
}

// Server is the HTTP handler.
type Server struct {
	o    Options
	mux  *http.ServeMux
	fast *fastPath
	hook *chainhookState
	op   *operator
	// The public reads' bounds.
	readers      *clientLimits
	readRate     *rate.Limiter
	inFlight     chan struct{}
	metricsText  *cell[[]byte]
	rollupsCache *keyed[store.RollupQuery, rollupsAnswer]
	comp         *competitionReads
	// routes are the public listener's patterns.
	routes []string

	// Each cell makes at most one call at a time, however many requests
	// want its answer (SPEC §7).
	status   *cell[workflows.Status]
	tracked  *cell[[]string]
	postgres *cell[struct{}]
	temporal *cell[struct{}]
}

// MaxBodyBytes bounds every request body.
const MaxBodyBytes = 64 << 10

// Cache lifetimes of the cells. A failure is reused briefly too, so a
// dependency that fails fast is not hammered by every request either.
const (
	statusFailTTL  = 2 * time.Second
	statusTimeout  = 5 * time.Second
	trackedTTL     = 5 * time.Second
	trackedFailTTL = time.Second
	trackedTimeout = 5 * time.Second
	healthTTL      = time.Second
	healthTimeout  = 3 * time.Second
)

// Fetch names, the values of the what label of pacer_api_fetches_total.
const (
	fetchStatus   = "status"
	fetchTracked  = "tracked_tokens"
	fetchPostgres = "postgres"
	fetchTemporal = "temporal"
)

// New builds the handler.
func New(o Options) *Server {
	if o.StatusTTL <= 0 {
		o.StatusTTL = 5 * time.Second
	}
	if o.StatusWait <= 0 {
		o.StatusWait = 2 * time.Second
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = 10 * time.Second
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.HintEvery <= 0 {
		o.HintEvery = ingest.DefaultHotEvery
	}
	if o.MaxReadsInFlight <= 0 {
		o.MaxReadsInFlight = DefaultMaxReadsInFlight
	}
	if o.ReadsPerMinute <= 0 {
		o.ReadsPerMinute = DefaultReadsPerMinute
	}
	if o.ReadsPerSecond <= 0 {
		o.ReadsPerSecond = DefaultReadsPerSecond
	}
	if o.Metrics == nil {
		o.Metrics = promhttp.Handler()
	}
	s := &Server{o: o, mux: http.NewServeMux(), fast: newFastPath(o.FastPathPerMinute, o.FastPathPerSecond), hook: newChainhookState(o),
		readers: newClientLimits(o.ReadsPerMinute, defaultMaxClients), inFlight: make(chan struct{}, o.MaxReadsInFlight),
		readRate: rate.NewLimiter(rate.Limit(o.ReadsPerSecond), o.ReadsPerSecond+o.ReadsPerMinute)}
	s.newCells()
	s.rollupsCache = s.newRollupsCache()
	s.handle("GET /api/prices", s.prices)
	s.handle("GET /api/scheduler/status", s.schedulerStatus)
	s.handle("POST /api/competition/trades", s.trade)
	s.handle("GET /api/competition/tracked-tokens", s.trackedTokens)
	s.handle("POST "+ChainhookPath, s.chainhookPush)
	s.handleCached(rollupsPattern, s.rollups)
	s.handle(PullPattern, s.pullDelivery)
	s.handle("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"ok": true})
	})
	s.handle("GET /readyz", s.ready)
	s.handleCached("GET /metrics", s.publicMetrics)
	s.handleCached("GET "+openapi.Path, s.openAPI)
	s.newCompetition()
	s.handle("GET /{$}", s.index)
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no such endpoint: "+r.Method+" "+r.URL.Path)
	})
	s.op = s.newOperator()
	return s
}

// timeoutBody is the answer to a request past its deadline. TimeoutHandler
// writes it on headers ServeHTTP set beforehand.
var timeoutBody = `{"error":"request timed out","class":"` + string(pacer.ClassTimeout) + `"}` + "\n"

func (s *Server) newCells() {
	m := newCellMetrics(s.o.Registerer, fetchStatus, fetchTracked, fetchPostgres, fetchTemporal)
	s.status = &cell[workflows.Status]{what: fetchStatus, ttl: s.o.StatusTTL, failTTL: statusFailTTL,
		timeout: statusTimeout, metrics: m, fetch: s.o.Status,
		onFailure: func(err error) { s.o.Logger.Warn("api.status_failed", zap.Error(err)) }}
	if s.o.Status == nil {
		s.status.fetch = func(context.Context) (workflows.Status, error) { return workflows.Status{}, errNotConfigured }
	}
	s.tracked = &cell[[]string]{what: fetchTracked, ttl: trackedTTL, failTTL: trackedFailTTL,
		timeout: trackedTimeout, staleOK: true, metrics: m,
		fetch: func(ctx context.Context) ([]string, error) {
			traded, err := s.reads().TradedTokens(ctx, 50)
			if err != nil {
				return nil, err
			}
			return s.o.Catalog.TokenSet(traded), nil
		},
		onFailure: func(err error) { s.o.Logger.Error("api.tracked_tokens_failed", zap.Error(err)) }}
	s.postgres = &cell[struct{}]{what: fetchPostgres, ttl: healthTTL, failTTL: healthTTL, timeout: healthTimeout, metrics: m,
		fetch:     func(ctx context.Context) (struct{}, error) { return struct{}{}, s.o.Store.Ping(ctx) },
		onFailure: func(err error) { s.o.Logger.Warn("api.postgres_unready", zap.Error(err)) }}
	s.metricsText = &cell[[]byte]{what: "metrics", ttl: metricsTTL, failTTL: time.Second, timeout: metricsTimeout,
		fetch:     s.gatherPublic,
		onFailure: func(err error) { s.o.Logger.Warn("api.metrics_gather_failed", zap.Error(err)) }}
	s.temporal = &cell[struct{}]{what: fetchTemporal, ttl: healthTTL, failTTL: healthTTL, timeout: healthTimeout, metrics: m,
		fetch: func(ctx context.Context) (struct{}, error) {
			if s.o.TemporalHealth == nil {
				return struct{}{}, errNotConfigured
			}
			return struct{}{}, s.o.TemporalHealth(ctx)
		},
		onFailure: func(err error) { s.o.Logger.Warn("api.temporal_unready", zap.Error(err)) }}
}

var errNotConfigured = errors.New("not configured")

// handle serves pattern with the deadline of every request: its context
// ends (cancelling queries and calls), and whatever the handler is doing,
// the client gets a 503 then. The answer is buffered until the handler
// returns: fit for answers made per request, and small.
func (s *Server) handle(pattern string, h http.HandlerFunc) {
	s.mux.Handle(pattern, http.TimeoutHandler(h, s.o.RequestTimeout, timeoutBody))
	s.routes = append(s.routes, pattern)
}

// handleCached serves pattern for a handler that answers from a cache with
// writeCached: its context has the request's deadline, and the answer is
// not buffered (a cached body may be megabytes, and a slow reader would
// hold a copy of it for as long as it takes to read).
func (s *Server) handleCached(pattern string, h http.HandlerFunc) {
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), s.o.RequestTimeout)
		defer cancel()
		h(w, r.WithContext(ctx))
	})
	s.routes = append(s.routes, pattern)
}

// cachedWriteTimeout bounds the write of a cached answer: a reader that
// takes longer loses its connection.
const cachedWriteTimeout = 20 * time.Second

// writeCached writes a cached answer (headers already set) as it is, with
// no copy, after giving back the request's read slot: a slow reader holds
// its connection until cachedWriteTimeout, and nothing shared.
func writeCached(w http.ResponseWriter, r *http.Request, code int, body []byte) {
	releaseSlot(r.Context())
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(cachedWriteTimeout))
	w.WriteHeader(code)
	_, _ = w.Write(body)
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	limit := int64(MaxBodyBytes)
	if r.URL.Path == ChainhookPath {
		limit = s.hook.maxBytes // a delivery carries whole blocks
	}
	r.Body = http.MaxBytesReader(w, r.Body, limit)
	// Defaults every answer starts from, the timed-out one included: a
	// handler's own headers replace them.
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	if s.allowOrigin(w, r) {
		return
	}
	if isPublicRead(r) {
		release, ok := s.readGate(w, r)
		if !ok {
			return
		}
		release = sync.OnceFunc(release)
		defer release()
		r = r.WithContext(context.WithValue(r.Context(), slotKey{}, release))
	}
	s.mux.ServeHTTP(w, r)
}

// slotKey carries a public read's slot release in its context, for
// writeCached.
type slotKey struct{}

// releaseSlot gives back the read slot the request holds, if any (once).
func releaseSlot(ctx context.Context) {
	if release, ok := ctx.Value(slotKey{}).(func()); ok {
		release()
	}
}

// Serve listens on addr until ctx ends, then shuts down gracefully.
func Serve(ctx context.Context, addr string, h http.Handler, log *zap.Logger) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	return ServeListener(ctx, ln, h, log)
}

// ServeListener serves on ln until ctx ends, then shuts down gracefully.
func ServeListener(ctx context.Context, ln net.Listener, h http.Handler, log *zap.Logger) error {
	addr := ln.Addr().String()
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
	go func() { errc <- srv.Serve(ln) }()
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

// schedulerStatus answers from the status cell: a fresh answer, else the
// last good one marked stale with its age, else a 503 with the failure's
// class. With Temporal hanging, every request answers within StatusWait
// and one query at a time goes out.
func (s *Server) schedulerStatus(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), s.o.StatusWait)
	defer cancel()
	rd := s.status.get(ctx)
	if !rd.Have {
		w.Header().Set("Retry-After", strconv.Itoa(int(statusFailTTL.Seconds())))
		writeClassError(w, http.StatusServiceUnavailable, "scheduler status unavailable", readingClass(rd))
		return
	}
	age := time.Since(rd.At)
	doc := StatusDocument{Status: listenerStatus(rd.Value), AgeSeconds: age.Seconds()}
	w.Header().Set("Age", strconv.Itoa(int(age.Seconds())))
	if rd.Fresh {
		cacheFor(w, s.o.StatusTTL-age)
	} else {
		doc.Stale, doc.StaleReason = true, readingClass(rd)
		w.Header().Set("Cache-Control", "no-cache")
	}
	writeJSON(w, http.StatusOK, doc)
}

// SchedulerStatus is the scheduler's status through the API's cache, fresh
// or an error, so that other readers in the process (the metrics
// collector) never add a query of their own.
func (s *Server) SchedulerStatus(ctx context.Context) (workflows.Status, error) {
	rd := s.status.get(ctx)
	switch {
	case rd.Fresh:
		return rd.Value, nil
	case rd.Err != nil:
		return workflows.Status{}, fmt.Errorf("scheduler status: %w", rd.Err)
	}
	return workflows.Status{}, errors.New("scheduler status: no answer in time")
}

// Readiness scopes, the values of /readyz?scope=.
const (
	// ScopeAPI (the default) is ready when the API can serve: Postgres
	// answers. Temporal is reported, and only the status endpoint needs it.
	ScopeAPI = "api"
	// ScopeWorker is ready when a worker can work: Postgres and Temporal.
	ScopeWorker = "worker"
)

// A readiness probe answers within a second (Kubernetes' default probe
// timeout): it waits that long for the checks that decide, and briefly for
// one it only reports. A check still running is "checking".
const (
	readyWait    = time.Second
	reportedWait = 100 * time.Millisecond
)

func (s *Server) ready(w http.ResponseWriter, r *http.Request) {
	scope := r.URL.Query().Get("scope")
	if scope == "" {
		scope = ScopeAPI
	}
	if scope != ScopeAPI && scope != ScopeWorker {
		writeError(w, http.StatusBadRequest, "scope must be api or worker")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), readyWait)
	defer cancel()
	checks := []struct {
		name     string
		c        *cell[struct{}]
		required bool
	}{
		{fetchPostgres, s.postgres, true},
		{fetchTemporal, s.temporal, scope == ScopeWorker},
	}
	states := make([]string, len(checks))
	var wg sync.WaitGroup
	for i, ch := range checks {
		wg.Go(func() {
			ctx := ctx
			if !ch.required {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, reportedWait)
				defer cancel()
			}
			states[i] = healthState(ch.c.get(ctx))
		})
	}
	wg.Wait()
	ready := true
	byName := make(map[string]string, len(checks))
	for i, ch := range checks {
		byName[ch.name] = states[i]
		ready = ready && (!ch.required || states[i] == "ok")
	}
	code := http.StatusOK
	if !ready {
		code = http.StatusServiceUnavailable
	}
	writeJSON(w, code, map[string]any{"ready": ready, "scope": scope, "checks": byName})
}

// healthState is a dependency's state in /readyz: ok, unreachable,
// timeout, checking (the first check is under way) or not configured.
func healthState(rd reading[struct{}]) string {
	switch {
	case rd.Fresh:
		return "ok"
	case errors.Is(rd.Err, errNotConfigured):
		return "not configured"
	case rd.Err == nil:
		return "checking"
	case readingClass(rd) == pacer.ClassTimeout:
		return "timeout"
	}
	return "unreachable"
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if code >= 300 || h.Get("Cache-Control") == "" {
		h.Set("Cache-Control", "no-store")
	}
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// cacheFor lets clients and shared caches reuse a read-only answer for d
// (whole seconds, at least 1).
func cacheFor(w http.ResponseWriter, d time.Duration) {
	w.Header().Set("Cache-Control", "public, max-age="+strconv.Itoa(max(int(d.Seconds()), 1)))
}

// ErrorBody is every error answer.
type ErrorBody struct {
	Error string `json:"error"`
	// Class says what kind of trouble it was, for a dependency failure
	// (SPEC §3.3 classes); the raw error stays in the logs.
	Class pacer.ErrorClass `json:"class,omitempty"`
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, ErrorBody{Error: msg})
}

func writeClassError(w http.ResponseWriter, code int, msg string, class pacer.ErrorClass) {
	writeJSON(w, code, ErrorBody{Error: msg, Class: class})
}
