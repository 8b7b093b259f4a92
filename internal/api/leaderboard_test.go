package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/api"
	"github.com/pacer-dev/pacer/internal/catalog"
	"github.com/pacer-dev/pacer/internal/competition"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/internal/testenv"
)

type boardFixture struct {
	st  *store.Store
	srv *httptest.Server
	op  *httptest.Server
}

func newBoardFixture(t *testing.T, origins ...string) *boardFixture {
	t.Helper()
	st := testenv.Store(t)
	h := api.New(api.Options{Store: st, Catalog: catalog.Default(), CORSOrigins: origins, ReadsPerMinute: 100000, ReadsPerSecond: 100000})
	f := &boardFixture{st: st, srv: httptest.NewServer(h), op: httptest.NewServer(h.Operator())}
	t.Cleanup(f.srv.Close)
	t.Cleanup(f.op.Close)
	return f
}

func (f *boardFixture) getJSON(t *testing.T, path string, out any) {
	t.Helper()
	resp, err := http.Get(f.srv.URL + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, path)
	require.NoError(t, json.NewDecoder(resp.Body).Decode(out))
}

func (f *boardFixture) exec(t *testing.T, sql string, args ...any) {
	t.Helper()
	_, err := f.st.Pool().Exec(context.Background(), sql, args...)
	require.NoError(t, err)
}

// The world's tokens as the oracle prices them: by hand, from the prices
// this test stores, not through pacer's resolution.
const (
	tokSTX   = "stx"                                                      // stored: 1.85, 6 decimals
	tokLEO   = "SP1AY6K3PQV5MRT6R4S671NWW2FRVPKM0BR162CT6.leo-token::leo" // stored: no price
	tokUSDCX = "SP120SBRBQJ00MCWS7TM5R8WJNTTKD5K0HFRC2CNE.usdcx::usdcx"   // a peg, nothing stored
	tokA     = "SP3K8BC0PPEVCV7NZ6QSRWPQ2JE9E5B6N3PA0KBR9.tok-a::a"       // stored under its contract: 0.25, 8 decimals
)

var oraclePrices = map[string]struct {
	usd      string
	decimals int64
}{
	tokSTX:   {"1.85", 6},
	tokUSDCX: {"1", 6},
	tokA:     {"0.25", 8},
}

type oracleRow struct {
	stx              string
	trades           int
	volume, received *big.Rat
	latest           int64
	allPriced        bool
	volumeF, pnlF    float64
	pnlPercent       *float64
}

// The leaderboard over a world of known swaps and prices equals SPEC §7's
// formulas computed here with exact rationals (volume, P&L, P&L %,
// allPriced, pricesAt, rank under every sort, paged by the cursor); a
// deregistered agent, an unregistered sender and an agent without swaps
// are not on it.
func TestLeaderboardMatchesTheFormulas(t *testing.T) {
	t.Parallel()
	f := newBoardFixture(t)
	ctx := context.Background()
	stxAt := time.Date(2026, 5, 14, 12, 0, 0, 0, time.UTC)
	aAt := time.Date(2026, 5, 14, 11, 0, 0, 0, time.UTC)
	f.exec(t, `insert into token_prices (token_id, price_usd, decimals, source, fetched_at) values
		('stx', 1.85, 6, 'tenero', $1),
		('SP1AY6K3PQV5MRT6R4S671NWW2FRVPKM0BR162CT6.leo-token', null, 6, 'tenero', $1),
		('SP3K8BC0PPEVCV7NZ6QSRWPQ2JE9E5B6N3PA0KBR9.tok-a', 0.25, 8, 'tenero', $2)`, stxAt, aAt)

	agents := []string{"SPAGENT1", "SPAGENT2", "SPAGENT3", "SPAGENT4", "SPAGENT5", "SPAGENT6"}
	for i, a := range agents {
		f.exec(t, `insert into agents (stx_address, display_name) values ($1, nullif($2, ''))`, a, []string{"One", "", "Three", "Four", "Five", "Six"}[i])
	}
	f.exec(t, `insert into agents (stx_address) values ('SPGONE'), ('SPIDLE')`)
	tokens := []string{tokSTX, tokLEO, tokUSDCX, tokA}
	rng := rand.New(rand.NewPCG(7, 27))
	oracle := map[string]*oracleRow{}
	senders := append(slices.Clone(agents[:5]), "SPGONE", "SPSTRANGER")
	for i := range 80 {
		sender := senders[rng.IntN(len(senders))]
		in, out := tokens[rng.IntN(len(tokens))], tokens[rng.IntN(len(tokens))]
		// Amounts up to 10^24: past 2^64, exact in numeric.
		amtIn, amtOut := bigAmount(rng), bigAmount(rng)
		bbt := int64(1_778_700_600 + rng.IntN(20)*600) // repeats: ties on latest
		sw := competition.Swap{TxID: fmt.Sprintf("0x%064x", i+1), Sender: sender, ContractID: "SP1.pool", FunctionName: "swap",
			TokenIn: in, AmountIn: amtIn.String(), TokenOut: out, AmountOut: amtOut.String(), BurnBlockTime: bbt,
			TxStatus: "success", Source: "sweep"}
		_, err := f.st.InsertSwap(ctx, sw)
		require.NoError(t, err)
		if !slices.Contains(agents, sender) {
			continue
		}
		r := oracle[sender]
		if r == nil {
			r = &oracleRow{stx: sender, volume: new(big.Rat), received: new(big.Rat), allPriced: true}
			oracle[sender] = r
		}
		r.trades++
		r.latest = max(r.latest, bbt)
		for _, leg := range []struct {
			tok string
			amt *big.Int
			sum *big.Rat
		}{{in, amtIn, r.volume}, {out, amtOut, r.received}} {
			p, ok := oraclePrices[leg.tok]
			if !ok {
				r.allPriced = false
				continue
			}
			v, _ := new(big.Rat).SetString(p.usd)
			v.Mul(v, new(big.Rat).SetInt(leg.amt))
			v.Quo(v, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(p.decimals), nil)))
			leg.sum.Add(leg.sum, v)
		}
	}
	f.exec(t, `update agents set deregistered_at = now() where stx_address = 'SPGONE'`)
	var want []*oracleRow
	for _, r := range oracle {
		r.volumeF, _ = r.volume.Float64()
		pnl := new(big.Rat).Sub(r.received, r.volume)
		r.pnlF, _ = pnl.Float64()
		if r.volume.Sign() != 0 {
			pct, _ := new(big.Rat).Mul(new(big.Rat).Quo(pnl, r.volume), big.NewRat(100, 1)).Float64()
			r.pnlPercent = &pct
		}
		want = append(want, r)
	}
	require.NotEmpty(t, want)

	for _, sort := range []string{"trades", "volume", "pnl", "latest"} {
		slices.SortFunc(want, func(a, b *oracleRow) int {
			var c int
			switch sort {
			case "trades":
				c = b.trades - a.trades
			case "volume":
				c = b.volume.Cmp(a.volume)
			case "pnl":
				c = new(big.Rat).Sub(b.received, b.volume).Cmp(new(big.Rat).Sub(a.received, a.volume))
			}
			if c == 0 && b.latest != a.latest {
				c = map[bool]int{true: 1, false: -1}[b.latest > a.latest]
			}
			if c == 0 {
				c = strings.Compare(a.stx, b.stx)
			}
			return c
		})
		var got []api.LeaderboardRow
		path := "/api/competition/leaderboard?limit=2&sort=" + sort
		if sort == "trades" {
			path = "/api/competition/leaderboard?limit=2" // the default order
		}
		for pages := 0; ; pages++ {
			require.Less(t, pages, 10)
			var resp api.LeaderboardResponse
			f.getJSON(t, path, &resp)
			got = append(got, resp.Rows...)
			require.NotNil(t, resp.PricesAt)
			require.True(t, resp.PricesAt.Equal(aAt), "pricesAt is the oldest price used: %v", resp.PricesAt)
			if resp.Next == nil {
				break
			}
			path = "/api/competition/leaderboard?limit=2&sort=" + sort + "&cursor=" + *resp.Next
		}
		require.Len(t, got, len(want), sort)
		for i, w := range want {
			g := got[i]
			require.Equal(t, i+1, g.Rank, sort)
			require.Equal(t, w.stx, g.STXAddress, "%s rank %d", sort, i+1)
			require.Equal(t, w.trades, int(g.Trades))
			require.InEpsilon(t, w.volumeF, g.VolumeUSD, 1e-9, w.stx)
			require.InDelta(t, w.pnlF, g.PnLUSD, 1e-9*max(1, abs(w.pnlF)), w.stx)
			require.Equal(t, w.allPriced, g.AllPriced, w.stx)
			require.Equal(t, time.Unix(w.latest, 0).UTC(), g.LatestTradeAt)
			if w.pnlPercent == nil {
				require.Nil(t, g.PnLPercent)
			} else {
				require.InDelta(t, *w.pnlPercent, *g.PnLPercent, 1e-9*max(1, abs(*w.pnlPercent)))
			}
		}
	}
	var resp api.LeaderboardResponse
	f.getJSON(t, "/api/competition/leaderboard?sort=trades&limit=200", &resp)
	for _, r := range resp.Rows {
		require.NotContains(t, []string{"SPGONE", "SPSTRANGER", "SPIDLE"}, r.STXAddress)
		if r.STXAddress == "SPAGENT2" {
			require.Nil(t, r.DisplayName)
		}
	}
}

// bigAmount is a random amount of 6 to 24 digits.
func bigAmount(rng *rand.Rand) *big.Int {
	n := new(big.Int)
	for range 6 + rng.IntN(19) {
		n.Mul(n, big.NewInt(10)).Add(n, big.NewInt(int64(rng.IntN(10))))
	}
	return n
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// The trades list paged with limit=7 while new swaps arrive (newer ones
// on top, older ones below the cursor) returns every row that was there
// when paging began exactly once, and no row twice.
func TestTradesPagesWhileRowsArrive(t *testing.T) {
	t.Parallel()
	f := newBoardFixture(t)
	ctx := context.Background()
	insert := func(n int, bbt int64) string {
		txid := fmt.Sprintf("0x%064x", n)
		_, err := f.st.InsertSwap(ctx, competition.Swap{TxID: txid, Sender: "SP3K8BC0PPEVCV7NZ6QSRWPQ2JE9E5B6N3PA0KBR9",
			ContractID: "SP1.pool", FunctionName: "swap", TokenIn: "stx", AmountIn: "1", TokenOut: "stx", AmountOut: "2",
			BurnBlockTime: bbt, TxStatus: "success", Source: "sweep"})
		require.NoError(t, err)
		return txid
	}
	before := map[string]bool{}
	for i := range 40 {
		before[insert(i+1, 1_778_700_000+int64(i/3)*10)] = true // three to a time: ties by txid
	}
	seen := map[string]int{}
	path := "/api/competition/trades?limit=7"
	next := 1000
	for pages := 0; ; pages++ {
		require.Less(t, pages, 30)
		var resp api.TradesResponse
		f.getJSON(t, path, &resp)
		require.LessOrEqual(t, len(resp.Trades), 7)
		for _, tr := range resp.Trades {
			seen[tr.TxID]++
		}
		// Rows arrive between pages: one newer than all, one in the past.
		insert(next, 1_778_800_000+int64(next))
		insert(next+1, 1_778_700_000+int64(pages*7))
		next += 2
		if resp.Next == nil {
			break
		}
		path = "/api/competition/trades?limit=7&cursor=" + *resp.Next
	}
	for txid := range before {
		require.Equal(t, 1, seen[txid], txid)
	}
	for txid, n := range seen {
		require.Equal(t, 1, n, txid)
	}
	// By address: a malformed one is a 400.
	resp, err := http.Get(f.srv.URL + "/api/competition/trades?address=SPnope")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
}

// ETag and 304, Cache-Control, and CORS only for the configured origins,
// never on the operator listener.
func TestCompetitionReadsCacheAndCORS(t *testing.T) {
	t.Parallel()
	const allowed = "https://board.example"
	f := newBoardFixture(t, allowed)
	for _, path := range []string{"/api/competition/leaderboard", "/api/competition/trades", "/api/competition/allowlist",
		"/api/competition/status?address=SP1PFR4V08H1RAZXREBGFFQ59WB739XM8VVGTFSEA"} {
		req, _ := http.NewRequest(http.MethodGet, f.srv.URL+path, nil)
		req.Header.Set("Origin", allowed)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
		require.Equal(t, allowed, resp.Header.Get("Access-Control-Allow-Origin"), path)
		require.Contains(t, resp.Header.Get("Cache-Control"), "public, max-age=", path)
		etag := resp.Header.Get("ETag")
		require.NotEmpty(t, etag, path)

		req, _ = http.NewRequest(http.MethodGet, f.srv.URL+path, nil)
		req.Header.Set("Origin", "https://other.example")
		req.Header.Set("If-None-Match", etag)
		resp, err = http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusNotModified, resp.StatusCode, path)
		require.Empty(t, resp.Header.Get("Access-Control-Allow-Origin"), path)
	}
	req, _ := http.NewRequest(http.MethodGet, f.op.URL+"/", nil)
	req.Header.Set("Origin", allowed)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Empty(t, resp.Header.Get("Access-Control-Allow-Origin"), "never on the operator listener")
}

// The status read: registered, eligible, trade counts; an unknown address
// is registered:false, a malformed one 400. A peg without a cached price
// answers its peg, and the tracked set lists the supported tokens.
func TestStatusAndPegPrices(t *testing.T) {
	t.Parallel()
	f := newBoardFixture(t)
	const a = "SP1PFR4V08H1RAZXREBGFFQ59WB739XM8VVGTFSEA"
	f.exec(t, `insert into claims values ('bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4', 'verified')`)
	f.exec(t, `insert into agents (stx_address, btc_address, display_name, erc8004_agent_id) values ($1, 'bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4', 'One', 4)`, a)
	var st api.AgentStatusResponse
	f.getJSON(t, "/api/competition/status?address="+a, &st)
	require.True(t, st.Registered)
	require.True(t, st.Eligible)
	require.Zero(t, st.TradeCount)
	require.Nil(t, st.LastTradeAt)
	f.getJSON(t, "/api/competition/status?address=SPQC38PW542EQJ5M11CR25P7BS1CA6QT4TBXGB3M", &st)
	require.False(t, st.Registered)
	resp, err := http.Get(f.srv.URL + "/api/competition/status?address=SP1PFR4V08H1RAZXREBGFFQ59WB739XM8VVGTFSEB")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)

	var one api.TokenPrice
	f.getJSON(t, "/api/prices?token="+tokUSDCX, &one)
	require.Equal(t, "1", one.PriceUSD.String())
	var all api.PricesResponse
	f.getJSON(t, "/api/prices", &all)
	require.Contains(t, all.Tokens, "stx")
	require.Contains(t, all.Prices, "SP120SBRBQJ00MCWS7TM5R8WJNTTKD5K0HFRC2CNE.usdcx")

	var al api.AllowlistResponse
	f.getJSON(t, "/api/competition/allowlist", &al)
	require.NotEmpty(t, al.Contracts)
	require.NotEmpty(t, al.Contracts[0].Functions)
}
