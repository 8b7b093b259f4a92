package api

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
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
	// PullPattern is the delivery pull route.
	PullPattern = "GET /api/deliveries/{id}"
)

// RollupsResponse answers GET /api/rollups.
type RollupsResponse struct {
	Period  string         `json:"period"`
	From    time.Time      `json:"from"`
	To      time.Time      `json:"to"`
	Rollups []store.Rollup `json:"rollups"`
	// CompleteThrough is SPEC §7's completeThrough: every swap with a
	// block time at or before it is in the ledger (null while unknown).
	CompleteThrough *time.Time `json:"completeThrough"`
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
	// Every period starts on a quarter hour (hours in UTC; days at
	// midnight in PACER_DAY_TZ, and every zone's offset is a multiple of
	// 15 minutes), so [from, to) selects what [ceil(from), ceil(to)) does.
	// Rounding up makes requests that differ by seconds one query and one
	// cache entry, instead of a query each.
	out.From, out.To = ceilQuarter(out.From), ceilQuarter(out.To)
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

// periodGrid is the grid every rollup period starts on.
const periodGrid = 15 * time.Minute

func ceilQuarter(t time.Time) time.Time {
	if f := t.Truncate(periodGrid); !f.Equal(t) {
		return f.Add(periodGrid)
	}
	return t
}

func (s *Server) rollups(w http.ResponseWriter, r *http.Request) {
	q, err := ParseRollupQuery(r.URL.RawQuery)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	rd := s.rollupsCache.get(q).get(r.Context())
	if !rd.Have {
		if rd.Err == nil {
			w.Header().Set("Retry-After", "1")
			writeClassError(w, http.StatusServiceUnavailable, "rollups unavailable", readingClass(rd))
			return
		}
		s.dbError(w, rd.Err)
		return
	}
	if rd.Value.code == http.StatusOK {
		// Rollups change at most once an hour (recomputed until complete).
		cacheFor(w, RollupsMaxAge)
	}
	w.Header().Set("Content-Type", "application/json")
	writeCached(w, r, rd.Value.code, rd.Value.body)
}

// rollupsAnswer is one encoded answer of GET /api/rollups.
type rollupsAnswer struct {
	code int
	body []byte
}

// fetchRollups runs one rollups query on the public reads' pool and
// encodes its answer.
func (s *Server) fetchRollups(ctx context.Context, q store.RollupQuery) (rollupsAnswer, error) {
	rows, err := s.reads().Rollups(ctx, q)
	if err != nil {
		return rollupsAnswer{}, err
	}
	var v any
	code := http.StatusOK
	if len(rows) > MaxRollupRows {
		code = http.StatusBadRequest
		v = ErrorBody{Error: fmt.Sprintf("more than %d rollups: narrow the range or filter by token or agent", MaxRollupRows)}
	} else {
		for i := range rows {
			rows[i].PeriodStart, rows[i].PeriodEnd, rows[i].ComputedAt = rows[i].PeriodStart.UTC(), rows[i].PeriodEnd.UTC(), rows[i].ComputedAt.UTC()
		}
		if rows == nil {
			rows = []store.Rollup{}
		}
		v = RollupsResponse{Period: q.Period, From: q.From, To: q.To, Rollups: rows, CompleteThrough: s.completeThrough(ctx)}
	}
	body, err := json.Marshal(v)
	if err != nil {
		return rollupsAnswer{}, err
	}
	return rollupsAnswer{code: code, body: append(body, '\n')}, nil
}

// dummyPullHash is compared against when there is no delivery (or its
// subscriber has no pull token), so that every refusal does the same work.
var dummyPullHash = webhook.HashPullToken(webhook.NewPullToken())

// pullRefused is the one answer to an unknown id and to a wrong token
// (SPEC §10.2): which of the two it was is not the caller's to learn.
const pullRefused = "no delivery with this id for this token"

// pullDelivery lets a subscriber fetch any of its deliveries, exhausted
// ones included, authenticated by its pull token as a Bearer token (its
// SHA-256 compared in constant time with the stored hash). The signing
// secret is not a credential here: a captured pull must not let anyone
// forge the subscriber's webhooks. 401 without a Bearer token at all; 404,
// the same body, for an unknown id and for a wrong token.
func (s *Server) pullDelivery(w http.ResponseWriter, r *http.Request) {
	token, ok := bearer(r)
	if !ok {
		w.Header().Set("WWW-Authenticate", `Bearer realm="pacer deliveries"`)
		writeError(w, http.StatusUnauthorized, "Authorization: Bearer <pull token> is required")
		return
	}
	id := r.PathValue("id")
	var (
		d     store.Delivery
		want  []byte
		found bool
	)
	if webhook.ValidDeliveryID(id) {
		var err error
		if d, want, found, err = s.reads().DeliveryForPull(r.Context(), id); err != nil {
			s.dbError(w, err)
			return
		}
	}
	if len(want) == 0 {
		want = dummyPullHash
	}
	match := subtle.ConstantTimeCompare(webhook.HashPullToken(token), want) == 1
	if !found || !match {
		writeError(w, http.StatusNotFound, pullRefused)
		return
	}
	// The record and its payload: the JSON document every attempt POSTs.
	d.PeriodStart, d.PeriodEnd, d.CreatedAt = d.PeriodStart.UTC(), d.PeriodEnd.UTC(), d.CreatedAt.UTC()
	d.NextAttemptAt, d.LastAttemptAt, d.DeliveredAt = utcPtr(d.NextAttemptAt), utcPtr(d.LastAttemptAt), utcPtr(d.DeliveredAt)
	d.LastStatus, d.LastError = publicAttempt(d.LastStatus, d.LastError)
	writeJSON(w, http.StatusOK, d)
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

// publicAttempt is what a pull shows of the last attempt: the HTTP status
// if the endpoint answered one, else only that there was no answer. A
// refused connection, a DNS failure, a timeout and a destination the
// network policy refused all read alike, so deliveries cannot be used to
// tell open ports from closed ones (SPEC §10.2).
func publicAttempt(status *int, lastError string) (*int, string) {
	switch {
	case status != nil:
		return status, "HTTP " + strconv.Itoa(*status)
	case lastError != "":
		return nil, "no HTTP answer"
	}
	return nil, ""
}
