package api

import (
	"crypto/subtle"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/pacer-dev/pacer/internal/catalog"
	"github.com/pacer-dev/pacer/internal/rollup"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/internal/webhook"
)

// Bounds of GET /api/rollups: the span one request may cover per period,
// and the rows it may return (an unfiltered week of hours with many agents
// is already large; narrow it or filter by subject).
const (
	MaxHourRange  = 7 * 24 * time.Hour
	MaxDayRange   = 366 * 24 * time.Hour
	MaxRollupRows = 10000
	// RollupsMaxAge is how long clients and shared caches may reuse an
	// answer of GET /api/rollups.
	RollupsMaxAge  = time.Minute
	rollupsPattern = "GET /api/rollups"
	pullPattern    = "GET /api/deliveries/{id}"
)

// routeRollups adds the rollup and delivery endpoints (SPEC §7, §10).
func (s *Server) routeRollups() {
	s.mux.HandleFunc(rollupsPattern, s.rollups)
	s.mux.HandleFunc(pullPattern, s.pullDelivery)
}

// RollupsResponse answers GET /api/rollups.
type RollupsResponse struct {
	Period  string         `json:"period"`
	From    time.Time      `json:"from"`
	To      time.Time      `json:"to"`
	Rollups []store.Rollup `json:"rollups"`
}

// ParseRollupQuery validates GET /api/rollups's parameters:
// period=hour|day, from and to (RFC3339, from before to, within the
// period's maximum range), and at most one of token or agent. The result
// selects periods that start in [from, to).
func ParseRollupQuery(raw string) (store.RollupQuery, error) {
	q, err := url.ParseQuery(raw)
	if err != nil {
		return store.RollupQuery{}, fmt.Errorf("malformed query string")
	}
	for key, vs := range q {
		switch key {
		case "period", "from", "to", "token", "agent":
		default:
			return store.RollupQuery{}, fmt.Errorf("unknown parameter %q (use period, from, to, token or agent)", clip(key))
		}
		if len(vs) > 1 {
			return store.RollupQuery{}, fmt.Errorf("parameter %s given more than once", key)
		}
	}
	out := store.RollupQuery{Period: q.Get("period"), Limit: MaxRollupRows + 1}
	maxRange := MaxHourRange
	switch out.Period {
	case rollup.Hour:
	case rollup.Day:
		maxRange = MaxDayRange
	case "":
		return store.RollupQuery{}, fmt.Errorf("period is required (hour or day)")
	default:
		return store.RollupQuery{}, fmt.Errorf("period must be hour or day, not %q", clip(out.Period))
	}
	for _, p := range []struct {
		name string
		dst  *time.Time
	}{{"from", &out.From}, {"to", &out.To}} {
		v := q.Get(p.name)
		if v == "" {
			return store.RollupQuery{}, fmt.Errorf("%s is required (RFC3339, like 2026-11-02T00:00:00Z)", p.name)
		}
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return store.RollupQuery{}, fmt.Errorf("%s %q is not an RFC3339 time (like 2026-11-02T00:00:00Z)", p.name, clip(v))
		}
		*p.dst = t.UTC()
	}
	if !out.From.Before(out.To) {
		return store.RollupQuery{}, fmt.Errorf("from must be before to")
	}
	if out.To.Sub(out.From) > maxRange {
		return store.RollupQuery{}, fmt.Errorf("range longer than %s for period %s", maxRange, out.Period)
	}
	switch token, agent := q.Get("token"), q.Get("agent"); {
	case q.Has("token") && q.Has("agent"):
		return store.RollupQuery{}, fmt.Errorf("give token or agent, not both")
	case q.Has("token"):
		if !catalog.ValidTokenID(token) {
			return store.RollupQuery{}, fmt.Errorf("malformed token id %q", clip(token))
		}
		out.SubjectKind, out.Subject = rollup.KindToken, token
	case q.Has("agent"):
		if !catalog.ValidPrincipal(agent) {
			return store.RollupQuery{}, fmt.Errorf("malformed agent address %q", clip(agent))
		}
		out.SubjectKind, out.Subject = rollup.KindAgent, agent
	}
	return out, nil
}

func (s *Server) rollups(w http.ResponseWriter, r *http.Request) {
	q, err := ParseRollupQuery(r.URL.RawQuery)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	rows, err := s.o.Store.Rollups(r.Context(), q)
	if err != nil {
		s.dbError(w, err)
		return
	}
	if len(rows) > MaxRollupRows {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("more than %d rollups: narrow the range or filter by token or agent", MaxRollupRows))
		return
	}
	for i := range rows {
		rows[i].PeriodStart, rows[i].PeriodEnd, rows[i].ComputedAt = rows[i].PeriodStart.UTC(), rows[i].PeriodEnd.UTC(), rows[i].ComputedAt.UTC()
	}
	if rows == nil {
		rows = []store.Rollup{}
	}
	// Rollups change at most once an hour (recomputed until complete).
	cacheFor(w, RollupsMaxAge)
	writeJSON(w, http.StatusOK, RollupsResponse{Period: q.Period, From: q.From, To: q.To, Rollups: rows})
}

// dummySecret is compared against when there is no delivery, so that a
// missing id and a wrong secret take the same time.
var dummySecret = []byte(webhook.NewSecret())

// pullDelivery lets a subscriber fetch any of its deliveries, exhausted
// ones included, authenticated by its signing secret as a Bearer token
// (compared in constant time). 401 without a valid secret, 404 for an id
// that does not exist.
func (s *Server) pullDelivery(w http.ResponseWriter, r *http.Request) {
	token, ok := bearer(r)
	if !ok {
		w.Header().Set("WWW-Authenticate", `Bearer realm="pacer deliveries"`)
		writeError(w, http.StatusUnauthorized, "Authorization: Bearer <subscriber secret> is required")
		return
	}
	id := r.PathValue("id")
	var (
		d      store.Delivery
		secret string
		found  bool
	)
	if webhook.ValidDeliveryID(id) {
		var err error
		if d, secret, found, err = s.o.Store.DeliveryWithSecret(r.Context(), id); err != nil {
			s.dbError(w, err)
			return
		}
	}
	want := dummySecret
	if found {
		want = []byte(secret)
	}
	match := subtle.ConstantTimeCompare([]byte(token), want) == 1
	switch {
	case !found:
		writeError(w, http.StatusNotFound, "no such delivery")
	case !match:
		w.Header().Set("WWW-Authenticate", `Bearer realm="pacer deliveries", error="invalid_token"`)
		writeError(w, http.StatusUnauthorized, "the secret does not match this delivery's subscriber")
	default:
		// The record and its payload: the JSON document every attempt POSTs.
		d.PeriodStart, d.PeriodEnd, d.CreatedAt = d.PeriodStart.UTC(), d.PeriodEnd.UTC(), d.CreatedAt.UTC()
		d.NextAttemptAt, d.LastAttemptAt, d.DeliveredAt = utcPtr(d.NextAttemptAt), utcPtr(d.LastAttemptAt), utcPtr(d.DeliveredAt)
		writeJSON(w, http.StatusOK, d)
	}
}

func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" || strings.ContainsAny(token, " \t") {
		return "", false
	}
	return token, true
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}
