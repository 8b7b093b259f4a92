// Package sim simulates pacer's upstreams on one http.Handler, so that
// TENERO_BASE_URL and HIRO_BASE_URL can both point at one local address
// (SPEC §8). It is what `pacer sim` and `pacer dev` serve and what tests run
// clients against.
//
// A Server is built from a Config whose Seed fixes the world: the same seed
// gives the same tokens, and a token's price at a moment is a pure function of
// the seed, the token and the minute, so two simulators (or one restarted)
// agree. Time comes from Config.Now and waiting from Config.Sleep, so tests
// move the clock instead of sleeping.
//
// Upstream routes behave like the real services, rate limits and their headers
// included (limits.go: per-minute and month windows, request costs, a hidden
// per-minute limit only ratelimit-remaining gives away); Hiro serves the v1
// list, the v3 cursor list and /tx/ with its events paged (hiro.go), and
// the chain's feed, contracts' own lists and tx/multiple, with strangers'
// traffic in the same blocks (feed.go, chain.go). The Hiro
// world (world.go, generate.go, activity.go) knows what each swap row must be
// from what it generated, never from pacer's parser. Faults can be switched on at run time, from Go with
// SetFaults or over HTTP (faults.go); every upstream request is counted
// (stats.go). The control routes live under /_sim/:
//
//	GET    /_sim/faults   the current Faults
//	PUT    /_sim/faults   replace them (JSON body; {} clears)
//	GET    /_sim/stats    request counts per route and status
//	DELETE /_sim/stats    reset the counts
//	GET    /_sim/tokens   the token world
//	GET    /_sim/world    the Hiro world: agents, claims, transactions, outcomes now
//	GET    /_sim/push     the Chainhooks deliveries sent: stats and the last 100
//	GET    /_sim/swaps    when each swap the ledger must hold was mined (SwapTimes)
//	GET    /_sim/ws       what Hiro's WebSocket (ws.go) did: WSStats
//
// With Config.Push, Push delivers the world's blocks to pacer as Hiro
// Chainhooks does (push.go), faults included; HiroConfig.Reorgs rolls
// blocks back and re-applies their transactions (reorg.go), in Hiro's
// answers and in the deliveries alike.
// Each upstream has its own file (tenero.go, …) and registers its routes in
// Server.routes.
package sim

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/pacer-dev/pacer/internal/wait"
)

// Config configures a Server. The zero value is a working simulator.
type Config struct {
	// Seed fixes the generated world.
	Seed int64
	// Now is the simulator's clock. Defaults to time.Now.
	Now func() time.Time
	// Sleep waits out slow-response faults and must return early with ctx's
	// error (a client that gave up). Defaults to a timer.
	Sleep func(ctx context.Context, d time.Duration) error
	// Tenero configures the Tenero simulation.
	Tenero TeneroConfig
	// Hiro configures the Hiro simulation and its world.
	Hiro HiroConfig
	// Push configures the Chainhooks deliveries Push sends (push.go).
	Push PushConfig
}

// Server is the simulator. It is safe for concurrent use.
type Server struct {
	now    func() time.Time
	sleep  func(context.Context, time.Duration) error
	mux    *http.ServeMux
	faults *injector
	stats  counter
	tenero *teneroSim
	hiro   *hiroSim
	push   *pusher
	ws     *wsHub
	trace  tracer
}

// New builds the world from cfg.Seed and returns a Server serving it.
func New(cfg Config) *Server {
	s := &Server{
		now:    cfg.Now,
		sleep:  cfg.Sleep,
		mux:    http.NewServeMux(),
		faults: &injector{rng: rand.New(rand.NewPCG(uint64(cfg.Seed), 0xfa017))},
		tenero: newTeneroSim(cfg.Seed, cfg.Tenero),
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.sleep == nil {
		s.sleep = wait.Sleep
	}
	s.ResetStats()
	s.hiro = newHiroSim(cfg.Seed, cfg.Hiro, s)
	s.push = newPusher(cfg.Seed, cfg.Push, s.hiro.world, s.now, s.sleep)
	s.ws = newWSHub(s)
	s.routes()
	return s
}

// routes registers every route. An upstream adds its lines here, each through
// s.upstream so that it is counted, rate limited and open to faults.
func (s *Server) routes() {
	for path, doc := range map[string]func() any{
		"/_sim/faults": func() any { return s.Faults() },
		"/_sim/stats":  func() any { return s.Stats() },
		"/_sim/tokens": func() any { return s.Tokens() },
		"/_sim/world":  s.worldDoc,
		"/_sim/push":   s.pushDoc,
		"/_sim/swaps":  s.swapsDoc,
		"/_sim/ws":     func() any { return s.WSStats() },
	} {
		s.mux.HandleFunc("GET "+path, func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, doc()) })
	}
	s.mux.HandleFunc("PUT /_sim/faults", s.putFaults)
	s.mux.HandleFunc("DELETE /_sim/stats", func(w http.ResponseWriter, _ *http.Request) {
		s.ResetStats()
		w.WriteHeader(http.StatusNoContent)
	})
	s.mux.HandleFunc(HiroWSRoute, s.hiroWS)
	s.mux.Handle("GET "+RegistryPath, s.count(RegistryPath, s.inject(http.HandlerFunc(s.registry))))

	s.upstream(TeneroTokenRoute, s.teneroLimit, s.teneroToken)
	for route, h := range map[string]http.HandlerFunc{
		HiroAddressTransactionsRoute:   s.deprecated(s.hiroAddressTransactions),
		HiroPrincipalTransactionsRoute: s.hiroPrincipalTransactions,
		HiroTxRoute:                    s.deprecated(s.hiroTx),
		HiroTxListRoute:                s.deprecated(s.hiroTxList),
		HiroTxMultipleRoute:            s.hiroTxMultiple,
		HiroV2AddressTransactionsRoute: s.deprecated(notFound),
	} {
		s.upstream(route, func(next http.Handler) http.Handler { return s.hiroLimitFor(route, next) }, h)
	}
	// Hiro serves its feed with a trailing slash too (a prefixed fastify
	// route answers both); it counts as the feed.
	s.mux.Handle("GET /extended/v1/tx/{$}", s.count(HiroTxListRoute, s.hiroLimitFor(HiroTxListRoute, s.inject(s.deprecated(s.hiroTxList)))))

	// Anything else is counted too: a client calling a wrong path is worth
	// seeing in the stats.
	s.mux.Handle("/", s.count("/", http.HandlerFunc(notFound)))
}

// upstream registers an upstream route. The limiter runs before faults so
// that a faulted answer still carries the quota headers, as it does behind a
// real gateway, and a request it refuses never reaches the fault dice.
func (s *Server) upstream(pattern string, limit func(http.Handler) http.Handler, h http.HandlerFunc) {
	s.mux.Handle(pattern, s.count(pattern, limit(s.inject(h))))
}

// ServeHTTP serves the upstream and control routes.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mux.ServeHTTP(w, r)
}

// maxControlBody bounds a control request; a Faults document is tiny.
const maxControlBody = 64 << 10

func (s *Server) putFaults(w http.ResponseWriter, r *http.Request) {
	var f Faults
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxControlBody))
	// A misspelt field would otherwise silently leave a fault off.
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		writeError(w, http.StatusBadRequest, "decode faults: "+err.Error())
		return
	}
	if err := s.SetFaults(f); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, s.Faults())
}

func notFound(w http.ResponseWriter, _ *http.Request) {
	writeError(w, http.StatusNotFound, "no such route")
}

// doc is a JSON object written as a literal: an answer or a delivery
// whose shape is the upstream's and that nothing in the simulator reads
// back.
type doc = map[string]any

// writeJSON writes v as the whole answer. Encoding errors cannot happen for
// the simulator's own types, and a failed write means the client left.
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// writeError answers with a shape both clients can read: Tenero's
// statusCode/message and Hiro's error.
func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, doc{"statusCode": status, "message": msg, "error": msg})
}
