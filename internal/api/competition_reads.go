package api

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/pacer-dev/pacer/internal/catalog"
	"github.com/pacer-dev/pacer/internal/competition"
	"github.com/pacer-dev/pacer/internal/registry"
	"github.com/pacer-dev/pacer/internal/store"
)

// The competition's reads on the public listener (SPEC §7): the
// leaderboard, the trades list, an agent's status and the allowlist.
// Each answer carries an ETag (304 on If-None-Match) and Cache-Control;
// browsers on PACER_CORS_ORIGINS may read them.

const (
	throughTTL     = 5 * time.Second
	throughTimeout = 5 * time.Second
	// ReadsMaxAge is how long clients may reuse a trades or status answer.
	ReadsMaxAge = 5 * time.Second
	// AllowlistMaxAge is how long clients may reuse the allowlist, which
	// changes only with a release.
	AllowlistMaxAge = 5 * time.Minute
)

type competitionReads struct {
	board   *cell[*board]
	through *cell[*int64]
	origins map[string]bool
}

func (s *Server) newCompetition() {
	s.comp = &competitionReads{origins: map[string]bool{}}
	for _, o := range s.o.CORSOrigins {
		s.comp.origins[o] = true
	}
	s.comp.board = &cell[*board]{what: "leaderboard", ttl: boardTTL, failTTL: time.Second, timeout: boardTimeout,
		staleOK: true, fetch: s.fetchBoard, onFailure: s.logBoardFailure}
	s.comp.through = &cell[*int64]{what: "complete_through", ttl: throughTTL, failTTL: time.Second, timeout: throughTimeout,
		staleOK: true, fetch: func(ctx context.Context) (*int64, error) { return s.reads().PublishedCompleteThrough(ctx) },
		onFailure: func(err error) { s.o.Logger.Warn("api.complete_through_failed", zap.Error(err)) }}
	s.handleCached("GET /api/competition/leaderboard", s.leaderboard)
	s.handleCached("GET /api/competition/trades", s.tradesList)
	s.handleCached("GET /api/competition/status", s.agentStatus)
	s.handleCached("GET /api/competition/allowlist", s.allowlist)
	s.newAIBTC()
}

// ParseCORSOrigins reads PACER_CORS_ORIGINS: comma-separated origins
// (scheme://host[:port]) whose browsers may read the public API.
func ParseCORSOrigins(raw string) ([]string, error) {
	var out []string
	for _, o := range strings.Split(raw, ",") {
		o = strings.TrimSpace(o)
		if o == "" {
			continue
		}
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.RawQuery != "" || u.User != nil {
			return nil, fmt.Errorf("origin %q: want scheme://host[:port], like https://example.com", clip(o))
		}
		out = append(out, o)
	}
	return out, nil
}

// allowOrigin lets a browser on a configured origin read the answer; a
// preflight (OPTIONS) from one is answered here. handled is true when the
// request needs nothing more.
func (s *Server) allowOrigin(w http.ResponseWriter, r *http.Request) (handled bool) {
	origin := r.Header.Get("Origin")
	h := w.Header()
	h.Add("Vary", "Origin")
	if origin == "" || !s.comp.origins[origin] {
		return false
	}
	h.Set("Access-Control-Allow-Origin", origin)
	h.Set("Access-Control-Expose-Headers", "ETag, Retry-After")
	if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
		h.Set("Access-Control-Allow-Methods", "GET, HEAD")
		h.Set("Access-Control-Allow-Headers", "If-None-Match")
		h.Set("Access-Control-Max-Age", "600")
		w.WriteHeader(http.StatusNoContent)
		return true
	}
	return false
}

// encodedRead is an answer encoded once, with its ETag.
type encodedRead struct {
	body []byte
	etag string
}

func encodeRead(v any) (encodedRead, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return encodedRead{}, err
	}
	body = append(body, '\n')
	sum := sha256.Sum256(body)
	return encodedRead{body: body, etag: `"` + hex.EncodeToString(sum[:12]) + `"`}, nil
}

// writeRead encodes v and answers it with an ETag and Cache-Control, or
// 304 when the client's If-None-Match holds the ETag.
func (s *Server) writeRead(w http.ResponseWriter, r *http.Request, v any, maxAge time.Duration) {
	e, err := encodeRead(v)
	if err != nil {
		s.o.Logger.Error("api.encode_failed", zap.Error(err))
		writeError(w, http.StatusInternalServerError, "internal error")
		return
	}
	writeEncoded(w, r, e, maxAge)
}

func writeEncoded(w http.ResponseWriter, r *http.Request, e encodedRead, maxAge time.Duration) {
	h := w.Header()
	h.Set("ETag", e.etag)
	h.Set("Content-Type", "application/json")
	cacheFor(w, maxAge)
	if etagMatch(r.Header.Get("If-None-Match"), e.etag) {
		writeCached(w, r, http.StatusNotModified, nil)
		return
	}
	writeCached(w, r, http.StatusOK, e.body)
}

// etagMatch is If-None-Match's weak comparison against etag.
func etagMatch(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == etag || t == "*" {
			return true
		}
	}
	return false
}

// TradeJSON is one swap of the trades list.
type TradeJSON struct {
	TxID          string `json:"txid"`
	Sender        string `json:"sender"`
	ContractID    string `json:"contractId"`
	FunctionName  string `json:"functionName"`
	TokenIn       string `json:"tokenIn"`
	AmountIn      string `json:"amountIn"`
	TokenOut      string `json:"tokenOut"`
	AmountOut     string `json:"amountOut"`
	BurnBlockTime int64  `json:"burnBlockTime"`
	BlockTime     *int64 `json:"blockTime"`
	Source        string `json:"source"`
}

// TradesResponse answers GET /api/competition/trades.
type TradesResponse struct {
	Trades []TradeJSON `json:"trades"`
	Next   *string     `json:"next"`
}

// tradeCursor is the opaque keyset position "burn_block_time:txid".
func tradeCursor(k store.TradeKey) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(k.BurnBlockTime, 10) + ":" + k.TxID))
}

func parseTradeCursor(c string) (*store.TradeKey, error) {
	raw, err := base64.RawURLEncoding.DecodeString(c)
	t, txid, found := strings.Cut(string(raw), ":")
	n, perr := strconv.ParseInt(t, 10, 64)
	if err != nil || !found || perr != nil || !txidPattern.MatchString(txid) {
		return nil, fmt.Errorf("cursor is not one this list gave")
	}
	return &store.TradeKey{BurnBlockTime: n, TxID: txid}, nil
}

func (s *Server) tradesList(w http.ResponseWriter, r *http.Request) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err == nil {
		err = onlyParams(q, "address", "limit", "cursor")
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	addr := q.Get("address")
	if addr != "" {
		if err := registry.CheckSTX(addr); err != nil {
			writeError(w, http.StatusBadRequest, "address: "+err.Error())
			return
		}
	}
	limit, err := limitParam(q)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	var after *store.TradeKey
	if c := q.Get("cursor"); c != "" {
		if after, err = parseTradeCursor(c); err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
	}
	rows, next, err := s.tradesPage(r.Context(), addr, after, limit)
	if err != nil {
		s.dbError(w, err)
		return
	}
	resp := TradesResponse{Trades: make([]TradeJSON, len(rows))}
	for i, t := range rows {
		resp.Trades[i] = TradeJSON{TxID: t.TxID, Sender: t.Sender, ContractID: t.ContractID, FunctionName: t.FunctionName,
			TokenIn: t.TokenIn, AmountIn: t.AmountIn, TokenOut: t.TokenOut, AmountOut: t.AmountOut,
			BurnBlockTime: t.BurnBlockTime, BlockTime: t.BlockTime, Source: t.Source}
	}
	if next != nil {
		c := tradeCursor(*next)
		resp.Next = &c
	}
	s.writeRead(w, r, resp, ReadsMaxAge)
}

// tradesPage is one page of the trades list, newest first, for both of its
// encodings (pacer's and the landing page's, SPEC §7.1): the rows and
// where the next page begins, nil on the last.
func (s *Server) tradesPage(ctx context.Context, addr string, after *store.TradeKey, limit int) ([]store.TradeRow, *store.TradeKey, error) {
	rows, err := s.reads().Trades(ctx, addr, after, limit+1)
	if err != nil {
		return nil, nil, err
	}
	if len(rows) <= limit {
		return rows, nil, nil
	}
	last := rows[limit-1]
	return rows[:limit], &store.TradeKey{BurnBlockTime: last.BurnBlockTime, TxID: last.TxID}, nil
}

// AgentStatusResponse answers GET /api/competition/status.
type AgentStatusResponse struct {
	STXAddress   string     `json:"stxAddress"`
	Registered   bool       `json:"registered"`
	Eligible     bool       `json:"eligible"`
	DisplayName  *string    `json:"displayName"`
	TradeCount   int64      `json:"tradeCount"`
	FirstTradeAt *time.Time `json:"firstTradeAt"`
	LastTradeAt  *time.Time `json:"lastTradeAt"`
}

func (s *Server) agentStatus(w http.ResponseWriter, r *http.Request) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err == nil {
		err = onlyParams(q, "address")
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	addr := q.Get("address")
	if addr == "" {
		writeError(w, http.StatusBadRequest, "address is required (an SP… or SM… address)")
		return
	}
	if err := registry.CheckSTX(addr); err != nil {
		writeError(w, http.StatusBadRequest, "address: "+err.Error())
		return
	}
	st, err := s.reads().AgentStatus(r.Context(), addr)
	if err != nil {
		s.dbError(w, err)
		return
	}
	resp := AgentStatusResponse{STXAddress: addr, Registered: st.Registered, TradeCount: st.Trades,
		FirstTradeAt: unixPtr(st.FirstTrade), LastTradeAt: unixPtr(st.LatestTrade)}
	resp.Eligible = st.Registered && st.ERC8004 != nil &&
		(st.ClaimStatus == competition.ClaimVerified || st.ClaimStatus == competition.ClaimRewarded)
	if st.DisplayName != "" {
		resp.DisplayName = &st.DisplayName
	}
	s.writeRead(w, r, resp, ReadsMaxAge)
}

func unixPtr(p *int64) *time.Time {
	if p == nil {
		return nil
	}
	t := time.Unix(*p, 0).UTC()
	return &t
}

// AllowlistResponse answers GET /api/competition/allowlist.
type AllowlistResponse struct {
	Contracts []AllowedContract `json:"contracts"`
}

// AllowedContract is one allowlisted contract and its swap functions.
type AllowedContract struct {
	ContractID string   `json:"contractId"`
	Functions  []string `json:"functions"`
}

func (s *Server) allowlist(w http.ResponseWriter, r *http.Request) {
	if r.URL.RawQuery != "" {
		writeError(w, http.StatusBadRequest, "the allowlist takes no parameters")
		return
	}
	s.writeRead(w, r, AllowlistResponse{Contracts: allowedContracts(s.o.Catalog)}, AllowlistMaxAge)
}

// allowedContracts is the catalog's allowlist by contract, each contract's
// functions sorted: what both encodings of the allowlist write.
func allowedContracts(cat *catalog.Catalog) []AllowedContract {
	out := []AllowedContract{}
	for _, p := range cat.Pairs() {
		n := len(out)
		if n == 0 || out[n-1].ContractID != p.ContractID {
			out = append(out, AllowedContract{ContractID: p.ContractID})
			n++
		}
		out[n-1].Functions = append(out[n-1].Functions, p.Function)
	}
	for i := range out {
		slices.Sort(out[i].Functions)
	}
	return out
}
