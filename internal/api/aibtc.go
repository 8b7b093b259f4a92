package api

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/pacer-dev/pacer/internal/api/aibtc"
	"github.com/pacer-dev/pacer/internal/competition"
	"github.com/pacer-dev/pacer/internal/registry"
	"github.com/pacer-dev/pacer/internal/store"
)

// The competition's own clients' routes (SPEC §7.1): the landing page's
// contract (package aibtc) under aibtc.Prefix, a second encoding of the
// reads above (the same queries, the same HTTP caching) and of the fast
// path (the same decision, fastPathAnswer).

const (
	// aibtcDocsMaxAge is how long a ?docs=1 answer may be reused: it
	// changes with a release.
	aibtcDocsMaxAge = time.Hour
	// aibtcRetryAfter is what a 503 of the contract tells the client to
	// wait (seconds), and a 502's Retry-After.
	aibtcRetryAfter = 2
	// RoundsMaxAge is how long a rounds answer may be reused: a finalized
	// round never changes, the list gains one a round.
	RoundsMaxAge = time.Minute
)

func (s *Server) newAIBTC() {
	get := "GET " + aibtc.Prefix
	s.handleCached(get+aibtc.RouteTrades, s.aibtcGET(aibtc.RouteTrades, s.aibtcTrades))
	s.handle("POST "+aibtc.Prefix+aibtc.RouteTrades, s.aibtcSubmit)
	s.handleCached(get+aibtc.RouteStatus, s.aibtcGET(aibtc.RouteStatus, s.aibtcStatus))
	s.handleCached(get+aibtc.RouteAllowlist, s.aibtcGET(aibtc.RouteAllowlist, s.aibtcAllowlist))
	s.handleCached(get+aibtc.RouteRounds, s.aibtcGET(aibtc.RouteRounds, s.aibtcRounds))
	s.handleCached(get+aibtc.RouteRound, s.aibtcGET(aibtc.RouteRound, s.aibtcRound))
	s.handleCached(get+aibtc.RouteResult, s.aibtcGET(aibtc.RouteResult, s.aibtcResult))
}

// aibtcGET answers ?docs=1 with the route's description, encoded once and
// without touching the database, and anything else with h.
func (s *Server) aibtcGET(route string, h http.HandlerFunc) http.HandlerFunc {
	doc, ok := aibtc.Docs(route)
	if !ok {
		panic("api: no aibtc docs for " + route) // a programming error: a route without its description
	}
	enc, err := encodeRead(doc)
	if err != nil {
		panic("api: encode aibtc docs: " + err.Error())
	}
	return func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("docs") == "1" {
			writeEncoded(w, r, enc, aibtcDocsMaxAge)
			return
		}
		h(w, r)
	}
}

func isAIBTC(r *http.Request) bool { return strings.HasPrefix(r.URL.Path, aibtc.Prefix+"/") }

// refuseRead answers a public read its bounds refused (429: the client's
// own limit; 503: the process's), in the dialect of the route asked for.
func (s *Server) refuseRead(w http.ResponseWriter, r *http.Request, code int, msg string, wait time.Duration) {
	secs := retryAfterSeconds(wait)
	w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
	switch {
	case !isAIBTC(r):
		writeError(w, code, msg)
	case code == http.StatusTooManyRequests:
		writeJSON(w, code, aibtc.Limited{Error: msg, RetryAfter: secs})
	default:
		writeJSON(w, code, aibtc.Unavailable{Error: msg, Code: aibtc.CodeBusy, Retryable: true, RetryAfter: secs})
	}
}

// aibtcUnavailable is the contract's 503 for a read the database failed.
func (s *Server) aibtcUnavailable(w http.ResponseWriter, err error) {
	s.o.Logger.Error("api.database_error", zap.Error(err))
	w.Header().Set("Retry-After", strconv.Itoa(aibtcRetryAfter))
	writeJSON(w, http.StatusServiceUnavailable, aibtc.Unavailable{Error: "database unavailable",
		Code: aibtc.CodeDBUnavailable, Retryable: true, RetryAfter: aibtcRetryAfter})
}

// aibtcAddress reads a required address parameter; false when it answered
// the 400.
func aibtcAddress(w http.ResponseWriter, addr, example string) bool {
	if addr == "" || registry.CheckSTX(addr) != nil {
		writeJSON(w, http.StatusBadRequest, aibtc.BadRequest{
			Error:   "missing or invalid address: expected a Stacks mainnet address (SP… or SM…)",
			Example: aibtc.Prefix + example})
		return false
	}
	return true
}

// clampedInt reads an integer parameter as the landing page does: absent
// is def, out of [lo, hi] is clamped, not an integer is an error.
func clampedInt(v string, def, lo, hi int) (int, bool) {
	if v == "" {
		return def, true
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange && strings.TrimLeft(v, "+-0123456789") == "" {
			if strings.HasPrefix(v, "-") {
				return lo, true
			}
			return hi, true
		}
		return 0, false
	}
	return min(max(n, lo), hi), true
}

func (s *Server) aibtcTrades(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	addr := q.Get("address")
	if !aibtcAddress(w, addr, aibtc.RouteTrades+"?address=SP4DXVEC16FS6QR7RBKGWZYJKTXPC81W49W0ATJE") {
		return
	}
	limit, ok := clampedInt(q.Get("limit"), aibtc.DefaultTradesLimit, 1, aibtc.MaxTradesLimit)
	if !ok {
		writeJSON(w, http.StatusBadRequest, aibtc.BadRequest{Error: "invalid limit: expected an integer in [1, 200]"})
		return
	}
	var after *store.TradeKey
	if c := q.Get("cursor"); c != "" {
		k, err := aibtc.DecodeCursor(c)
		if err != nil {
			writeJSON(w, http.StatusBadRequest, aibtc.BadRequest{Error: err.Error()})
			return
		}
		after = &k
	}
	rows, next, err := s.tradesPage(r.Context(), addr, after, limit)
	if err != nil {
		s.aibtcUnavailable(w, err)
		return
	}
	resp := aibtc.Trades{Trades: make([]aibtc.Row, len(rows))}
	for i, t := range rows {
		resp.Trades[i] = aibtc.FromTrade(t)
	}
	if next != nil {
		c := aibtc.EncodeCursor(*next)
		resp.NextCursor = &c
	}
	s.writeRead(w, r, resp, ReadsMaxAge)
}

func (s *Server) aibtcStatus(w http.ResponseWriter, r *http.Request) {
	addr := r.URL.Query().Get("address")
	if !aibtcAddress(w, addr, aibtc.RouteStatus+"?address=SP4DXVEC16FS6QR7RBKGWZYJKTXPC81W49W0ATJE") {
		return
	}
	st, err := s.reads().AgentStatus(r.Context(), addr)
	if err != nil {
		s.aibtcUnavailable(w, err)
		return
	}
	resp := aibtc.FromStatus(addr, st)
	// A failure here leaves the field out and the status standing, as on
	// the landing page: the round is a bonus to the answer.
	res, err := s.reads().LatestRoundResult(r.Context(), addr)
	switch {
	case err != nil:
		s.o.Logger.Warn("api.latest_round_result_failed", zap.Error(err))
	case res != nil:
		latest := aibtc.FromResult(*res)
		resp.LatestRoundResult = &latest
	}
	s.writeRead(w, r, resp, ReadsMaxAge)
}

func (s *Server) aibtcAllowlist(w http.ResponseWriter, r *http.Request) {
	contracts := allowedContracts(s.o.Catalog)
	entries := make([]aibtc.Entry, len(contracts))
	for i, c := range contracts {
		entries[i] = aibtc.Entry{ContractID: c.ContractID, Functions: c.Functions}
	}
	s.writeRead(w, r, aibtc.NewAllowlist(entries, s.o.Catalog.ProviderAddress()), AllowlistMaxAge)
}

// aibtcSubmit is the fast path in the landing page's encoding.
func (s *Server) aibtcSubmit(w http.ResponseWriter, r *http.Request) {
	writeAIBTCTrade(w, s.fastPathAnswer(r, false))
}

// writeAIBTCTrade writes a fast-path answer as the landing page did (the
// client's documentation of competition_submit_trade).
func writeAIBTCTrade(w http.ResponseWriter, a fastAnswer) {
	refuse := func(code int, msg, reason string) {
		writeJSON(w, code, aibtc.Refusal{Error: msg, Code: reason, Retryable: false})
	}
	unavailable := func(code int, msg, reason string, wait int64) {
		w.Header().Set("Retry-After", strconv.FormatInt(wait, 10))
		writeJSON(w, code, aibtc.Unavailable{Error: msg, Code: reason, Retryable: true, RetryAfter: wait})
	}
	limited := func(msg string, wait time.Duration) {
		secs := retryAfterSeconds(wait)
		w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
		writeJSON(w, http.StatusTooManyRequests, aibtc.Limited{Error: msg, RetryAfter: secs})
	}
	switch a.kind {
	case fastUnconfigured:
		unavailable(http.StatusServiceUnavailable, "trade verification is not configured", aibtc.CodeBusy, 60)
		return
	case fastTooBig:
		refuse(http.StatusRequestEntityTooLarge, "request body too large", "body_too_large")
		return
	case fastBadBody, fastBadTxID:
		refuse(http.StatusBadRequest, a.msg, "invalid_request")
		return
	case fastClientLimited:
		limited("too many submissions from this address; slow down", a.wait)
		return
	case fastBusy:
		unavailable(http.StatusServiceUnavailable, "the fast path is busy; retry shortly (pacer's readers find the swap anyway)",
			aibtc.CodeBusy, retryAfterSeconds(a.wait))
		return
	case fastTimedOut:
		unavailable(http.StatusBadGateway, "verification did not finish in time", string(competition.ReasonTxFetchFailed), aibtcRetryAfter)
		return
	}
	o := a.v.o
	if a.v.retryAfter > 0 {
		limited("the fast path's share of the chain API is spent; pacer's readers will find the swap anyway", a.v.retryAfter)
		return
	}
	msg := o.Detail
	if msg == "" {
		msg = strings.ReplaceAll(string(o.Reason), "_", " ")
	}
	switch code := o.HTTPStatus(); {
	case o.Status == competition.StatusInserted:
		writeJSON(w, http.StatusOK, aibtc.FromSwap(*o.Swap))
	case o.Status == competition.StatusPending:
		writeJSON(w, http.StatusAccepted, aibtc.Accepted{Accepted: true,
			Note: "the transaction is not final on chain yet; retry in a few seconds"})
	case o.Status == competition.StatusAlreadyKnown:
		resp := aibtc.Conflict{Error: "transaction already verified for this competition", Code: aibtc.CodeAlreadyVerified}
		if a.v.existing != nil {
			row := aibtc.FromSwap(*a.v.existing)
			resp.ExistingRow = &row
		}
		writeJSON(w, http.StatusConflict, resp)
	case code == http.StatusBadGateway:
		unavailable(code, msg, string(o.Reason), aibtcRetryAfter)
	case code == http.StatusServiceUnavailable:
		unavailable(code, msg, string(o.Reason), aibtcRetryAfter)
	default:
		refuse(code, msg, string(o.Reason))
	}
}
