package api

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
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
	// hosts are the Host names it serves besides loopback ones.
	hosts []string
}

// ParseAdminHosts reads PACER_ADMIN_HOSTS: comma-separated host names or
// addresses (a port is ignored) the operator listener serves besides the
// loopback ones, such as the name of a tunnel or a proxy in front of it.
func ParseAdminHosts(raw string) ([]string, error) {
	var out []string
	for item := range strings.SplitSeq(raw, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		h := hostOnly(item)
		if h == "" || strings.ContainsAny(h, "/ @?#") {
			return nil, fmt.Errorf("%q is not a host name or address", item)
		}
		out = append(out, h)
	}
	return out, nil
}

// AddrHosts is the host of a listener's address when it names one (not an
// unspecified address such as 0.0.0.0 or an empty host): the operator
// listener serves the name it was told to listen on.
func AddrHosts(addr string) []string {
	h := hostOnly(addr)
	if a, err := netip.ParseAddr(h); h == "" || err == nil && a.IsUnspecified() {
		return nil
	}
	return []string{h}
}

// hostOnly is a Host header's or an address's host, lower case, without
// its port, brackets or a trailing dot.
func hostOnly(hostport string) string {
	h := hostport
	if host, _, err := net.SplitHostPort(hostport); err == nil {
		h = host
	}
	return strings.TrimSuffix(strings.ToLower(strings.Trim(h, "[]")), ".")
}

// servesHost says whether host (a Host header, or an Origin's host) is
// one the operator listener serves: localhost and names under it, a
// loopback address, or a configured host. Any other name may be an
// attacker's, rebound to this address (DNS rebinding).
func (op *operator) servesHost(host string) bool {
	h := hostOnly(host)
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	if a, err := netip.ParseAddr(h); err == nil && a.Unmap().IsLoopback() {
		return true
	}
	return slices.Contains(op.hosts, h)
}

// foreign says why a request may come from a page of another site (a
// browser names it in Origin and Sec-Fetch-Site) or through a name this
// listener does not serve, or "" when it may not.
func (op *operator) foreign(r *http.Request) string {
	if !op.servesHost(r.Host) {
		return "the Host is not one this listener serves (set PACER_ADMIN_HOSTS)"
	}
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return "a request from another site"
	}
	if origin := r.Header.Get("Origin"); origin != "" {
		u, err := url.Parse(origin)
		if err != nil || u.Host == "" || !op.servesHost(u.Host) {
			return "a request from another site"
		}
	}
	return ""
}

type tokenDigest struct {
	name string
	sum  [sha256.Size]byte
}

func (s *Server) newOperator() *operator {
	op := &operator{mux: http.NewServeMux(), hosts: s.o.AdminHosts}
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
	metrics := s.o.Metrics
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

// ServeHTTP refuses foreign requests, authenticates, then serves. Every
// route but /healthz (which says only that the process is up) is refused
// a Host it does not serve and a browser's request from another site,
// token or not: a DNS-rebinding page cannot drive it. With tokens
// configured every such route takes "Authorization: Bearer <token>"; the
// matching token's name goes into the request's context for the audit log.
func (op *operator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	probe := r.Method == http.MethodGet && r.URL.Path == "/healthz"
	if why := op.foreign(r); why != "" && !probe {
		writeError(w, http.StatusForbidden, why)
		return
	}
	name := DefaultOperatorName
	if len(op.tokens) > 0 && !probe {
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
