package api

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"regexp"

	"go.uber.org/zap"

	"github.com/pacer-dev/pacer/internal/competition"
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

// trade is the agents' fast path: it verifies one transaction now through
// the same path the sweep uses (SPEC §5.7), so an agent sees its swap
// without waiting for the next pass.
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
	o := s.o.Verifier.Verify(r.Context(), req.TxID, competition.SourceAgent)
	resp := TradeResponse{TxID: o.TxID}
	code := o.HTTPStatus()
	switch o.Status {
	case competition.StatusInserted:
		resp.Status, resp.Swap = "verified", o.Swap
	case competition.StatusPending:
		resp.Status, resp.Retryable = "pending", true
	case competition.StatusAlreadyKnown:
		resp.Status = "already_verified"
		if sw, ok, err := s.o.Store.Swap(r.Context(), o.TxID); err == nil && ok {
			resp.Swap = &sw
		}
	default:
		resp.Status, resp.Reason, resp.Detail = "rejected", string(o.Reason), o.Detail
		resp.Retryable = code == http.StatusBadGateway || code == http.StatusServiceUnavailable
	}
	if o.Err != nil {
		s.o.Logger.Warn("api.trade_failed", zap.String("txid", o.TxID), zap.String("reason", string(o.Reason)), zap.Error(o.Err))
	}
	writeJSON(w, code, resp)
}

func (s *Server) trackedTokens(w http.ResponseWriter, r *http.Request) {
	traded, err := s.o.Store.TradedTokens(r.Context(), 50)
	if err != nil {
		s.dbError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"tokens": s.o.Catalog.TokenSet(traded),
		"static": s.o.Catalog.StaticBase(),
	})
}
