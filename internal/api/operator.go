package api

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/pacer-dev/pacer/internal/actor"
	"github.com/pacer-dev/pacer/internal/page"
)

// The operator's listener (SPEC §7): the operator's page, the admin API
// and the full metrics, apart from the public listener, on
// PACER_ADMIN_ADDR (loopback by default), behind PACER_OPERATOR_TOKEN
// when it is set.

// DefaultAdminAddr is PACER_ADMIN_ADDR's default.
const DefaultAdminAddr = "127.0.0.1:8081"

// AdminPrefix is where Options.Admin is mounted.
const AdminPrefix = "/api/admin/"

// OperatorToken is one operator's bearer token and the name the audit log
// records for what they do with it.
type OperatorToken struct {
	Name  string
	Token string
}

// DefaultOperatorName names a token given without one.
const DefaultOperatorName = "operator"

// MinOperatorToken is the shortest operator token accepted.
const MinOperatorToken = 16

// ParseOperatorTokens reads PACER_OPERATOR_TOKEN: "token" (named
// operator) or "name:token,name2:token2". Errors never quote a token.
func ParseOperatorTokens(raw string) ([]OperatorToken, error) {
	if strings.TrimSpace(raw) == "" {
		return nil, nil
	}
	var out []OperatorToken
	for i, item := range strings.Split(raw, ",") {
		item = strings.TrimSpace(item)
		name, token, named := strings.Cut(item, ":")
		if !named {
			name, token = DefaultOperatorName, item
		}
		switch {
		case named && !validOperatorName(name):
			return nil, fmt.Errorf("PACER_OPERATOR_TOKEN item %d: the name must be 1-64 letters, digits, '.', '_' or '-'", i+1)
		case len(token) < MinOperatorToken:
			return nil, fmt.Errorf("PACER_OPERATOR_TOKEN item %d (%s): the token is %d characters, it must be at least %d", i+1, name, len(token), MinOperatorToken)
		case strings.ContainsAny(token, " \t"):
			return nil, fmt.Errorf("PACER_OPERATOR_TOKEN item %d (%s): the token may not hold white space", i+1, name)
		}
		for _, o := range out {
			if o.Name == name {
				return nil, fmt.Errorf("PACER_OPERATOR_TOKEN: the name %s is given twice", name)
			}
			if o.Token == token {
				return nil, fmt.Errorf("PACER_OPERATOR_TOKEN: %s and %s share a token", o.Name, name)
			}
		}
		out = append(out, OperatorToken{Name: name, Token: token})
	}
	return out, nil
}

func validOperatorName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// RouteLister is implemented by an Admin handler that can list its route
// patterns, so that the operator listener's route walk (and its tests)
// covers them.
type RouteLister interface {
	Routes() []string
}

// operator is the operator listener's handler.
type operator struct {
	mux    *http.ServeMux
	tokens []tokenDigest
	routes []string
}

type tokenDigest struct {
	name string
	sum  [sha256.Size]byte
}

func (s *Server) newOperator() *operator {
	op := &operator{mux: http.NewServeMux()}
	for _, t := range s.o.OperatorTokens {
		op.tokens = append(op.tokens, tokenDigest{name: t.Name, sum: sha256.Sum256([]byte(t.Token))})
	}
	// The page reads the status through the same cache as the public
	// status endpoint: a page view never adds a Temporal query.
	// Rendered at most once every pageTTL however many views.
	op.handle("GET /{$}", newCachedPage(page.New(page.Options{Store: s.o.Store, Catalog: s.o.Catalog, Status: s.SchedulerStatus,
		HiroBudget: s.o.HiroBudget, SchedulerHealth: s.o.SchedulerHealth, Logger: s.o.Logger.Named("page")}), s.o.Logger))
	// The full metrics, from one gather a second however many scrape: a
	// scrape whose client gave up leaves nothing behind.
	var metrics http.Handler = s.o.Metrics
	if s.gatherer() != nil {
		all := &cell[[]byte]{what: "metrics_all", ttl: time.Second, failTTL: time.Second, timeout: metricsTimeout,
			fetch: s.gatherAll}
		metrics = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { serveMetrics(w, r, all) })
	}
	op.handle("GET /metrics", metrics)
	admin := s.o.Admin
	if admin == nil {
		admin = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			writeError(w, http.StatusNotFound, "no such endpoint: "+r.Method+" "+r.URL.Path)
		})
	}
	op.handle(AdminPrefix, admin)
	if rl, ok := s.o.Admin.(RouteLister); ok {
		op.routes = append(op.routes, rl.Routes()...)
	}
	// Unauthenticated, for probes: says only that the process is up.
	op.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"ok": true})
	})
	op.handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no such endpoint: "+r.Method+" "+r.URL.Path)
	}))
	return op
}

func (op *operator) handle(pattern string, h http.Handler) {
	op.mux.Handle(pattern, h)
	op.routes = append(op.routes, pattern)
}

// ServeHTTP authenticates, then serves. With tokens configured every
// route but /healthz takes "Authorization: Bearer <token>"; the matching
// token's name goes into the request's context for the audit log.
func (op *operator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name := DefaultOperatorName
	if len(op.tokens) > 0 && !(r.Method == http.MethodGet && r.URL.Path == "/healthz") {
		var ok bool
		if name, ok = op.authenticate(r); !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="pacer operator"`)
			writeError(w, http.StatusUnauthorized, "Authorization: Bearer <operator token> is required")
			return
		}
	}
	op.mux.ServeHTTP(w, r.WithContext(actor.With(r.Context(), name)))
}

// authenticate compares the presented token's digest with every
// configured one, all of them whatever matches, so the time taken says
// nothing about which token (or how much of one) was right.
func (op *operator) authenticate(r *http.Request) (string, bool) {
	token, _ := bearer(r)
	got := sha256.Sum256([]byte(token))
	name, found := "", 0
	for _, t := range op.tokens {
		if subtle.ConstantTimeCompare(got[:], t.sum[:]) == 1 {
			name, found = t.name, 1
		}
	}
	return name, found == 1 && token != ""
}

// Operator is the operator listener's handler (SPEC §7): serve it on
// PACER_ADMIN_ADDR, never on the public listener.
func (s *Server) Operator() http.Handler { return s.op }

// OperatorRoutes lists the operator listener's route patterns, the admin
// API's included when Options.Admin is a RouteLister.
func (s *Server) OperatorRoutes() []string { return slices.Clone(s.op.routes) }

// PublicRoutes lists the public listener's route patterns.
func (s *Server) PublicRoutes() []string { return slices.Clone(s.routes) }
