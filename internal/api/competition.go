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

// trade is the agents' fast path in pacer's own encoding.
func (s *Server) trade(w http.ResponseWriter, r *http.Request) {
	writeNativeTrade(w, s.fastPathAnswer(r, true))
}

// fastKind is how a fast-path request ended, whatever the encoding.
type fastKind int

const (
	fastVerified fastKind = iota // v holds the verification
	fastUnconfigured
	fastTooBig
	fastBadBody
	fastBadTxID
	fastClientLimited // wait is the client's own limit's
	fastBusy          // the process's cap
	fastTimedOut      // the verification outlived the request's deadline
)

// fastAnswer is the fast path's answer before it is encoded: pacer's
// encoding and the landing page's (SPEC §7.1) write the same decision.
type fastAnswer struct {
	kind fastKind
	txid string
	msg  string
	wait time.Duration
	v    verification
}

// fastPathAnswer is the agents' fast path: it verifies one transaction now
// through the same gates the sweep uses (SPEC §5.6), so an agent sees its
// swap without waiting for the next visit. It never waits for the Hiro
// budget: its verifier's client takes from the budget's fast lane, which
// refuses at once, and a refusal is a 429 with Retry-After. Concurrent
// requests for one txid share one verification; a client address gets
// Options.FastPathPerMinute requests a minute. strict refuses fields
// other than txid in the body (pacer's own encoding; the landing page
// ignored them).
func (s *Server) fastPathAnswer(r *http.Request, strict bool) fastAnswer {
	if s.o.Verifier == nil {
		return fastAnswer{kind: fastUnconfigured}
	}
	// The client's own limit before anything else, the body's decoding
	// included, then the process's: a request its client's limit refuses
	// spends nothing the others need, malformed or not.
	if ok, wait := s.fast.clients.allow(s.clientKey(r), time.Now()); !ok {
		return fastAnswer{kind: fastClientLimited, wait: wait}
	}
	var req TradeRequest
	dec := json.NewDecoder(r.Body)
	if strict {
		dec.DisallowUnknownFields()
	}
	var tooBig *http.MaxBytesError
	if err := dec.Decode(&req); err != nil {
		if errors.As(err, &tooBig) {
			return fastAnswer{kind: fastTooBig}
		}
		return fastAnswer{kind: fastBadBody, msg: `body must be {"txid": "0x…"}`}
	}
	// Only white space may follow the object. dec.More alone would let a
	// stray ']' or '}' through.
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		if errors.As(err, &tooBig) {
			return fastAnswer{kind: fastTooBig}
		}
		return fastAnswer{kind: fastBadBody, msg: `body must be one JSON object {"txid": "0x…"}`}
	}
	if !txidPattern.MatchString(req.TxID) {
		return fastAnswer{kind: fastBadTxID, msg: "txid must be 64 hex characters, optionally prefixed by 0x"}
	}
	if !s.fast.rate.Allow() {
		return fastAnswer{kind: fastBusy, txid: req.TxID, wait: time.Second}
	}

	ctx, cancel := context.WithTimeout(r.Context(), fastPathDeadline)
	defer cancel()
	txid := "0x" + strings.TrimPrefix(strings.ToLower(req.TxID), "0x")
	ch := s.fast.flight.DoChan(txid, func() (any, error) {
		// Detached from the first caller: the others share its answer even
		// if it goes away.
		vctx, vcancel := context.WithTimeout(context.WithoutCancel(ctx), fastPathDeadline)
		defer vcancel()
		return s.verifyTrade(vctx, txid), nil
	})
	select {
	case <-ctx.Done():
		return fastAnswer{kind: fastTimedOut, txid: txid}
	case out := <-ch:
		return fastAnswer{kind: fastVerified, txid: txid, v: out.Val.(verification)}
	}
}

// verification is one verification's answer, shared by every request for
// the txid that came while it ran.
type verification struct {
	o competition.Outcome
	// existing is the ledger's row of an already known txid (nil if it
	// could not be read).
	existing *competition.Swap
	// retryAfter is set when the fast path's budget (or Hiro) refused.
	retryAfter time.Duration
}

// verifyTrade runs the verify path and, when it inserted a swap, makes the
// sender's agent due now (debounced per agent).
func (s *Server) verifyTrade(ctx context.Context, txid string) verification {
	v := verification{o: s.o.Verifier.Verify(ctx, txid, competition.SourceAgent)}
	o := v.o
	if o.Status == competition.StatusAlreadyKnown {
		// Already known changes nothing: no hint, or a client replaying
		// known txids would spend the sweep's budget (SPEC §5.6).
		if sw, ok, err := s.o.Store.Swap(ctx, o.TxID); err == nil && ok {
			v.existing = &sw
		}
	}
	if o.Class() == pacer.ClassRateLimit {
		v.retryAfter = time.Minute
		if d, ok := hiro.RetryAfter(o.Err); ok {
			v.retryAfter = d
		}
	}
	if o.Err != nil {
		s.o.Logger.Warn("api.trade_failed", zap.String("txid", o.TxID), zap.String("reason", string(o.Reason)), zap.Error(o.Err))
	}
	if o.Status == competition.StatusInserted {
		// The agent has just traded: its next visit finds the rest.
		s.hintAgent(ctx, o.Swap.Sender)
	}
	return v
}

// writeNativeTrade writes a fast-path answer in pacer's encoding.
func writeNativeTrade(w http.ResponseWriter, a fastAnswer) {
	switch a.kind {
	case fastUnconfigured:
		writeError(w, http.StatusServiceUnavailable, "trade verification is not configured")
		return
	case fastTooBig:
		writeError(w, http.StatusRequestEntityTooLarge, "request body too large")
		return
	case fastBadBody, fastBadTxID:
		writeError(w, http.StatusBadRequest, a.msg)
		return
	case fastClientLimited:
		tooMany(w, TradeResponse{Status: "rate_limited", TxID: a.txid,
			Detail: "this address's fast-path requests a minute are spent"}, a.wait)
		return
	case fastBusy:
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusServiceUnavailable, TradeResponse{Status: "rate_limited", TxID: a.txid, Retryable: true,
			Detail: "the fast path is busy; retry shortly (the sweep finds the swap anyway)"})
		return
	case fastTimedOut:
		writeJSON(w, http.StatusBadGateway, TradeResponse{Status: "rejected", TxID: a.txid,
			Reason: string(competition.ReasonTxFetchFailed), Detail: "verification did not finish in time", Retryable: true})
		return
	}
	o := a.v.o
	if a.v.retryAfter > 0 {
		tooMany(w, TradeResponse{Status: "rate_limited", TxID: o.TxID,
			Detail: "the fast path's share of the Hiro budget is spent; the sweep will find the swap anyway"}, a.v.retryAfter)
		return
	}
	code := o.HTTPStatus()
	resp := TradeResponse{TxID: o.TxID}
	switch o.Status {
	case competition.StatusInserted:
		resp.Status, resp.Swap = "verified", o.Swap
	case competition.StatusPending:
		resp.Status, resp.Retryable = "pending", true
	case competition.StatusAlreadyKnown:
		resp.Status, resp.Swap = "already_verified", a.v.existing
	default:
		resp.Status, resp.Reason, resp.Detail = "rejected", string(o.Reason), o.Detail
		resp.Retryable = code == http.StatusBadGateway || code == http.StatusServiceUnavailable
	}
	writeJSON(w, code, resp)
}

// retryAfterSeconds is a wait in whole seconds, at least one.
func retryAfterSeconds(wait time.Duration) int64 {
	return max(1, int64(math.Ceil(wait.Seconds())))
}

// tooMany answers 429 with a Retry-After in whole seconds, at least one.
func tooMany(w http.ResponseWriter, resp TradeResponse, wait time.Duration) {
	resp.Retryable = true
	w.Header().Set("Retry-After", strconv.FormatInt(retryAfterSeconds(wait), 10))
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
