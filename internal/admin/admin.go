// Package admin is the operator's JSON API (SPEC §7), served under
// /api/admin/ on the operator listener. It does not authenticate: the
// listener does (PACER_OPERATOR_TOKEN) and puts the token's name in the
// request's context (internal/actor), which the audit log records. Every
// handler reads its input, calls the one operation of internal/operate
// that the CLI calls too, and writes the outcome; no rule lives here.
package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/pacer-dev/pacer/internal/operate"
	"github.com/pacer-dev/pacer/internal/store"
)

// Prefix is where the admin API is served.
const Prefix = "/api/admin/"

// MaxBody bounds a request body.
const MaxBody = 64 << 10

// Options configure New.
type Options struct {
	// Operate runs the operations (its Store is required; its Temporal
	// client is needed by pause, resume and backfill).
	Operate *operate.Service
	// Logger logs failures that are not the caller's (nil: none).
	Logger *zap.Logger
}

// New returns the admin API's handler. Mount it at Prefix behind the
// operator listener's authentication. The handler lists its route patterns
// (Routes() []string), so the listener's walk of every route for its token
// covers the admin API too.
func New(o Options) http.Handler {
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	h := &handler{op: o.Operate, log: o.Logger}
	mux := http.NewServeMux()
	for _, r := range h.routes() {
		mux.HandleFunc(r.pattern, r.fn)
	}
	mux.HandleFunc(Prefix, func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no such admin route: see the README's admin API section")
	})
	return routed{h.auditRefusals(mux)}
}

// auditRefusals keeps an audit entry of every change refused (a 4xx
// answer to anything but a read), as the token's name (issue 41.13: a
// refused attempt used to leave no trace), unless the operation audited
// the refusal itself. The entry names the route and the reason, never
// the body.
func (h *handler) auditRefusals(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			next.ServeHTTP(w, r)
			return
		}
		rec := &refusalWriter{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		if rec.status < 400 || rec.status >= 500 || rec.audited {
			return
		}
		via := r.Pattern
		if via == "" || via == Prefix {
			via = r.Method + " " + Prefix + "…" // no such route
		}
		err := h.op.RecordRefusal(context.WithoutCancel(r.Context()), operate.Refusal{Via: via, Path: clip(r.URL.Path),
			Status: rec.status, Error: rec.msg})
		if err != nil {
			h.log.Error("admin.refusal_unrecorded", zap.String("method", r.Method), zap.String("path", r.URL.Path), zap.Error(err))
		}
	})
}

// refusalWriter keeps the status and the error message of an answer.
type refusalWriter struct {
	http.ResponseWriter
	status int
	msg    string
	// audited says the operation audited its refusal itself.
	audited bool
}

func (w *refusalWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *refusalWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// routed is the admin mux with its route patterns.
type routed struct{ http.Handler }

// Routes lists the patterns ("METHOD /path/{id}").
func (routed) Routes() []string {
	var out []string
	for _, r := range Routes() {
		out = append(out, r.Method+" "+r.Path)
	}
	return out
}

// Route is one route of the API, for the listener's tests that walk them.
type Route struct {
	Method, Path string
}

// Routes lists every route, with {id} where a path takes one.
func Routes() []Route {
	var out []Route
	for _, r := range (&handler{}).routes() {
		method, path, _ := strings.Cut(r.pattern, " ")
		out = append(out, Route{Method: method, Path: path})
	}
	return out
}

type route struct {
	pattern string
	fn      http.HandlerFunc
}

type handler struct {
	op  *operate.Service
	log *zap.Logger
}

func (h *handler) routes() []route {
	return []route{
		{"GET " + Prefix + "subscribers", h.listSubscribers},
		{"POST " + Prefix + "subscribers", h.createSubscriber},
		{"GET " + Prefix + "subscribers/{id}", h.getSubscriber},
		{"PATCH " + Prefix + "subscribers/{id}", h.updateSubscriber},
		{"DELETE " + Prefix + "subscribers/{id}", h.deleteSubscriber},
		{"POST " + Prefix + "subscribers/{id}/disable", h.disableSubscriber},
		{"POST " + Prefix + "subscribers/{id}/enable", h.enableSubscriber},
		{"POST " + Prefix + "subscribers/{id}/rotate-secret", h.rotateSecret},
		{"POST " + Prefix + "subscribers/{id}/reissue-pull-token", h.reissuePullToken},
		{"GET " + Prefix + "subscribers/{id}/deliveries", h.subscriberDeliveries},
		{"POST " + Prefix + "deliveries/recover", h.recoverDeliveries},
		{"GET " + Prefix + "deliveries/{id}", h.getDelivery},
		{"POST " + Prefix + "deliveries/{id}/redeliver", h.redeliver},
		{"GET " + Prefix + "audit", h.audit},
		{"POST " + Prefix + "scheduler/pause", h.pause},
		{"POST " + Prefix + "scheduler/resume", h.resume},
		{"POST " + Prefix + "scheduler/backfill", h.backfill},
		{"POST " + Prefix + "scheduler/skip", h.skip},
		{"PUT " + Prefix + "agents", h.putAgents},
		{"DELETE " + Prefix + "agents/{stxAddress}", h.deleteAgent},
		{"PUT " + Prefix + "claims", h.putClaims},
		{"PUT " + Prefix + "rounds/{id}", h.putRound},
	}
}

func (h *handler) listSubscribers(w http.ResponseWriter, r *http.Request) {
	subs, err := h.op.Subscribers(r.Context())
	h.reply(w, r, http.StatusOK, map[string]any{"subscribers": subs}, err)
}

type createRequest struct {
	URL    string   `json:"url"`
	Events []string `json:"events"`
	Tokens []string `json:"tokens"`
	Agents []string `json:"agents"`
}

func (h *handler) createSubscriber(w http.ResponseWriter, r *http.Request) {
	var in createRequest
	if !h.decode(w, r, &in, false) {
		return
	}
	sub, err := h.op.CreateSubscriber(r.Context(), operate.SubscriberInput(in))
	h.reply(w, r, http.StatusCreated, map[string]any{"subscriber": sub, "secret": sub.Secret, "pullToken": sub.PullToken}, err)
}

func (h *handler) getSubscriber(w http.ResponseWriter, r *http.Request) {
	sub, err := h.op.Subscriber(r.Context(), r.PathValue("id"))
	h.reply(w, r, http.StatusOK, sub, err)
}

func (h *handler) updateSubscriber(w http.ResponseWriter, r *http.Request) {
	var fields map[string]json.RawMessage
	if !h.decode(w, r, &fields, false) {
		return
	}
	var p operate.SubscriberPatch
	for name, raw := range fields {
		var err error
		switch name {
		case "url":
			var u string
			err = json.Unmarshal(raw, &u)
			p.URL = &u
		case "events":
			p.Events, err = list(raw)
		case "tokens":
			p.Tokens, err = list(raw)
		case "agents":
			p.Agents, err = list(raw)
		default:
			writeError(w, http.StatusBadRequest, fmt.Sprintf("unknown field %q: give url, events, tokens or agents", clip(name)))
			return
		}
		if err != nil {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("%s: want %s", name, map[bool]string{true: "a string", false: "a list of strings or null"}[name == "url"]))
			return
		}
	}
	sub, err := h.op.UpdateSubscriber(r.Context(), r.PathValue("id"), p)
	h.reply(w, r, http.StatusOK, sub, err)
}

// list reads a list field of a patch; null clears the filter.
func list(raw json.RawMessage) (*[]string, error) {
	var l []string
	if err := json.Unmarshal(raw, &l); err != nil {
		return nil, err
	}
	return &l, nil
}

func (h *handler) deleteSubscriber(w http.ResponseWriter, r *http.Request) {
	sub, err := h.op.DeleteSubscriber(r.Context(), r.PathValue("id"))
	h.reply(w, r, http.StatusOK, sub, err)
}

func (h *handler) disableSubscriber(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Reason string `json:"reason"`
	}
	if !h.decode(w, r, &in, true) {
		return
	}
	sub, err := h.op.DisableSubscriber(r.Context(), r.PathValue("id"), in.Reason)
	h.reply(w, r, http.StatusOK, sub, err)
}

func (h *handler) enableSubscriber(w http.ResponseWriter, r *http.Request) {
	if !h.decode(w, r, &struct{}{}, true) {
		return
	}
	sub, err := h.op.EnableSubscriber(r.Context(), r.PathValue("id"))
	h.reply(w, r, http.StatusOK, sub, err)
}

func (h *handler) rotateSecret(w http.ResponseWriter, r *http.Request) {
	if !h.decode(w, r, &struct{}{}, true) {
		return
	}
	rot, err := h.op.RotateSecret(r.Context(), r.PathValue("id"))
	h.reply(w, r, http.StatusOK, rot, err)
}

func (h *handler) reissuePullToken(w http.ResponseWriter, r *http.Request) {
	if !h.decode(w, r, &struct{}{}, true) {
		return
	}
	out, err := h.op.ReissuePullToken(r.Context(), r.PathValue("id"))
	h.reply(w, r, http.StatusOK, out, err)
}

func (h *handler) subscriberDeliveries(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, ok := intParam(w, q.Get("limit"), "limit", 100)
	if !ok {
		return
	}
	ds, err := h.op.Deliveries(r.Context(), r.PathValue("id"), q.Get("status"), int(limit))
	h.reply(w, r, http.StatusOK, map[string]any{"deliveries": ds}, err)
}

type recoverRequest struct {
	Subscriber string   `json:"subscriber"`
	Statuses   []string `json:"statuses"`
	From       string   `json:"from"`
	To         string   `json:"to"`
}

func (h *handler) recoverDeliveries(w http.ResponseWriter, r *http.Request) {
	var in recoverRequest
	if !h.decode(w, r, &in, false) {
		return
	}
	from, to, ok := rangeParams(w, in.From, in.To)
	if !ok {
		return
	}
	out, err := h.op.Recover(r.Context(), operate.RecoverInput{Subscriber: in.Subscriber, Statuses: in.Statuses, From: from, To: to})
	h.reply(w, r, http.StatusOK, out, err)
}

func (h *handler) getDelivery(w http.ResponseWriter, r *http.Request) {
	d, err := h.op.Delivery(r.Context(), r.PathValue("id"))
	h.reply(w, r, http.StatusOK, d, err)
}

func (h *handler) redeliver(w http.ResponseWriter, r *http.Request) {
	if !h.decode(w, r, &struct{}{}, true) {
		return
	}
	id := r.PathValue("id")
	err := h.op.Redeliver(r.Context(), id)
	h.reply(w, r, http.StatusOK, map[string]any{"id": id, "status": store.DeliveryPending}, err)
}

func (h *handler) audit(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	before, ok := intParam(w, q.Get("before"), "before", 0)
	if !ok {
		return
	}
	limit, ok := intParam(w, q.Get("limit"), "limit", 100)
	if !ok {
		return
	}
	since, ok := timeParam(w, q.Get("since"), "since")
	if !ok {
		return
	}
	entries, err := h.op.Audit(r.Context(), operate.AuditQuery{Before: before, Since: since, Target: q.Get("target"), Limit: int(limit)})
	var next *int64
	if len(entries) == int(limit) && len(entries) > 0 {
		last := entries[len(entries)-1].ID
		next = &last
	}
	h.reply(w, r, http.StatusOK, map[string]any{"entries": entries, "next": next}, err)
}

func (h *handler) pause(w http.ResponseWriter, r *http.Request) {
	var in operate.PauseInput
	if !h.decode(w, r, &in, false) {
		return
	}
	res, err := h.op.Pause(r.Context(), in)
	h.reply(w, r, http.StatusOK, map[string]any{"result": res}, err)
}

func (h *handler) resume(w http.ResponseWriter, r *http.Request) {
	var in operate.ResumeInput
	if !h.decode(w, r, &in, true) {
		return
	}
	res, err := h.op.Resume(r.Context(), in)
	h.reply(w, r, http.StatusOK, map[string]any{"result": res}, err)
}

func (h *handler) backfill(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Task string `json:"task"`
		From string `json:"from"`
		To   string `json:"to"`
	}
	if !h.decode(w, r, &in, false) {
		return
	}
	from, to, ok := rangeParams(w, in.From, in.To)
	if !ok {
		return
	}
	res, err := h.op.Backfill(r.Context(), operate.BackfillInput{Task: in.Task, From: from, To: to})
	h.reply(w, r, http.StatusOK, map[string]any{"result": res}, err)
}

// skip gives up on one owed occurrence: {"task":"rollup","nominalAt":RFC3339}.
func (h *handler) skip(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Task      string `json:"task"`
		NominalAt string `json:"nominalAt"`
	}
	if !h.decode(w, r, &in, false) {
		return
	}
	at, ok := timeParam(w, in.NominalAt, "nominalAt")
	if !ok {
		return
	}
	res, err := h.op.Skip(r.Context(), operate.SkipInput{Task: in.Task, NominalAt: at})
	h.reply(w, r, http.StatusOK, map[string]any{"result": res}, err)
}

// decode reads a JSON object body into v: sent as application/json,
// bounded, unknown fields and trailing data refused. emptyOK accepts no
// body at all.
func (h *handler) decode(w http.ResponseWriter, r *http.Request, v any, emptyOK bool) bool {
	// Every change asks for application/json, even with no body: a web
	// page can make a browser send a form or text/plain to a loopback
	// listener without asking first, never this.
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		writeError(w, http.StatusUnsupportedMediaType, "send Content-Type: application/json")
		return false
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	if err != nil {
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body larger than %d bytes", MaxBody))
		return false
	}
	if len(bytes.TrimSpace(body)) == 0 {
		if emptyOK {
			return true
		}
		writeError(w, http.StatusBadRequest, "a JSON object body is required")
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, "invalid JSON: "+jsonProblem(err))
		return false
	}
	if dec.More() {
		writeError(w, http.StatusBadRequest, "invalid JSON: trailing data after the object")
		return false
	}
	return true
}

// jsonProblem says what is wrong with a body without quoting it.
func jsonProblem(err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Sprintf("syntax error at byte %d", syn.Offset)
	case errors.As(err, &typ):
		return fmt.Sprintf("field %q: want %s", typ.Field, typ.Type)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return "unknown field " + clip(strings.TrimPrefix(err.Error(), "json: unknown field "))
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "the body ends too early"
	}
	return "not a JSON object of the expected shape"
}

func intParam(w http.ResponseWriter, raw, name string, def int64) (int64, bool) {
	if raw == "" {
		return def, true
	}
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || n < 0 {
		writeError(w, http.StatusBadRequest, name+": want a non-negative integer")
		return 0, false
	}
	return n, true
}

// rangeParams reads a range's from and to (RFC3339, either may be empty).
func rangeParams(w http.ResponseWriter, rawFrom, rawTo string) (from, to time.Time, ok bool) {
	if from, ok = timeParam(w, rawFrom, "from"); ok {
		to, ok = timeParam(w, rawTo, "to")
	}
	return from, to, ok
}

func timeParam(w http.ResponseWriter, raw, name string) (time.Time, bool) {
	if raw == "" {
		return time.Time{}, true
	}
	t, err := time.Parse(time.RFC3339, raw)
	if err != nil {
		writeError(w, http.StatusBadRequest, name+": want an RFC3339 time, like 2026-11-25T08:00:00Z")
		return time.Time{}, false
	}
	return t.UTC(), true
}

// reply writes v with status, or the error as the operations classify it.
// An error that is not the caller's is logged and answered without its
// text, which may name a database host.
func (h *handler) reply(w http.ResponseWriter, r *http.Request, status int, v any, err error) {
	if rec, ok := w.(*refusalWriter); ok && err != nil && !operate.Refused(err) {
		rec.audited = true // by the operation, or not a refusal
	}
	var inv *operate.Invalid
	switch {
	case err == nil:
		writeJSON(w, status, v)
	case errors.As(err, &inv):
		writeError(w, http.StatusBadRequest, inv.Error())
	case errors.Is(err, operate.ErrNotFound):
		writeError(w, http.StatusNotFound, "not found")
	case errors.Is(err, operate.ErrConflict):
		msg := err.Error()
		if i := strings.Index(msg, operate.ErrConflict.Error()+": "); i >= 0 {
			msg = msg[i+len(operate.ErrConflict.Error())+2:]
		}
		writeError(w, http.StatusConflict, msg)
	case errors.Is(err, operate.ErrNoTemporal):
		writeError(w, http.StatusServiceUnavailable, "this process has no Temporal client")
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		writeError(w, http.StatusServiceUnavailable, "timed out")
	default:
		h.log.Error("admin.failed", zap.String("method", r.Method), zap.String("path", r.URL.Path), zap.Error(err))
		writeError(w, http.StatusInternalServerError, "internal error (logged by the server)")
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	if rec, ok := w.(*refusalWriter); ok {
		rec.msg = msg
	}
	writeJSON(w, status, map[string]string{"error": msg})
}

func clip(s string) string {
	s = strings.ToValidUTF8(s, "?")
	if r := []rune(s); len(r) > 80 {
		return string(r[:80]) + "…"
	}
	return s
}
