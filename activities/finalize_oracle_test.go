package activities_test

import (
	"context"
	"fmt"
	"math/big"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/activities"
	"github.com/pacer-dev/pacer/internal/competition"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/internal/testenv"
)

// The tokens of the generated rounds, with what shared/data/tokens.json
// says of them (the oracle's own copy of those facts).
const (
	oSTX    = "stx"                                                              // decimals 6 (known_decimals)
	oSBTC   = "SM3VDXK3WZZSA84XXFKAFAF15NNZX32CTSG82JFQ4.sbtc-token::sbtc-token" // decimals 8 (known_decimals)
	oSTSTX  = "SP4SZE494VC2YC5JYG7AYFQ44F5Q4PYV7DVMDPBG.ststx-token::ststx"      // decimals 6; observed under its contract id only
	oUSDCX  = "SP120SBRBQJ00MCWS7TM5R8WJNTTKD5K0HFRC2CNE.usdcx::usdcx"           // a peg: 1 USD, decimals 6
	oALEX   = "SP102V8P0F7JX67ARQ77WEA3D3CFB5XW39REDT0AM.token-alex::alex"       // decimals 8 from its token_prices row
	oLATE   = "SP2C2YFP12AJZB4MABJBAJ55XECVS7E4PMMZ89YZR.late-token::late"       // observed only after the round's end
	oNEVER  = "SP3NEVERPRICED0000000000000000000000000.never::never"             // never observed
	oNODEC  = "SP3NODECIMALS00000000000000000000000000.nodec::nodec"             // observed, decimals unknown
	oRouter = "SP000000000000000000002Q6VF78.router"
)

var oracleDecimals = map[string]int{oSTX: 6, oSBTC: 8, oSTSTX: 6, oUSDCX: 6, oALEX: 8}

type oSwap struct {
	txid, sender        string
	tokIn, amtIn        string
	tokOut, amtOut      string
	blockTime, burnTime int64
	source              string
}

// time is the swap's time as SPEC §5.0 "Times" defines it.
func (s oSwap) time() int64 {
	if s.blockTime > 0 {
		return s.blockTime
	}
	return s.burnTime
}

type oAgent struct {
	stx, btc     string
	erc          *int64
	claim        string
	deregistered bool
}

type oObs struct {
	token string
	at    time.Time
	price string // "" is a confirmed "no price"
}

type oWorld struct {
	start, end time.Time
	minVolume  float64
	minPriced  int
	agents     []oAgent
	swaps      []oSwap
	obs        []oObs
}

// genWorld makes one round with swaps on and around its window's edges,
// unpriced legs, twins (ties on P&L and volume), agents below each floor
// and agents who do not count (deregistered, no ERC-8004 id, a pending
// claim).
func genWorld(seed uint64) oWorld {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	start := time.Date(2026, 5, 13, 0, 0, 0, 0, time.UTC).Add(time.Duration(rng.IntN(3600)) * time.Second)
	w := oWorld{start: start, end: start.Add(time.Duration(2+rng.IntN(6)) * time.Hour),
		minVolume: []float64{0, 1, 50, 500}[rng.IntN(4)], minPriced: rng.IntN(5)}
	n := 5 + rng.IntN(6)
	for i := range n {
		id := int64(100 + i)
		a := oAgent{stx: fmt.Sprintf("SP%03dAGENT%d", i, seed), btc: fmt.Sprintf("bc1q%03d%d", i, seed), erc: &id,
			claim: []string{"verified", "rewarded"}[rng.IntN(2)]}
		switch i {
		case 0:
			a.deregistered = true
		case 1:
			a.erc = nil
		case 2:
			a.claim = "pending"
		}
		w.agents = append(w.agents, a)
	}
	tokens := []string{oSTX, oSBTC, oSTSTX, oUSDCX, oALEX, oLATE, oNEVER, oNODEC}
	priced := tokens[:5]
	edges := []int64{w.start.Unix(), w.start.Unix() - 1, w.end.Unix(), w.end.Unix() - 1}
	tx := 0
	swap := func(sender string, at int64, useBlockTime bool, tin, tout string) oSwap {
		tx++
		s := oSwap{txid: fmt.Sprintf("0x%08x%08x", seed, tx), sender: sender, tokIn: tin, tokOut: tout,
			amtIn: fmt.Sprint(1 + rng.Int64N(5_000_000_000)), amtOut: fmt.Sprint(1 + rng.Int64N(5_000_000_000)),
			source: []string{"agent", "sweep", "chainhook"}[rng.IntN(3)]}
		if useBlockTime {
			// burn_block_time is the tenure's, up to two hours off.
			s.blockTime, s.burnTime = at, at-int64(rng.IntN(7200))+3600
		} else {
			s.burnTime = at
		}
		return s
	}
	for _, a := range w.agents {
		k := rng.IntN(8)
		for range k {
			var at int64
			if rng.IntN(4) == 0 {
				at = edges[rng.IntN(len(edges))]
			} else {
				at = w.start.Unix() - 600 + rng.Int64N(w.end.Unix()-w.start.Unix()+1200)
			}
			pick := priced
			if rng.IntN(5) == 0 {
				pick = tokens
			}
			tin := pick[rng.IntN(len(pick))]
			tout := pick[rng.IntN(len(pick))]
			for tout == tin {
				tout = tokens[rng.IntN(len(tokens))]
			}
			w.swaps = append(w.swaps, swap(a.stx, at, rng.IntN(3) > 0, tin, tout))
		}
	}
	// Twins: an agent trading exactly as another ties on P&L and volume;
	// one trading the same at twice the size ties on the P&L fraction.
	for i, src := range []int{3, 4} {
		id := int64(900 + i)
		twin := oAgent{stx: fmt.Sprintf("SP%03dTWIN%d", i, seed), btc: fmt.Sprintf("bc1qtwin%d%d", i, seed), erc: &id, claim: "verified"}
		w.agents = append(w.agents, twin)
		for _, s := range slices.Clone(w.swaps) {
			if s.sender != w.agents[src].stx {
				continue
			}
			c := s
			tx++
			c.txid, c.sender = fmt.Sprintf("0x%08x%08x", seed, tx), twin.stx
			if i == 1 {
				c.amtIn, c.amtOut = double(c.amtIn), double(c.amtOut)
			}
			w.swaps = append(w.swaps, c)
		}
	}
	// Prices: several observations a token around the end, a confirmed
	// "no price" just before it for one token, the late token only after.
	for _, tok := range []string{oSTX, oSBTC, "SP4SZE494VC2YC5JYG7AYFQ44F5Q4PYV7DVMDPBG.ststx-token", oALEX, oNODEC} {
		for _, d := range []time.Duration{-3 * time.Hour, -40 * time.Minute, -time.Duration(rng.IntN(600)) * time.Second, 0, time.Minute, time.Hour} {
			if d == 0 && rng.IntN(2) == 0 {
				continue
			}
			w.obs = append(w.obs, oObs{token: tok, at: w.end.Add(d), price: fmt.Sprintf("%d.%04d", rng.IntN(90)+1, rng.IntN(10000))})
		}
	}
	w.obs = append(w.obs, oObs{token: oSTX, at: w.end.Add(-time.Second / 2)}, // "no price": not a price
		oObs{token: oLATE, at: w.end.Add(time.Second), price: "3"})
	return w
}

func double(s string) string {
	n, _ := new(big.Int).SetString(s, 10)
	return n.Lsh(n, 1).String()
}

// oracleResult is one address's result, computed from SPEC §13's rules.
type oracleResult struct {
	stx                      string
	trades, priced, unpriced int
	volume, received, pnl    *big.Rat
	pct                      *big.Rat
	latest                   int64
	unpricedTokens           []string
}

// oracle computes the round's ranked results and its rewards
// (category → address) from the world alone.
func oracle(w oWorld) ([]oracleResult, map[string]string) {
	end := w.end
	price := map[string]*big.Rat{}
	tokenPrice := func(tok string) (*big.Rat, bool) {
		if tok == oUSDCX {
			return big.NewRat(1, 1), true
		}
		if p, ok := price[tok]; ok {
			return p, p != nil
		}
		if _, ok := oracleDecimals[tok]; !ok {
			price[tok] = nil
			return nil, false
		}
		// The last observed price at or before the end: under the
		// token's own id, else under its contract id.
		var best *oObs
		for _, own := range []bool{true, false} {
			for i := range w.obs {
				o := &w.obs[i]
				id := tok
				if !own {
					id, _, _ = strings.Cut(tok, "::")
				}
				if o.token != id || o.price == "" || o.at.After(end) {
					continue
				}
				if best == nil || o.at.After(best.at) {
					best = o
				}
			}
			if best != nil {
				break
			}
		}
		if best == nil {
			price[tok] = nil
			return nil, false
		}
		p, _ := new(big.Rat).SetString(best.price)
		price[tok] = p
		return p, true
	}
	value := func(tok, amount string) (*big.Rat, bool) {
		p, ok := tokenPrice(tok)
		if !ok {
			return nil, false
		}
		a, _ := new(big.Rat).SetString(amount)
		den := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(oracleDecimals[tok])), nil)
		return a.Mul(a, p).Quo(a, new(big.Rat).SetInt(den)), true
	}
	counts := map[string]bool{}
	for _, a := range w.agents {
		counts[a.stx] = !a.deregistered && a.erc != nil && (a.claim == "verified" || a.claim == "rewarded")
	}
	by := map[string]*oracleResult{}
	for _, s := range w.swaps {
		if !counts[s.sender] || s.time() < w.start.Unix() || s.time() >= w.end.Unix() {
			continue
		}
		r := by[s.sender]
		if r == nil {
			r = &oracleResult{stx: s.sender, volume: new(big.Rat), received: new(big.Rat)}
			by[s.sender] = r
		}
		r.trades++
		r.latest = max(r.latest, s.time())
		in, okIn := value(s.tokIn, s.amtIn)
		out, okOut := value(s.tokOut, s.amtOut)
		if !okIn || !okOut {
			r.unpriced++
			for tok, ok := range map[string]bool{s.tokIn: okIn, s.tokOut: okOut} {
				if !ok && !slices.Contains(r.unpricedTokens, tok) {
					r.unpricedTokens = append(r.unpricedTokens, tok)
				}
			}
			continue
		}
		r.priced++
		r.volume.Add(r.volume, in)
		r.received.Add(r.received, out)
	}
	var out []oracleResult
	for _, r := range by {
		r.pnl = new(big.Rat).Sub(r.received, r.volume)
		if r.volume.Sign() != 0 {
			r.pct = new(big.Rat).Quo(r.pnl, r.volume)
		}
		slices.Sort(r.unpricedTokens)
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b oracleResult) int {
		if c := b.pnl.Cmp(a.pnl); c != 0 {
			return c
		}
		if c := b.volume.Cmp(a.volume); c != 0 {
			return c
		}
		return strings.Compare(a.stx, b.stx)
	})
	rewards := map[string]string{}
	if len(out) > 0 {
		rewards["overall_pnl"] = out[0].stx
	}
	var vol, ret *oracleResult
	floor := new(big.Rat).SetFloat64(w.minVolume)
	for i := range out {
		r := &out[i]
		if r.volume.Sign() > 0 && (vol == nil || r.volume.Cmp(vol.volume) > 0) {
			vol = r
		}
		if r.pct != nil && r.volume.Cmp(floor) >= 0 && r.priced >= w.minPriced && (ret == nil || r.pct.Cmp(ret.pct) > 0) {
			ret = r
		}
	}
	if vol != nil {
		rewards["volume"] = vol.stx
	}
	if ret != nil {
		rewards["return"] = ret.stx
	}
	return out, rewards
}

func (w oWorld) load(t *testing.T, st *store.Store) {
	t.Helper()
	ctx := t.Context()
	exec := func(sql string, args ...any) {
		t.Helper()
		_, err := st.Pool().Exec(ctx, sql, args...)
		require.NoError(t, err)
	}
	for _, a := range w.agents {
		exec(`insert into agents (stx_address, btc_address, erc8004_agent_id) values ($1, $2, $3)`, a.stx, a.btc, a.erc)
		exec(`insert into claims (btc_address, status) values ($1, $2)`, a.btc, a.claim)
	}
	for _, s := range w.swaps {
		_, err := st.InsertSwap(ctx, competition.Swap{TxID: s.txid, Sender: s.sender, ContractID: oRouter, FunctionName: "swap",
			TokenIn: s.tokIn, AmountIn: s.amtIn, TokenOut: s.tokOut, AmountOut: s.amtOut, BurnBlockTime: s.burnTime,
			BlockTime: s.blockTime, TxStatus: "success", Source: s.source})
		require.NoError(t, err)
	}
	var obs []store.Observation
	for _, o := range w.obs {
		var p *string
		if o.price != "" {
			p = &o.price
		}
		obs = append(obs, store.Observation{TokenID: o.token, ObservedAt: o.at, PriceUSD: p})
	}
	_, err := st.InsertObservations(ctx, obs)
	require.NoError(t, err)
	eight := 8
	_, err = st.UpsertPrice(ctx, store.Price{TokenID: oALEX, Decimals: &eight, Source: store.SourceTenero, FetchedAt: w.end})
	require.NoError(t, err)
	// Deregistered before the round's end.
	exec(`update agents set deregistered_at = $2 where stx_address = $1`, w.agents[0].stx, w.end.Add(-time.Hour))
}

func ratFloat(r *big.Rat) float64 {
	f, _ := r.Float64()
	return f
}

// Over generated rounds, the finalize task's results, ranks and rewards
// are the oracle's, computed in this test from SPEC §13's rules: a swap
// counts by its block time in [start, end), priced only when both its
// tokens are priced as of the end, its agent eligible at finalization;
// ranks a total order; rewards to rank 1, the highest volume and the
// highest return above both floors.
func TestFinalizeMatchesTheOracle(t *testing.T) {
	t.Parallel()
	seeds := 12
	for seed := range uint64(seeds) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			t.Parallel()
			w := genWorld(seed)
			st := testenv.Store(t)
			w.load(t, st)
			now := w.end.Add(2 * time.Hour)
			acts := activities.New(activities.Options{Store: st, Logger: zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)),
				TeneroBaseURL: "http://127.0.0.1:1", HiroBaseURL: "http://127.0.0.1:1", Clock: func() time.Time { return now }})
			_, _, err := st.PutRound(t.Context(), store.RoundSpec{ID: "r", StartsAt: w.start, EndsAt: w.end,
				GraceEndsAt: w.end.Add(time.Hour), MinVolumeUSD: w.minVolume, MinPricedTradeCount: w.minPriced},
				store.Change{At: now, Actor: "test", Action: store.ActionRoundPut})
			require.NoError(t, err)
			require.NoError(t, st.SetState(t.Context(), "complete_through", fmt.Sprint(w.end.Unix())))

			res, err := acts.Finalize(context.Background(), pacer.FinalizeInput{})
			require.NoError(t, err)
			require.Equal(t, []string{"r"}, res.Finalized)
			require.Nil(t, res.NextDueAt, "nothing left to finalize")

			d, found, err := st.FinalRound(t.Context(), "r")
			require.NoError(t, err)
			require.True(t, found)
			want, rewards := oracle(w)
			require.Len(t, d.Results, len(want))
			for i, o := range want {
				g := d.Results[i]
				require.Equal(t, i+1, g.Rank)
				require.Equal(t, o.stx, g.STXAddress, "rank %d", i+1)
				require.Equal(t, o.trades, g.TradeCount, o.stx)
				require.Equal(t, o.priced, g.PricedTradeCount, o.stx)
				require.Equal(t, o.unpriced, g.UnpricedTradeCount, o.stx)
				require.Equal(t, ratFloat(o.volume), g.VolumeUSD, o.stx)
				require.Equal(t, ratFloat(o.received), g.ReceivedUSD, o.stx)
				require.Equal(t, ratFloat(o.pnl), g.PnLUSD, o.stx)
				if o.pct == nil {
					require.Nil(t, g.PnLPercent, o.stx)
				} else {
					require.NotNil(t, g.PnLPercent, o.stx)
					require.Equal(t, ratFloat(o.pct), *g.PnLPercent, o.stx)
				}
				require.Equal(t, o.latest, *g.LatestTradeAt, o.stx)
				require.Equal(t, append([]string{}, o.unpricedTokens...), g.UnpricedTokens, o.stx)
			}
			got := map[string]string{}
			for _, r := range d.Rewards {
				got[r.Category] = r.STXAddress
			}
			require.Equal(t, rewards, got)

			// Retried, the round is left as it was.
			again, err := acts.Finalize(context.Background(), pacer.FinalizeInput{})
			require.NoError(t, err)
			require.Empty(t, again.Finalized)
		})
	}
}
