package api

import (
	"bytes"
	"context"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"go.uber.org/zap"

	"github.com/pacer-dev/pacer/internal/store"
)

// Public reads are bounded (SPEC §7): a cap on reads in flight, a
// per-client limit, short server-side caches, and their own small
// database pool, so that no flood of reads slows the workers.

const (
	// DefaultMaxReadsInFlight caps the public GETs being served at once;
	// a read that finds no slot within readSlotWait is answered 503 with
	// Retry-After. Most reads are answered from caches, so a slot is
	// held briefly; the database work behind them is bounded by the read
	// pool's connections.
	DefaultMaxReadsInFlight = 256
	readSlotWait            = 250 * time.Millisecond
	// DefaultReadsPerMinute is each client's public GETs a minute (and
	// its burst): a page polling every few seconds is well within it.
	DefaultReadsPerMinute = 120
	// DefaultReadsPerSecond caps the public GETs the process serves a
	// second, all clients together: past it a read is a cheap 503, so a
	// flood from many addresses costs the process a bounded share of its
	// CPU, whatever the per-client limit lets through.
	DefaultReadsPerSecond = 100
	// metricsTTL is how long one gather serves every public scrape.
	metricsTTL     = 5 * time.Second
	metricsTimeout = 5 * time.Second
)

// The metric families the public listener serves (SPEC §7): whether pacer
// is up and keeping its data fresh, nothing about its operators. Anything
// else, including every family added later, stays on the operator
// listener until it is named here: what the budgets have left and how the
// tasks are paced (it tells an attacker when a little more traffic would
// starve the sweep), breakers, subscribers and deliveries, and the
// Temporal SDK's series. A family on this list still stays private when a
// series carries one of privateLabels.
var (
	publicFamilies = []string{
		"pacer_scheduler_up",
		"pacer_task_runs_total",
		"pacer_task_last_success_timestamp_seconds",
		"pacer_sweep_swaps_total",
		"pacer_discovery_lag_seconds",
		"pacer_price_oldest_age_seconds",
		"pacer_prices_tracked",
		"pacer_prices_missing",
		"pacer_api_fetches_total",
		"pacer_api_fetches_in_flight",
	}
	// publicFamilyPrefixes are the Go runtime's and the process's own
	// families (goroutines, memory, file descriptors).
	publicFamilyPrefixes = []string{"go_", "process_"}
	privateLabels        = []string{"namespace", "task_queue", "workflow_type", "activity_type", "subscriber", "subscriber_id"}
)

// reads is the store public reads use: Options.ReadStore, else Store.
func (s *Server) reads() *store.Store {
	if s.o.ReadStore != nil {
		return s.o.ReadStore
	}
	return s.o.Store
}

// publicMetrics serves the process's metrics, less the private families,
// from one gather every metricsTTL however many scrape: a reader waits for
// the gather in flight only as long as its own request lives, so timed-out
// scrapes never pile up behind a collector's lock.
func (s *Server) publicMetrics(w http.ResponseWriter, r *http.Request) {
	serveMetrics(w, r, s.metricsText)
}

// serveMetrics answers a scrape from a gather cell.
func serveMetrics(w http.ResponseWriter, r *http.Request, c *cell[[]byte]) {
	rd := c.get(r.Context())
	if !rd.Have {
		w.Header().Set("Retry-After", "1")
		writeClassError(w, http.StatusServiceUnavailable, "metrics unavailable", readingClass(rd))
		return
	}
	w.Header().Set("Content-Type", string(expfmt.NewFormat(expfmt.TypeTextPlain)))
	writeCached(w, r, http.StatusOK, rd.Value)
}

func (s *Server) gatherPublic(context.Context) ([]byte, error) { return s.gather(true) }

// gatherAll is the operators' scrape: every family.
func (s *Server) gatherAll(context.Context) ([]byte, error) { return s.gather(false) }

// gatherer is Options.Gatherer, else the registry the API registers in
// when it can gather, else nil: Options.Metrics then serves the operators.
func (s *Server) gatherer() prometheus.Gatherer {
	if s.o.Gatherer != nil {
		return s.o.Gatherer
	}
	if rg, ok := s.o.Registerer.(prometheus.Gatherer); ok {
		return rg
	}
	return nil
}

func (s *Server) gather(public bool) ([]byte, error) {
	g := s.gatherer()
	if g == nil {
		g = prometheus.DefaultGatherer
	}
	families, err := g.Gather()
	if err != nil && len(families) == 0 {
		return nil, err
	}
	// A partial gather (one collector failed) is still worth serving: the
	// failing collector counts its own errors.
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range families {
		if public && isPrivateFamily(mf) {
			continue
		}
		if err := enc.Encode(mf); err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), nil
}

func isPrivateFamily(mf *dto.MetricFamily) bool {
	name := mf.GetName()
	public := slices.Contains(publicFamilies, name)
	for _, p := range publicFamilyPrefixes {
		public = public || strings.HasPrefix(name, p)
	}
	if !public {
		return true
	}
	for _, m := range mf.GetMetric() {
		for _, l := range m.GetLabel() {
			if slices.Contains(privateLabels, l.GetName()) {
				return true
			}
		}
	}
	return false
}

// PublicIndex is the public listener's GET /: what it serves.
type PublicIndex struct {
	Service   string   `json:"service"`
	Endpoints []string `json:"endpoints"`
}

func (s *Server) index(w http.ResponseWriter, _ *http.Request) {
	cacheFor(w, time.Minute)
	var eps []string
	for _, p := range s.routes {
		if p != "GET /{$}" {
			eps = append(eps, p)
		}
	}
	writeJSON(w, http.StatusOK, PublicIndex{Service: "pacer", Endpoints: eps})
}

// readGate admits a public read: within the client's limit, the process's
// reads a second and the cap on reads in flight, in that order, so that a
// client its own limit refuses has spent nothing shared (one client's
// flood never makes another's read fail). The process's limiter holds a
// second's reads plus a whole client's burst, so one client spending its
// burst at once leaves a second's worth for the others. release must be
// called when admitted.
func (s *Server) readGate(w http.ResponseWriter, r *http.Request) (release func(), ok bool) {
	if allowed, wait := s.readers.allow(s.clientKey(r), time.Now()); !allowed {
		s.refuseRead(w, r, http.StatusTooManyRequests, "this address's reads a minute are spent", wait)
		return nil, false
	}
	if !s.readRate.Allow() {
		s.refuseRead(w, r, http.StatusServiceUnavailable, "too many reads; retry shortly", time.Second)
		return nil, false
	}
	select {
	case s.inFlight <- struct{}{}:
		return func() { <-s.inFlight }, true
	default:
	}
	wait := time.NewTimer(readSlotWait)
	defer wait.Stop()
	select {
	case s.inFlight <- struct{}{}:
		return func() { <-s.inFlight }, true
	case <-r.Context().Done():
		return nil, false
	case <-wait.C:
		s.o.Logger.Debug("api.reads_shed")
		s.refuseRead(w, r, http.StatusServiceUnavailable, "too many reads in flight; retry shortly", time.Second)
		return nil, false
	}
}

// isPublicRead says which requests the read gate covers: every GET and
// HEAD but the probes, whose answers come from caches and must stay up
// when reads are shed. The agents' fast path and chainhook deliveries
// (POSTs) have limits of their own, and a flood of reads never sheds them.
func isPublicRead(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	return r.URL.Path != "/healthz" && r.URL.Path != "/readyz"
}

// Server-side cache of GET /api/rollups: one query per distinct request
// every rollupsTTL, however many clients ask, and never two at once.
const (
	rollupsTTL       = 10 * time.Second
	rollupsTimeout   = 8 * time.Second
	maxCachedRollups = 512
	// maxCachedRollupBytes bounds what the cached answers hold together
	// (an answer may be a few MB at MaxRollupRows).
	maxCachedRollupBytes = 64 << 20
	rollupsCacheWhat     = "rollups"
	pageTTL              = 2 * time.Second
	pageRenderTimeout    = 8 * time.Second
)

// newRollupsCache holds a cell per distinct (normalised) query.
func (s *Server) newRollupsCache() *keyed[store.RollupQuery, rollupsAnswer] {
	return newKeyed(maxCachedRollups, maxCachedRollupBytes,
		func(q store.RollupQuery, add func(int)) *cell[rollupsAnswer] {
			return &cell[rollupsAnswer]{what: rollupsCacheWhat, ttl: rollupsTTL, failTTL: time.Second, timeout: rollupsTimeout,
				fetch: func(ctx context.Context) (rollupsAnswer, error) {
					a, err := s.fetchRollups(ctx, q)
					add(len(a.body))
					return a, err
				},
				onFailure: func(err error) { s.o.Logger.Warn("api.rollups_failed", zap.Error(err)) }}
		})
}

// cachedPage serves a rendered page from one rendering every pageTTL.
type cachedPage struct {
	c *cell[renderedPage]
}

type renderedPage struct {
	header http.Header
	code   int
	body   []byte
}

func newCachedPage(h http.Handler, log *zap.Logger) *cachedPage {
	return &cachedPage{c: &cell[renderedPage]{what: "page", ttl: pageTTL, failTTL: time.Second, timeout: pageRenderTimeout,
		fetch: func(ctx context.Context) (renderedPage, error) {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, "/", nil)
			if err != nil {
				return renderedPage{}, err
			}
			rec := &renderedPage{header: http.Header{}, code: http.StatusOK}
			h.ServeHTTP(rec, req)
			return *rec, nil
		},
		onFailure: func(err error) { log.Warn("api.page_failed", zap.Error(err)) }}}
}

// renderedPage records a rendering as an http.ResponseWriter.
func (p *renderedPage) Header() http.Header  { return p.header }
func (p *renderedPage) WriteHeader(code int) { p.code = code }
func (p *renderedPage) Write(b []byte) (int, error) {
	p.body = append(p.body, b...)
	return len(b), nil
}

func (p *cachedPage) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rd := p.c.get(r.Context())
	if !rd.Have {
		w.Header().Set("Retry-After", "1")
		writeClassError(w, http.StatusServiceUnavailable, "page unavailable", readingClass(rd))
		return
	}
	for k, v := range rd.Value.header {
		w.Header()[k] = v
	}
	w.WriteHeader(rd.Value.code)
	_, _ = w.Write(rd.Value.body)
}
