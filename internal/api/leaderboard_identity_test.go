package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/api"
	"github.com/pacer-dev/pacer/internal/competition"
)

// ?by=identity ranks an ERC-8004 identity that rotated wallets as one
// competitor: one row whose totals are the sums of its addresses', named
// by the address that traded last; addresses without an identity stay as
// they are; the per-address board is unchanged and carries btcAddress,
// bnsName (null) and erc8004AgentId. Sums are computed here with exact
// rationals from the prices this test stores.
func TestLeaderboardByIdentity(t *testing.T) {
	t.Parallel()
	f := newBoardFixture(t)
	ctx := context.Background()
	f.exec(t, `insert into token_prices (token_id, price_usd, decimals, source, fetched_at) values
		('stx', 1.85, 6, 'tenero', now()), ('SP3K8BC0PPEVCV7NZ6QSRWPQ2JE9E5B6N3PA0KBR9.tok-a', 0.25, 8, 'tenero', now())`)
	old, rotated, single, anon1, anon2 := stxAddr(21), stxAddr(22), stxAddr(23), stxAddr(24), stxAddr(25)
	f.exec(t, `insert into agents (stx_address, btc_address, display_name, erc8004_agent_id) values
		($1, 'bc1qold', 'Old wallet', 42), ($2, 'bc1qnew', 'New wallet', 42), ($3, 'bc1qsingle', null, 7),
		($4, null, null, null), ($5, 'bc1qanon', null, null)`, old, rotated, single, anon1, anon2)
	price := map[string]*big.Rat{"stx": ratOf("1.85e-6"), tokA: ratOf("0.25e-8")}
	type totals struct {
		trades           int64
		volume, received *big.Rat
		latest           int64
	}
	want := map[string]*totals{}
	n := 0
	swap := func(sender, in string, amtIn int64, out string, amtOut, bbt int64) {
		n++
		_, err := f.st.InsertSwap(ctx, competition.Swap{TxID: fmt.Sprintf("0x%064x", n), Sender: sender, ContractID: "SP1.pool",
			FunctionName: "swap", TokenIn: in, AmountIn: fmt.Sprint(amtIn), TokenOut: out, AmountOut: fmt.Sprint(amtOut),
			BurnBlockTime: bbt, TxStatus: "success", Source: "sweep"})
		require.NoError(t, err)
		w := want[sender]
		if w == nil {
			w = &totals{volume: new(big.Rat), received: new(big.Rat)}
			want[sender] = w
		}
		w.trades++
		w.latest = max(w.latest, bbt)
		w.volume.Add(w.volume, new(big.Rat).Mul(price[in], new(big.Rat).SetInt64(amtIn)))
		w.received.Add(w.received, new(big.Rat).Mul(price[out], new(big.Rat).SetInt64(amtOut)))
	}
	swap(old, "stx", 10_000_000, tokA, 900_000_000, 1_778_700_600)
	swap(old, tokA, 500_000_000, "stx", 7_000_000, 1_778_700_700)
	swap(rotated, "stx", 30_000_000, tokA, 2_500_000_000, 1_778_800_000) // the identity's newest trade
	swap(single, "stx", 50_000_000, tokA, 3_600_000_000, 1_778_750_000)
	swap(anon1, "stx", 1_000_000, tokA, 80_000_000, 1_778_760_000)
	swap(anon2, tokA, 100_000_000, "stx", 200_000, 1_778_770_000)

	// board pages the leaderboard by volume, one row a page.
	board := func(by string) []api.LeaderboardRow {
		var rows []api.LeaderboardRow
		path := "/api/competition/leaderboard?limit=1&sort=volume" + by
		for pages := 0; ; pages++ {
			require.Less(t, pages, 10)
			var resp api.LeaderboardResponse
			f.getJSON(t, path, &resp)
			rows = append(rows, resp.Rows...)
			if resp.Next == nil {
				return rows
			}
			path = "/api/competition/leaderboard?limit=1&sort=volume" + by + "&cursor=" + *resp.Next
		}
	}
	f64 := func(r *big.Rat) float64 { v, _ := r.Float64(); return v }

	perAddress := board("")
	require.Len(t, perAddress, 5, "one row per address, as before")
	byStx := map[string]api.LeaderboardRow{}
	for _, r := range perAddress {
		byStx[r.STXAddress] = r
		w := want[r.STXAddress]
		require.Equal(t, w.trades, r.Trades)
		require.InEpsilon(t, f64(w.volume), r.VolumeUSD, 1e-9)
		require.Nil(t, r.BNSName)
		require.Nil(t, r.Addresses)
	}
	require.Equal(t, "bc1qold", *byStx[old].BTCAddress)
	require.Equal(t, int64(42), *byStx[old].ERC8004AgentID)
	require.Equal(t, int64(42), *byStx[rotated].ERC8004AgentID)
	require.Nil(t, byStx[anon1].BTCAddress)
	require.Nil(t, byStx[anon1].ERC8004AgentID)

	byID := board("&by=identity")
	require.Len(t, byID, 4, "the two wallets of identity 42 are one row")
	vol := new(big.Rat).Add(want[old].volume, want[rotated].volume)
	pnl := new(big.Rat).Sub(new(big.Rat).Add(want[old].received, want[rotated].received), vol)
	var merged *api.LeaderboardRow
	for i, r := range byID {
		require.Equal(t, i+1, r.Rank)
		if i > 0 {
			require.GreaterOrEqual(t, byID[i-1].VolumeUSD, r.VolumeUSD, "sorted by volume")
		}
		if r.ERC8004AgentID != nil && *r.ERC8004AgentID == 42 {
			merged = &byID[i]
			continue
		}
		require.Equal(t, byStx[r.STXAddress].Trades, r.Trades, "a row of its own stays as it is")
		require.Equal(t, byStx[r.STXAddress].VolumeUSD, r.VolumeUSD)
	}
	require.NotNil(t, merged)
	require.Equal(t, rotated, merged.STXAddress, "named by the wallet that traded last")
	require.Equal(t, "bc1qnew", *merged.BTCAddress)
	require.Equal(t, "New wallet", *merged.DisplayName)
	require.Equal(t, sorted([]string{old, rotated}), merged.Addresses)
	require.Equal(t, want[old].trades+want[rotated].trades, merged.Trades)
	require.InEpsilon(t, f64(vol), merged.VolumeUSD, 1e-9)
	require.InEpsilon(t, f64(pnl), merged.PnLUSD, 1e-9)
	pct, _ := new(big.Rat).Mul(new(big.Rat).Quo(pnl, vol), big.NewRat(100, 1)).Float64()
	require.InEpsilon(t, pct, *merged.PnLPercent, 1e-9)
	require.Equal(t, int64(1_778_800_000), merged.LatestTradeAt.Unix())

	// A cursor belongs to its view; by is checked.
	var first api.LeaderboardResponse
	f.getJSON(t, "/api/competition/leaderboard?limit=1&sort=volume", &first)
	for _, bad := range []string{"/api/competition/leaderboard?by=identity&sort=volume&cursor=" + *first.Next,
		"/api/competition/leaderboard?by=wallet"} {
		resp, err := http.Get(f.srv.URL + bad)
		require.NoError(t, err)
		var e map[string]any
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&e))
		resp.Body.Close()
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, bad)
	}
	resp, err := http.Get(f.srv.URL + "/api/competition/leaderboard?by=identity")
	require.NoError(t, err)
	resp.Body.Close()
	require.NotEmpty(t, resp.Header.Get("ETag"))
}

func ratOf(s string) *big.Rat {
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		panic(s)
	}
	return r
}
