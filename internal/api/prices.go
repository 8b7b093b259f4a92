package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/catalog"
	"github.com/pacer-dev/pacer/internal/store"
)

// MaxTokensPerRequest bounds ?tokens=.
const MaxTokensPerRequest = 100

// PriceEntry is one token's price in /api/prices.
type PriceEntry struct {
	PriceUSD  *json.Number `json:"priceUsd"`
	FetchedAt time.Time    `json:"fetchedAt"`
	Decimals  *int         `json:"decimals"`
}

// PricesResponse answers /api/prices for a set of tokens.
type PricesResponse struct {
	Prices  map[string]PriceEntry `json:"prices"`
	Missing []string              `json:"missing"`
	// Tokens is the supported token list: the tracked set, in the answer
	// without parameters.
	Tokens []string `json:"tokens,omitempty"`
}

// TokenPrice answers /api/prices?token=.
type TokenPrice struct {
	TokenID   string       `json:"tokenId"`
	PriceUSD  *json.Number `json:"priceUsd"`
	FetchedAt time.Time    `json:"fetchedAt"`
}

// ParseTokens validates a comma-separated token list: each id well formed,
// at most MaxTokensPerRequest after removing duplicates.
func ParseTokens(list string) ([]string, error) {
	var ids []string
	seen := map[string]bool{}
	for _, raw := range strings.Split(list, ",") {
		id := strings.TrimSpace(raw)
		if id == "" {
			continue
		}
		if !catalog.ValidTokenID(id) {
			return nil, fmt.Errorf("malformed token id %q", clip(id))
		}
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("no token ids given")
	}
	if len(ids) > MaxTokensPerRequest {
		return nil, fmt.Errorf("%d tokens requested, at most %d allowed", len(ids), MaxTokensPerRequest)
	}
	return ids, nil
}

func clip(s string) string {
	if r := []rune(s); len(r) > 80 {
		return string(r[:80]) + "…"
	}
	return s
}

func number(p *string) *json.Number {
	if p == nil {
		return nil
	}
	n := json.Number(*p)
	return &n
}

func (s *Server) prices(w http.ResponseWriter, r *http.Request) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		writeError(w, http.StatusBadRequest, "malformed query string")
		return
	}
	for key := range q {
		if key != "token" && key != "tokens" {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("unknown parameter %q (use token or tokens)", clip(key)))
			return
		}
	}
	if q.Has("token") && q.Has("tokens") {
		writeError(w, http.StatusBadRequest, "give token or tokens, not both")
		return
	}
	if len(q["token"]) > 1 || len(q["tokens"]) > 1 {
		writeError(w, http.StatusBadRequest, "parameter given more than once")
		return
	}
	if q.Has("token") {
		s.onePrice(w, r, q.Get("token"))
		return
	}
	var ids []string
	if q.Has("tokens") {
		if ids, err = ParseTokens(q.Get("tokens")); err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
	} else if ids, err = s.trackedSet(r.Context()); err != nil {
		s.dbError(w, err)
		return
	}
	found, err := s.reads().Prices(r.Context(), ids)
	if err != nil {
		s.dbError(w, err)
		return
	}
	resp := PricesResponse{Prices: map[string]PriceEntry{}, Missing: []string{}}
	if !q.Has("tokens") {
		resp.Tokens = ids
	}
	now := time.Now().UTC().Truncate(time.Second)
	for _, id := range ids {
		p, ok := found[id]
		if !ok {
			if p, ok = s.pegPrice(id, now); !ok {
				resp.Missing = append(resp.Missing, id)
				continue
			}
		}
		resp.Prices[id] = PriceEntry{PriceUSD: number(p.PriceUSD), FetchedAt: p.FetchedAt.UTC(), Decimals: p.Decimals}
	}
	cacheFor(w, readMaxAge)
	writeJSON(w, http.StatusOK, resp)
}

func (s *Server) onePrice(w http.ResponseWriter, r *http.Request, id string) {
	id = strings.TrimSpace(id)
	if !catalog.ValidTokenID(id) {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("malformed token id %q", clip(id)))
		return
	}
	found, err := s.reads().Prices(r.Context(), []string{id})
	if err != nil {
		s.dbError(w, err)
		return
	}
	p, ok := found[id]
	if !ok {
		if p, ok = s.pegPrice(id, time.Now().UTC().Truncate(time.Second)); !ok {
			writeError(w, http.StatusNotFound, "no cached price for "+id)
			return
		}
	}
	cacheFor(w, readMaxAge)
	writeJSON(w, http.StatusOK, TokenPrice{TokenID: id, PriceUSD: number(p.PriceUSD), FetchedAt: p.FetchedAt.UTC()})
}

// pegPrice answers a pegged stablecoin without a cached price at its peg,
// 1 USD, as of now (SPEC §7: stablecoin pegs are prices).
func (s *Server) pegPrice(id string, now time.Time) (store.Price, bool) {
	if s.o.Catalog == nil {
		return store.Price{}, false
	}
	peg, ok := s.o.Catalog.Peg(id)
	if !ok {
		return store.Price{}, false
	}
	one, dec := "1", peg.Decimals
	return store.Price{TokenID: id, PriceUSD: &one, Decimals: &dec, Source: store.SourcePeg, FetchedAt: now}, true
}

// readMaxAge is how long clients and shared caches may reuse a price or the
// tracked set: prices change every few minutes at most.
const readMaxAge = 10 * time.Second

// trackedSet is the token set the price refresh keeps fresh (static base,
// pegs, traded tokens), from the tracked cell: the traded-token ranking is
// a GROUP BY over every swap, run at most once every few seconds however
// many requests ask. A stale set is served when the ranking fails: it
// barely moves.
func (s *Server) trackedSet(ctx context.Context) ([]string, error) {
	rd := s.tracked.get(ctx)
	switch {
	case rd.Have:
		return rd.Value, nil
	case rd.Err != nil:
		return nil, rd.Err
	}
	return nil, fmt.Errorf("tracked tokens: %w", context.DeadlineExceeded)
}

// dbError answers a database failure with its class; the raw error, which
// names the database's host, user and name, goes to the log only.
func (s *Server) dbError(w http.ResponseWriter, err error) {
	s.o.Logger.Error("api.database_error", zap.Error(err))
	class := errorClass(err)
	msg := "database unavailable"
	if class == pacer.ClassTimeout {
		msg = "database did not answer in time"
	}
	writeClassError(w, http.StatusServiceUnavailable, msg, class)
}
