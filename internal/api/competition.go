package api

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sync/singleflight"
	"golang.org/x/time/rate"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/competition"
	"github.com/pacer-dev/pacer/internal/hiro"
)

// TradeRequest is the body of POST /api/competition/trades.
type TradeRequest struct {
	TxID string `json:"txid"`
}

// TradeResponse answers it; which fields are set depends on the status.
type TradeResponse struct {
	Status string            `json:"status"`
	TxID   string            `json:"txid"`
	Swap   *competition.Swap `json:"swap,omitempty"`
	Reason string            `json:"reason,omitempty"`
	Detail string            `json:"detail,omitempty"`
	// Retryable says the same request may succeed later (an upstream or
	// database failure, a pending transaction).
	Retryable bool `json:"retryable,omitempty"`
}

var txidPattern = regexp.MustCompile(`^(0x)?[0-9a-fA-F]{64}$`)

// Fast path limits (SPEC §5.6).
const (
	// fastPathDeadline is how long one request may take: its answer comes
	// before the API's own 10 s request deadline.
	fastPathDeadline = 9 * time.Second
	// DefaultFastPathPerMinute is each client address's requests a minute.
	DefaultFastPathPerMinute = 30
	// DefaultFastPathPerSecond is the fast-path requests the process
	// verifies a second, all clients together: each costs the workers'
	// pool a few queries, so many clients (a /48 of IPv6 is 65,536 of
	// them) must not add up to more. Past it a request is a 503 that
	// touched nothing.
	DefaultFastPathPerSecond = 10
)

// trade is the agents' fast path: it verifies one transaction now through
// the same gates the sweep uses (SPEC §5.6), so an agent sees its swap
// without waiting for the next visit. It never waits for the Hiro budget:
// its verifier's client takes from the budget's fast lane, which refuses
// at once, and a refusal is a 429 with Retry-After. Concurrent requests for
// one txid share one verification; a client address gets
// Options.FastPathPerMinute requests a minute.
func (s *Server) trade(w http.ResponseWriter, r *http.Request) {
	if s.o.Verifier == nil {
		writeError(w, http.StatusServiceUnavailable, "trade verification is not configured")
		return
	}
	var req TradeRequest
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	var tooBig *http.MaxBytesError
	if err := dec.Decode(&req); err != nil {
		if errors.As(err, &tooBig) {
			writeError(w, http.StatusRequestEntityTooLarge, "request body too large")
			return
		}
		writeError(w, http.StatusBadRequest, `body must be {"txid": "0x…"}`)
		return
	}
	// Only white space may follow the object. dec.More alone would let a
	// stray ']' or '}' through.
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		if errors.As(err, &tooBig) {
			writeError(w, http.StatusRequestEntityTooLarge, "request body too large")
			return
		}
		writeError(w, http.StatusBadRequest, `body must be one JSON object {"txid": "0x…"}`)
		return
	}
	if !txidPattern.MatchString(req.TxID) {
		writeError(w, http.StatusBadRequest, "txid must be 64 hex characters, optionally prefixed by 0x")
		return
	}
	// The client's own limit first, then the process's: a request its
	// client's limit refuses spends nothing the others need.
	if ok, wait := s.fast.clients.allow(s.clientKey(r), time.Now()); !ok {
		tooMany(w, TradeResponse{Status: "rate_limited", TxID: req.TxID,
			Detail: "this address's fast-path requests a minute are spent"}, wait)
		return
	}
	if !s.fast.rate.Allow() {
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusServiceUnavailable, TradeResponse{Status: "rate_limited", TxID: req.TxID, Retryable: true,
			Detail: "the fast path is busy; retry shortly (the sweep finds the swap anyway)"})
		return
	}

	ctx, cancel := context.WithTimeout(r.Context(), fastPathDeadline)
	defer cancel()
	txid := "0x" + strings.ToLower(strings.TrimPrefix(strings.ToLower(req.TxID), "0x"))
	ch := s.fast.flight.DoChan(txid, func() (any, error) {
		// Detached from the first caller: the others share its answer even
		// if it goes away.
		vctx, vcancel := context.WithTimeout(context.WithoutCancel(ctx), fastPathDeadline)
		defer vcancel()
		return s.verifyTrade(vctx, txid), nil
	})
	var res tradeResult
	select {
	case <-ctx.Done():
		writeJSON(w, http.StatusBadGateway, TradeResponse{Status: "rejected", TxID: txid,
			Reason: string(competition.ReasonTxFetchFailed), Detail: "verification did not finish in time", Retryable: true})
		return
	case out := <-ch:
		res = out.Val.(tradeResult)
	}
	if res.retryAfter > 0 {
		tooMany(w, res.resp, res.retryAfter)
		return
	}
	writeJSON(w, res.code, res.resp)
}

// tradeResult is one verification's answer, shared by every request for
// the txid that came while it ran.
type tradeResult struct {
	code int
	resp TradeResponse
	// retryAfter is set when the fast path's budget (or Hiro) refused.
	retryAfter time.Duration
}

// verifyTrade runs the verify path and, when it inserted a swap, makes the
// sender's agent due now (debounced per agent).
func (s *Server) verifyTrade(ctx context.Context, txid string) tradeResult {
	o := s.o.Verifier.Verify(ctx, txid, competition.SourceAgent)
	res := tradeResult{code: o.HTTPStatus(), resp: TradeResponse{TxID: o.TxID}}
	resp := &res.resp
	var sender string
	switch o.Status {
	case competition.StatusInserted:
		resp.Status, resp.Swap = "verified", o.Swap
		sender = o.Swap.Sender
	case competition.StatusPending:
		resp.Status, resp.Retryable = "pending", true
	case competition.StatusAlreadyKnown:
		resp.Status = "already_verified"
		// Already known changes nothing: no hint, or a client replaying
		// known txids would spend the sweep's budget (SPEC §5.6).
		if sw, ok, err := s.o.Store.Swap(ctx, o.TxID); err == nil && ok {
			resp.Swap = &sw
		}
	default:
		resp.Status, resp.Reason, resp.Detail = "rejected", string(o.Reason), o.Detail
		resp.Retryable = res.code == http.StatusBadGateway || res.code == http.StatusServiceUnavailable
	}
	if o.Class() == pacer.ClassRateLimit {
		res.retryAfter = time.Minute
		if d, ok := hiro.RetryAfter(o.Err); ok {
			res.retryAfter = d
		}
		*resp = TradeResponse{Status: "rate_limited", TxID: o.TxID, Retryable: true,
			Detail: "the fast path's share of the Hiro budget is spent; the sweep will find the swap anyway"}
	}
	if o.Err != nil {
		s.o.Logger.Warn("api.trade_failed", zap.String("txid", o.TxID), zap.String("reason", string(o.Reason)), zap.Error(o.Err))
	}
	if sender != "" {
		// The agent has just traded: its next visit finds the rest.
		s.hintAgent(ctx, sender)
	}
	return res
}

// tooMany answers 429 with a Retry-After in whole seconds, at least one.
func tooMany(w http.ResponseWriter, resp TradeResponse, wait time.Duration) {
	resp.Retryable = true
	w.Header().Set("Retry-After", strconv.FormatInt(max(1, int64(math.Ceil(wait.Seconds()))), 10))
	writeJSON(w, http.StatusTooManyRequests, resp)
}

// fastPath is the fast path's shared state: each client's limit, the
// process's (a second's requests plus one client's burst, so one client
// spending its burst at once leaves the others a second's worth), and the
// verifications in flight.
type fastPath struct {
	clients *clientLimits
	rate    *rate.Limiter
	flight  singleflight.Group
}

func newFastPath(perMinute, perSecond int) *fastPath {
	if perMinute <= 0 {
		perMinute = DefaultFastPathPerMinute
	}
	if perSecond <= 0 {
		perSecond = DefaultFastPathPerSecond
	}
	return &fastPath{clients: newClientLimits(perMinute, defaultMaxClients),
		rate: rate.NewLimiter(rate.Limit(perSecond), perSecond+perMinute)}
}

func (s *Server) trackedTokens(w http.ResponseWriter, r *http.Request) {
	tokens, err := s.trackedSet(r.Context())
	if err != nil {
		s.dbError(w, err)
		return
	}
	cacheFor(w, readMaxAge)
	writeJSON(w, http.StatusOK, map[string]any{
		"tokens": tokens,
		"static": s.o.Catalog.StaticBase(),
	})
}
