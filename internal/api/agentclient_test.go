package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/api"
	"github.com/pacer-dev/pacer/internal/api/aibtc"
	"github.com/pacer-dev/pacer/internal/competition"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/internal/testenv"
)

// The agents' MCP client (aibtcdev/aibtc-mcp-server, its competition
// tools), played against a real `pacer serve` with AIBTC_CAMPAIGN_API_URL
// pointed at /aibtc/api/competition: competition_status reads /status and
// pages /trades with limit=200 through next_cursor (collectAllTrades), then
// computes its mark-to-current P&L (computeCampaignStats): over rows whose
// tx_status is "success", a swap counts only when both its tokens have a
// price (looked up by contract id, "stx" as is), pnl = Σ out × price_out −
// in × price_in. That computation is written here from the client's
// documentation, on exact rationals, with the prices this test stores; for
// an agent whose every token is priced it equals the native leaderboard's
// pnlUsd. The 230 swaps come back exactly once each, amounts exact above
// 2^53.
func TestAgentsClientAgainstPacerServe(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bin := testenv.PacerBinary(t)
	dbURL := testenv.PostgresURL(t)
	st, err := store.Open(ctx, dbURL)
	require.NoError(t, err)
	t.Cleanup(st.Close)
	require.NoError(t, st.Migrate(ctx))

	// Tenero's answers as the client would get them, by the id it asks
	// with (contract id, or "stx"): price and decimals.
	const tokB = "SP2C2YFP12AJZB4MABJBAJ55XECVS7E4PMMZ89YZR.arkadiko-token::diko"
	tenero := map[string]struct{ usd, decimals string }{
		"stx": {"1.85", "6"},
		"SP3K8BC0PPEVCV7NZ6QSRWPQ2JE9E5B6N3PA0KBR9.tok-a":          {"0.25", "8"},
		"SP2C2YFP12AJZB4MABJBAJ55XECVS7E4PMMZ89YZR.arkadiko-token": {"0.0421", "6"},
	}
	for id, p := range tenero {
		_, err := st.Pool().Exec(ctx, `insert into token_prices (token_id, price_usd, decimals, source, fetched_at)
values ($1, $2::numeric, $3::int, 'tenero', now())`, id, p.usd, p.decimals)
		require.NoError(t, err)
	}
	agent, neighbour := stxAddr(31), stxAddr(32)
	_, err = st.Pool().Exec(ctx, `insert into agents (stx_address, btc_address, erc8004_agent_id) values ($1, 'bc1qagent', 42), ($2, null, 43)`,
		agent, neighbour)
	require.NoError(t, err)
	tokens := []string{"stx", tokA, tokB}
	sources := []string{competition.SourceAgent, competition.SourceSweep, competition.SourceChainhook}
	want := map[string]competition.Swap{}
	for i := range 230 {
		// Amounts past 2^53 (9007199254740993 = 2^53 + 1 is the first a
		// double cannot hold); three swaps to a block: ties on time.
		sw := competition.Swap{TxID: fmt.Sprintf("0x%064x", 1000+i), Sender: agent, ContractID: "SP1.pool", FunctionName: "swap-x-for-y",
			TokenIn: tokens[i%3], AmountIn: fmt.Sprint(9007199254740993 + int64(i)*7919), TokenOut: tokens[(i+1)%3],
			AmountOut: fmt.Sprint(9007199254740993 + int64(i)*104729), BurnBlockTime: 1_778_700_600 + int64(i/3)*30,
			TxStatus: "success", Source: sources[i%3]}
		_, err := st.InsertSwap(ctx, sw)
		require.NoError(t, err)
		want[sw.TxID] = sw
		if i%10 == 0 {
			_, err := st.InsertSwap(ctx, competition.Swap{TxID: fmt.Sprintf("0x%064x", 5000+i), Sender: neighbour, ContractID: "SP1.pool",
				FunctionName: "swap-x-for-y", TokenIn: "stx", AmountIn: "5", TokenOut: tokA, AmountOut: "7",
				BurnBlockTime: sw.BurnBlockTime, TxStatus: "success", Source: "sweep"})
			require.NoError(t, err)
		}
	}

	base := startServe(t, bin, dbURL)
	campaignAPI := base + aibtc.Prefix // AIBTC_CAMPAIGN_API_URL

	// competition_status: /status first.
	var status map[string]any
	clientGet(t, campaignAPI+"/status?address="+url.QueryEscape(agent), &status)
	require.Equal(t, json.Number("42"), status["agent_id"], "an ERC-8004 id: the client does not tell its model to register")
	require.Equal(t, true, status["registered"])
	require.Equal(t, json.Number("230"), status["trade_count"])

	// collectAllTrades: limit=200, through next_cursor, at most 10 pages.
	var rows []map[string]any
	cursor := ""
	pages := 0
	for ; pages < 10; pages++ {
		q := url.Values{"address": {agent}, "limit": {"200"}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		var page struct {
			Trades     []map[string]any `json:"trades"`
			NextCursor *string          `json:"next_cursor"`
		}
		clientGet(t, campaignAPI+"/trades?"+q.Encode(), &page)
		rows = append(rows, page.Trades...)
		if page.NextCursor == nil {
			break
		}
		cursor = *page.NextCursor
	}
	require.Equal(t, 1, pages, "two pages: 200 and 30")
	seen := map[string]bool{}
	for _, r := range rows {
		txid := r["txid"].(string)
		require.False(t, seen[txid], "%s twice", txid)
		seen[txid] = true
		w, ok := want[txid]
		require.True(t, ok, "%s is not the agent's", txid)
		require.Equal(t, json.Number(w.AmountIn), r["amount_in"], "exact above 2^53")
		require.Equal(t, json.Number(w.AmountOut), r["amount_out"])
	}
	require.Len(t, seen, 230)

	// computeCampaignStats, on exact rationals.
	teneroKey := func(token string) string { c, _, _ := strings.Cut(token, "::"); return c }
	value := func(token string, amount json.Number) (*big.Rat, bool) {
		p, ok := tenero[teneroKey(token)]
		if !ok {
			return nil, false
		}
		v, _ := new(big.Rat).SetString(amount.String())
		price, _ := new(big.Rat).SetString(p.usd)
		dec, _ := new(big.Int).SetString(p.decimals, 10)
		scale := new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), dec, nil))
		return v.Mul(v, price).Quo(v, scale), true
	}
	pnl, notional := new(big.Rat), new(big.Rat)
	priced, unpriced := 0, 0
	for _, r := range rows {
		if r["tx_status"] != "success" {
			continue
		}
		in, okIn := value(r["token_in"].(string), r["amount_in"].(json.Number))
		out, okOut := value(r["token_out"].(string), r["amount_out"].(json.Number))
		if !okIn || !okOut {
			unpriced++
			continue
		}
		pnl.Add(pnl, new(big.Rat).Sub(out, in))
		notional.Add(notional, in)
		priced++
	}
	require.Equal(t, 230, priced, "every token of this agent is priced")
	require.Zero(t, unpriced)
	clientPnL, _ := pnl.Float64()
	clientNotional, _ := notional.Float64()

	var board api.LeaderboardResponse
	resp, err := http.Get(base + "/api/competition/leaderboard?limit=200&sort=pnl")
	require.NoError(t, err)
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&board))
	resp.Body.Close()
	var row *api.LeaderboardRow
	for i := range board.Rows {
		if board.Rows[i].STXAddress == agent {
			row = &board.Rows[i]
		}
	}
	require.NotNil(t, row)
	require.True(t, row.AllPriced)
	require.InEpsilon(t, clientPnL, row.PnLUSD, 1e-9, "the client's P&L is the leaderboard's")
	require.InEpsilon(t, clientNotional, row.VolumeUSD, 1e-9)
	t.Logf("figures: the agents' client against pacer serve: 230 swaps in %d pages of limit=200, each once; client P&L %.6f USD, leaderboard pnlUsd %.6f USD",
		pages+1, clientPnL, row.PnLUSD)
}

// clientGet GETs a URL as the client's competitionFetch does (a 10 s
// bound, a non-2xx is an error) and decodes its JSON keeping digits.
func clientGet(t *testing.T, u string, out any) {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(u)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", u, b)
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.UseNumber()
	require.NoError(t, dec.Decode(out))
}

// startServe runs `pacer serve` on free loopback addresses against the
// database (Temporal unreachable: the competition's reads need only
// Postgres) and waits until it answers.
func startServe(t *testing.T, bin, dbURL string) string {
	t.Helper()
	free := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addr := ln.Addr().String()
		require.NoError(t, ln.Close())
		return addr
	}
	addr := free()
	cmd := exec.Command(bin, "serve", "--http", addr)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir(), "PACER_ADMIN_ADDR=" + free(),
		"TEMPORAL_ADDRESS=" + testenv.HungListener(t), "DATABASE_URL=" + dbURL}
	logFile, err := os.Create(filepath.Join(t.TempDir(), "serve.log"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = logFile.Close() })
	cmd.Stdout, cmd.Stderr = logFile, logFile
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			b, _ := os.ReadFile(logFile.Name())
			t.Logf("pacer serve output:\n%s", b)
		}
	})
	base := "http://" + addr
	deadline := time.After(30 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("pacer serve exited: %v", err)
		case <-deadline:
			t.Fatal("pacer serve did not answer in 30 s")
		case <-tick.C:
			if resp, err := http.Get(base + "/healthz"); err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					return base
				}
			}
		}
	}
}
