package api

import (
	"cmp"
	"context"
	"encoding/base64"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/pacer-dev/pacer/internal/catalog"
	"github.com/pacer-dev/pacer/internal/store"
)

// The competition's leaderboard (SPEC §7): computed from the per-agent
// totals and the current prices once every boardTTL however many ask,
// every sort order at once, and served from memory.
const (
	boardTTL     = 5 * time.Second
	boardTimeout = 8 * time.Second
	// BoardMaxAge is how long clients and shared caches may reuse an answer.
	BoardMaxAge = 5 * time.Second
	// MaxBoardLimit bounds limit= of the leaderboard and the trades list.
	MaxBoardLimit     = 200
	defaultBoardLimit = 50
)

// Leaderboard sort orders.
const (
	SortTrades = "trades"
	SortVolume = "volume"
	SortPnL    = "pnl"
	SortLatest = "latest"
)

var boardSorts = []string{SortTrades, SortVolume, SortPnL, SortLatest}

// LeaderboardRow is one agent on the leaderboard, or with ?by=identity
// one ERC-8004 identity: its addresses' totals summed, named by the
// address that traded last.
type LeaderboardRow struct {
	Rank        int     `json:"rank"`
	STXAddress  string  `json:"stxAddress"`
	DisplayName *string `json:"displayName"`
	// BTCAddress is the agent's Bitcoin address (the pages' avatar and
	// profile link); null when the registry gave none.
	BTCAddress *string `json:"btcAddress"`
	// BNSName is the agent's BNS name: null until pacer knows it (it does
	// not look names up yet).
	BNSName        *string `json:"bnsName"`
	ERC8004AgentID *int64  `json:"erc8004AgentId"`
	// Addresses are an identity's addresses (?by=identity only).
	Addresses     []string  `json:"addresses,omitempty"`
	Trades        int64     `json:"trades"`
	VolumeUSD     float64   `json:"volumeUsd"`
	PnLUSD        float64   `json:"pnlUsd"`
	PnLPercent    *float64  `json:"pnlPercent"`
	LatestTradeAt time.Time `json:"latestTradeAt"`
	AllPriced     bool      `json:"allPriced"`
}

// LeaderboardResponse answers GET /api/competition/leaderboard.
type LeaderboardResponse struct {
	Rows            []LeaderboardRow `json:"rows"`
	Next            *string          `json:"next"`
	CompleteThrough *time.Time       `json:"completeThrough"`
	PricesAt        *time.Time       `json:"pricesAt"`
}

// board is one computation of the leaderboard: its rows in every order,
// per address and per identity.
type board struct {
	views           map[string]*boardView
	completeThrough *time.Time
	pricesAt        *time.Time
	// pages holds the pages asked for, encoded, until the next
	// computation, within a bound.
	pages pageSet[boardQuery]
}

// boardView is one way of counting competitors: its rows in every sort.
type boardView struct {
	rows  []LeaderboardRow
	order map[string][]int
}

// Leaderboard views, the values of ?by=.
const (
	// ByAddress (the default) ranks each address.
	ByAddress = "address"
	// ByIdentity ranks each ERC-8004 identity once, however many wallets
	// it rotated through (SPEC §7.1); an address without one stays itself.
	ByIdentity = "identity"
)

// pricing resolves a token's USD price and decimals: the stored price
// under its own id, else under its contract id (how pegs and plain
// tokens are stored), else the catalog's peg at 1 USD (SPEC §7:
// stablecoin pegs are prices). Decimals come from the stored row, else
// the catalog.
type pricing struct {
	byID map[string]store.Price
	cat  *catalog.Catalog
}

func newPricing(prices []store.Price, cat *catalog.Catalog) pricing {
	p := pricing{byID: make(map[string]store.Price, len(prices)), cat: cat}
	for _, pr := range prices {
		p.byID[pr.TokenID] = pr
	}
	return p
}

// tokenPrice is a resolved price; FetchedAt is zero for a peg without a
// stored row.
type tokenPrice struct {
	USD       string
	Decimals  int
	FetchedAt time.Time
}

func (p pricing) price(token string) (tokenPrice, bool) {
	var out tokenPrice
	found := false
	for _, id := range []string{token, catalog.ContractOf(token)} {
		if pr, ok := p.byID[id]; ok && pr.PriceUSD != nil {
			out.USD, out.FetchedAt, found = *pr.PriceUSD, pr.FetchedAt, true
			break
		}
	}
	if !found && p.cat != nil {
		if _, ok := p.cat.Peg(token); ok {
			out.USD, found = "1", true
		}
	}
	if !found {
		return out, false
	}
	for _, id := range []string{token, catalog.ContractOf(token)} {
		if pr, ok := p.byID[id]; ok && pr.Decimals != nil {
			out.Decimals = *pr.Decimals
			return out, true
		}
	}
	if p.cat != nil {
		if d, ok := p.cat.Decimals(token); ok {
			out.Decimals = d
			return out, true
		}
	}
	return out, false
}

// factor is what one base unit of a token is worth: price ÷ 10^decimals.
func (tp tokenPrice) factor() float64 {
	price, err := strconv.ParseFloat(tp.USD, 64)
	if err != nil {
		return 0
	}
	return price / math.Pow10(tp.Decimals)
}

// factors are the USD value of one base unit of every token pacer has a
// price for: each stored price (under its own id: a contract id also
// prices its "::asset" ids), and each peg without one at 1 USD.
func factors(prices []store.Price, cat *catalog.Catalog) []store.TokenFactor {
	p := newPricing(prices, cat)
	var out []store.TokenFactor
	ids := map[string]bool{}
	for _, pr := range prices {
		ids[pr.TokenID] = true
	}
	if cat != nil {
		for _, id := range cat.PegIDs() {
			ids[id] = true
		}
	}
	for id := range ids {
		tp, ok := p.price(id)
		if !ok {
			continue
		}
		f := store.TokenFactor{TokenID: id, Factor: tp.factor()}
		if !tp.FetchedAt.IsZero() {
			at := tp.FetchedAt
			f.FetchedAt = &at
		}
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b store.TokenFactor) int { return strings.Compare(a.TokenID, b.TokenID) })
	return out
}

// rankBoard orders the priced agents (SPEC §7): every view, every sort.
func rankBoard(agents []store.BoardAgent) *board {
	out := &board{}
	rows := make([]LeaderboardRow, len(agents))
	for i, a := range agents {
		row := LeaderboardRow{STXAddress: a.STXAddress, ERC8004AgentID: a.ERC8004, Trades: a.Trades, VolumeUSD: a.SentUSD,
			PnLUSD: a.ReceivedUSD - a.SentUSD, LatestTradeAt: time.Unix(a.LatestTrade, 0).UTC(), AllPriced: a.AllPriced}
		if a.DisplayName != "" {
			name := a.DisplayName
			row.DisplayName = &name
		}
		if a.BTCAddress != "" {
			btc := a.BTCAddress
			row.BTCAddress = &btc
		}
		row.PnLPercent = pnlPercent(row.PnLUSD, row.VolumeUSD)
		if a.PricesAt != nil && (out.pricesAt == nil || a.PricesAt.Before(*out.pricesAt)) {
			t := a.PricesAt.UTC()
			out.pricesAt = &t
		}
		rows[i] = row
	}
	out.views = map[string]*boardView{ByAddress: sortView(rows), ByIdentity: sortView(byIdentity(rows))}
	return out
}

func pnlPercent(pnl, volume float64) *float64 {
	if volume == 0 {
		return nil
	}
	pct := pnl / volume * 100
	return &pct
}

// byIdentity merges the rows of each ERC-8004 identity into one: the sums
// of its addresses' totals, named by the address that traded last (ties:
// the first address), its addresses listed. Rows without an identity stay.
func byIdentity(rows []LeaderboardRow) []LeaderboardRow {
	var out []LeaderboardRow
	at := map[int64]int{} // identity → its row in out
	for _, r := range rows {
		if r.ERC8004AgentID == nil {
			out = append(out, r)
			continue
		}
		i, seen := at[*r.ERC8004AgentID]
		if !seen {
			at[*r.ERC8004AgentID] = len(out)
			r.Addresses = []string{r.STXAddress}
			out = append(out, r)
			continue
		}
		m := &out[i]
		if c := r.LatestTradeAt.Compare(m.LatestTradeAt); c > 0 || c == 0 && r.STXAddress < m.STXAddress {
			m.STXAddress, m.DisplayName, m.BTCAddress, m.BNSName = r.STXAddress, r.DisplayName, r.BTCAddress, r.BNSName
			m.LatestTradeAt = r.LatestTradeAt
		}
		m.Addresses = append(m.Addresses, r.STXAddress)
		m.Trades += r.Trades
		m.VolumeUSD += r.VolumeUSD
		m.PnLUSD += r.PnLUSD
		m.AllPriced = m.AllPriced && r.AllPriced
		m.PnLPercent = pnlPercent(m.PnLUSD, m.VolumeUSD)
	}
	for i := range out {
		slices.Sort(out[i].Addresses)
	}
	return out
}

// sortView orders rows in every sort (SPEC §7): descending by the sort's
// field, ties by latestTradeAt descending, then stxAddress ascending.
func sortView(rows []LeaderboardRow) *boardView {
	v := &boardView{rows: rows, order: map[string][]int{}}
	for _, sort := range boardSorts {
		order := make([]int, len(rows))
		for i := range order {
			order[i] = i
		}
		slices.SortFunc(order, func(x, y int) int {
			a, b := &rows[x], &rows[y]
			var c int
			switch sort {
			case SortTrades:
				c = cmp.Compare(b.Trades, a.Trades)
			case SortVolume:
				c = cmp.Compare(b.VolumeUSD, a.VolumeUSD)
			case SortPnL:
				c = cmp.Compare(b.PnLUSD, a.PnLUSD)
			}
			return cmp.Or(c, b.LatestTradeAt.Compare(a.LatestTradeAt), strings.Compare(a.STXAddress, b.STXAddress))
		})
		v.order[sort] = order
	}
	return v
}

// boardQuery is a parsed GET /api/competition/leaderboard.
type boardQuery struct {
	by, sort      string
	limit, offset int
}

// parseBoardQuery reads by, sort, limit and cursor; the cursor is opaque
// to clients: the view and sort it was made for and where the next page
// begins.
func parseBoardQuery(raw string) (boardQuery, error) {
	q, err := url.ParseQuery(raw)
	if err != nil {
		return boardQuery{}, fmt.Errorf("malformed query string")
	}
	if err := onlyParams(q, "sort", "limit", "cursor", "by"); err != nil {
		return boardQuery{}, err
	}
	out := boardQuery{by: ByAddress, sort: SortTrades}
	if v := q.Get("by"); v != "" {
		if v != ByAddress && v != ByIdentity {
			return boardQuery{}, fmt.Errorf("by must be address or identity")
		}
		out.by = v
	}
	if v := q.Get("sort"); v != "" {
		if !slices.Contains(boardSorts, v) {
			return boardQuery{}, fmt.Errorf("sort must be trades, volume, pnl or latest")
		}
		out.sort = v
	}
	if out.limit, err = limitParam(q); err != nil {
		return boardQuery{}, err
	}
	if c := q.Get("cursor"); c != "" {
		raw, err := base64.RawURLEncoding.DecodeString(c)
		// An address view's cursor is "sort:offset", an identity view's
		// "identity:sort:offset".
		view, rest, _ := strings.Cut(string(raw), ":")
		if view != ByIdentity {
			view, rest = ByAddress, string(raw)
		}
		sort, off, found := strings.Cut(rest, ":")
		n, perr := strconv.Atoi(off)
		if err != nil || !found || perr != nil || n < 0 || sort != out.sort || view != out.by {
			return boardQuery{}, fmt.Errorf("cursor is not one this leaderboard gave (for this sort and by)")
		}
		out.offset = n
	}
	return out, nil
}

func onlyParams(q url.Values, names ...string) error {
	for key, vs := range q {
		if !slices.Contains(names, key) {
			return fmt.Errorf("unknown parameter %q (use %s)", clip(key), strings.Join(names, ", "))
		}
		if len(vs) > 1 {
			return fmt.Errorf("parameter %s given more than once", key)
		}
	}
	return nil
}

func limitParam(q url.Values) (int, error) {
	v := q.Get("limit")
	if v == "" {
		return defaultBoardLimit, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > MaxBoardLimit {
		return 0, fmt.Errorf("limit must be an integer from 1 to %d", MaxBoardLimit)
	}
	return n, nil
}

// page is one page of the board in q's order.
func (b *board) page(q boardQuery) LeaderboardResponse {
	v := b.views[q.by]
	order := v.order[q.sort]
	resp := LeaderboardResponse{Rows: []LeaderboardRow{}, CompleteThrough: b.completeThrough, PricesAt: b.pricesAt}
	for i := q.offset; i < len(order) && i < q.offset+q.limit; i++ {
		row := v.rows[order[i]]
		row.Rank = i + 1
		resp.Rows = append(resp.Rows, row)
	}
	if end := q.offset + q.limit; end < len(order) {
		c := q.sort + ":" + strconv.Itoa(end)
		if q.by == ByIdentity {
			c = ByIdentity + ":" + c
		}
		next := base64.RawURLEncoding.EncodeToString([]byte(c))
		resp.Next = &next
	}
	return resp
}

func (s *Server) fetchBoard(ctx context.Context) (*board, error) {
	prices, err := s.reads().AllPrices(ctx)
	if err != nil {
		return nil, err
	}
	agents, err := s.reads().Board(ctx, factors(prices, s.o.Catalog))
	if err != nil {
		return nil, err
	}
	b := rankBoard(agents)
	b.completeThrough = s.completeThrough(ctx)
	return b, nil
}

// completeThrough is SPEC §7's completeThrough, from its cell; nil when
// unknown or unavailable.
func (s *Server) completeThrough(ctx context.Context) *time.Time {
	rd := s.comp.through.get(ctx)
	if !rd.Have || rd.Value == nil {
		return nil
	}
	t := time.Unix(*rd.Value, 0).UTC()
	return &t
}

func (s *Server) leaderboard(w http.ResponseWriter, r *http.Request) {
	q, err := parseBoardQuery(r.URL.RawQuery)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	rd := s.comp.board.get(r.Context())
	if !rd.Have {
		if rd.Err != nil {
			s.dbError(w, rd.Err)
			return
		}
		w.Header().Set("Retry-After", "1")
		writeClassError(w, http.StatusServiceUnavailable, "leaderboard unavailable", readingClass(rd))
		return
	}
	b := rd.Value
	enc, err := b.pages.get(q, func() (encodedRead, error) { return encodeRead(b.page(q)) })
	if err != nil {
		s.o.Logger.Error("api.encode_failed", zap.Error(err))
		writeError(w, http.StatusInternalServerError, "internal error")
		return
	}
	writeEncoded(w, r, enc, BoardMaxAge)
}

func (s *Server) logBoardFailure(err error) {
	s.o.Logger.Warn("api.leaderboard_failed", zap.Error(err))
}
