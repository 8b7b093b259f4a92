package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/api"
	"github.com/pacer-dev/pacer/internal/api/aibtc"
	"github.com/pacer-dev/pacer/internal/catalog"
	"github.com/pacer-dev/pacer/internal/competition"
	"github.com/pacer-dev/pacer/internal/registry"
	"github.com/pacer-dev/pacer/internal/sim"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/internal/testenv"
)

// The landing page's fields, written out from SPEC §7.1 and the client's
// CompetitionSwapRow / CompetitionStatusRow (aibtcdev/aibtc-mcp-server,
// landing-page lib/competition/d1-reads.ts), not from pacer's types.
var (
	landingRowFields = []string{"txid", "sender", "contract_id", "function_name", "token_in", "amount_in", "token_out",
		"amount_out", "burn_block_time", "tx_status", "source", "scored_value", "scored_at"}
	landingStatusFields = []string{"address", "agent_id", "registered", "trade_count", "verified_trade_count",
		"first_trade_at", "last_trade_at"}
)

// stxAddr is a valid mainnet address (c32, checksummed) for agent n.
func stxAddr(n int) string {
	h := make([]byte, 20)
	h[18], h[19] = byte(n>>8), byte(n)
	return registry.EncodeSTX(22, h)
}

// getAIBTC GETs a path under the prefix and decodes its body keeping
// every number's digits.
func getAIBTC(t *testing.T, base, path string) (int, http.Header, map[string]any) {
	t.Helper()
	resp, err := http.Get(base + aibtc.Prefix + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	require.NoError(t, dec.Decode(&m), string(b))
	return resp.StatusCode, resp.Header, m
}

func keys(m map[string]any) []string { return slices.Sorted(maps.Keys(m)) }

func sorted(s []string) []string { return slices.Sorted(slices.Values(s)) }

// The trades list in the landing page's shape: paged with next_cursor,
// each row once with exactly the contract's fields, amounts exact past
// 2^53 (and 2^64), readers' rows as "cron"; the status with the ERC-8004
// id and the counts; the parameter errors as 400s.
func TestAIBTCTradesAndStatus(t *testing.T) {
	t.Parallel()
	f := newBoardFixture(t)
	ctx := context.Background()
	agent, other, unknown := stxAddr(1), stxAddr(2), stxAddr(3)
	f.exec(t, `insert into agents (stx_address, btc_address, erc8004_agent_id) values ($1, 'bc1qagent', 42), ($2, null, null)`, agent, other)
	sources := []string{competition.SourceAgent, competition.SourceSweep, competition.SourceChainhook}
	want := map[string]competition.Swap{}
	for i := range 7 {
		sw := competition.Swap{TxID: fmt.Sprintf("0x%064x", i+1), Sender: agent, ContractID: "SP1.pool", FunctionName: "swap-x-for-y",
			TokenIn: "stx", AmountIn: strconv.Itoa(9007199254740993 + i), TokenOut: "SP1.tok::t",
			AmountOut: "18446744073709551617" + strconv.Itoa(i), BurnBlockTime: 1_778_700_600 + int64(i/2)*60, // ties
			TxStatus: "success", Source: sources[i%3]}
		_, err := f.st.InsertSwap(ctx, sw)
		require.NoError(t, err)
		want[sw.TxID] = sw
	}
	_, err := f.st.InsertSwap(ctx, competition.Swap{TxID: fmt.Sprintf("0x%064x", 99), Sender: other, ContractID: "SP1.pool",
		FunctionName: "swap", TokenIn: "stx", AmountIn: "1", TokenOut: "stx", AmountOut: "1", BurnBlockTime: 1_778_700_700,
		TxStatus: "success", Source: "sweep"})
	require.NoError(t, err)

	seen := map[string]int{}
	path := "/trades?limit=3&address=" + agent
	var lastKey []any
	for pages := 0; ; pages++ {
		require.Less(t, pages, 5)
		code, _, body := getAIBTC(t, f.srv.URL, path)
		require.Equal(t, http.StatusOK, code, body)
		require.Equal(t, []string{"next_cursor", "trades"}, keys(body))
		for _, x := range body["trades"].([]any) {
			row := x.(map[string]any)
			require.Equal(t, sorted(landingRowFields), keys(row))
			w := want[row["txid"].(string)]
			seen[w.TxID]++
			require.Equal(t, agent, row["sender"])
			require.Equal(t, json.Number(w.AmountIn), row["amount_in"], "an integer with its exact digits")
			require.Equal(t, json.Number(w.AmountOut), row["amount_out"])
			require.Equal(t, json.Number(strconv.FormatInt(w.BurnBlockTime, 10)), row["burn_block_time"])
			require.Equal(t, "success", row["tx_status"])
			require.Equal(t, map[string]string{"agent": "agent", "sweep": "cron", "chainhook": "chainhook"}[w.Source], row["source"])
			require.Nil(t, row["scored_value"])
			require.Nil(t, row["scored_at"])
			require.Equal(t, w.ContractID, row["contract_id"])
			require.Equal(t, w.FunctionName, row["function_name"])
			key := []any{w.BurnBlockTime, w.TxID}
			if lastKey != nil {
				// Newest first by (burn_block_time, txid).
				require.True(t, key[0].(int64) < lastKey[0].(int64) || key[0] == lastKey[0] && key[1].(string) < lastKey[1].(string))
			}
			lastKey = key
		}
		if body["next_cursor"] == nil {
			break
		}
		path = "/trades?limit=3&address=" + agent + "&cursor=" + body["next_cursor"].(string)
	}
	require.Len(t, seen, 7)
	for txid, n := range seen {
		require.Equal(t, 1, n, txid)
	}

	// The landing page's own clamping and errors.
	code, _, body := getAIBTC(t, f.srv.URL, "/trades?limit=0&address="+agent)
	require.Equal(t, http.StatusOK, code)
	require.Len(t, body["trades"], 1)
	require.NotNil(t, body["next_cursor"])
	code, _, body = getAIBTC(t, f.srv.URL, "/trades?limit=999&address="+agent)
	require.Equal(t, http.StatusOK, code)
	require.Len(t, body["trades"], 7)
	for _, bad := range []string{"/trades", "/trades?address=SPnope", "/trades?address=" + agent + "&limit=many",
		"/trades?address=" + agent + "&cursor=bm90LWpzb24", "/status", "/status?address=bc1qagent"} {
		code, _, body := getAIBTC(t, f.srv.URL, bad)
		require.Equal(t, http.StatusBadRequest, code, bad)
		require.NotEmpty(t, body["error"], bad)
	}

	code, _, body = getAIBTC(t, f.srv.URL, "/status?address="+agent)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, sorted(landingStatusFields), keys(body), "no latestRoundResult without a finalized round")
	require.Equal(t, map[string]any{"address": agent, "agent_id": json.Number("42"), "registered": true,
		"trade_count": json.Number("7"), "verified_trade_count": json.Number("7"),
		"first_trade_at": json.Number("1778700600"), "last_trade_at": json.Number("1778700780")}, body)
	code, _, body = getAIBTC(t, f.srv.URL, "/status?address="+other)
	require.Equal(t, http.StatusOK, code)
	require.Nil(t, body["agent_id"], "no ERC-8004 id yet: the client tells its model to register one")
	require.Equal(t, true, body["registered"])
	code, _, body = getAIBTC(t, f.srv.URL, "/status?address="+unknown)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, map[string]any{"address": unknown, "agent_id": nil, "registered": false, "trade_count": json.Number("0"),
		"verified_trade_count": json.Number("0"), "first_trade_at": nil, "last_trade_at": nil}, body)

	// The two encodings are one read: the same rows, the same order.
	var native api.TradesResponse
	f.getJSON(t, "/api/competition/trades?limit=200&address="+agent, &native)
	_, _, body = getAIBTC(t, f.srv.URL, "/trades?limit=200&address="+agent)
	require.Len(t, body["trades"], len(native.Trades))
	for i, x := range body["trades"].([]any) {
		require.Equal(t, native.Trades[i].TxID, x.(map[string]any)["txid"])
	}
}

// Every GET answers ?docs=1 with its description without touching the
// database: with the store closed, the data answers are 503s and the
// descriptions are still there.
func TestAIBTCDocsWithoutTheDatabase(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	srv := httptest.NewServer(api.New(api.Options{Store: st, Catalog: catalog.Default(), ReadsPerMinute: 1000, ReadsPerSecond: 1000}))
	t.Cleanup(srv.Close)
	st.Close()
	agent := stxAddr(1)
	for route, path := range map[string]string{
		"/trades":                                "/trades?address=" + agent,
		"/status":                                "/status?address=" + agent,
		"/allowlist":                             "/allowlist",
		"/rounds":                                "/rounds",
		"/rounds/{roundId}":                      "/rounds/week-1",
		"/rounds/{roundId}/results/{stxAddress}": "/rounds/week-1/results/" + agent,
	} {
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		code, h, body := getAIBTC(t, srv.URL, path+sep+"docs=1")
		require.Equal(t, http.StatusOK, code, path)
		require.Equal(t, aibtc.Prefix+route, body["endpoint"])
		require.NotEmpty(t, body["responseFormat"], path)
		require.NotEmpty(t, body["description"], path)
		require.Contains(t, h.Get("Cache-Control"), "public")
		if route == "/trades" || route == "/status" {
			code, h, body := getAIBTC(t, srv.URL, path)
			require.Equal(t, http.StatusServiceUnavailable, code, path)
			require.Equal(t, map[string]any{"error": "database unavailable", "code": "db_unavailable", "retryable": true,
				"retry_after": json.Number("2")}, body)
			require.Equal(t, "2", h.Get("Retry-After"))
		}
	}
}

// The allowlist in the landing page's shape, from the same catalog as
// pacer's own.
func TestAIBTCAllowlist(t *testing.T) {
	t.Parallel()
	f := newBoardFixture(t)
	code, _, body := getAIBTC(t, f.srv.URL, "/allowlist")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, []string{"entries", "protocols", "provider_address", "total_contracts", "total_functions"}, keys(body))
	cat := catalog.Default()
	pairs := map[string][]string{}
	for _, p := range cat.Pairs() {
		pairs[p.ContractID] = append(pairs[p.ContractID], p.Function)
	}
	entries := body["entries"].([]any)
	require.Len(t, entries, len(pairs))
	total := 0
	for _, e := range entries {
		m := e.(map[string]any)
		require.Equal(t, []string{"contract_id", "functions"}, keys(m))
		var fns []string
		for _, fn := range m["functions"].([]any) {
			fns = append(fns, fn.(string))
		}
		require.ElementsMatch(t, pairs[m["contract_id"].(string)], fns)
		total += len(fns)
	}
	require.Equal(t, json.Number(strconv.Itoa(len(pairs))), body["total_contracts"])
	require.Equal(t, json.Number(strconv.Itoa(total)), body["total_functions"])
	require.Equal(t, cat.ProviderAddress(), body["provider_address"])
	require.Equal(t, map[string]any{"bitflow": json.Number(strconv.Itoa(len(pairs)))}, body["protocols"])
}

// A client over its read limit gets the landing page's 429 on its routes
// ({error, retryAfter} and Retry-After), pacer's own on pacer's.
func TestAIBTCReadLimit(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	srv := httptest.NewServer(api.New(api.Options{Store: st, Catalog: catalog.Default(), ReadsPerMinute: 2, ReadsPerSecond: 1000}))
	t.Cleanup(srv.Close)
	for range 2 {
		code, _, _ := getAIBTC(t, srv.URL, "/allowlist")
		require.Equal(t, http.StatusOK, code)
	}
	code, h, body := getAIBTC(t, srv.URL, "/allowlist")
	require.Equal(t, http.StatusTooManyRequests, code)
	require.Equal(t, []string{"error", "retryAfter"}, keys(body))
	require.Equal(t, h.Get("Retry-After"), body["retryAfter"].(json.Number).String())
}

// The rounds routes before any round is finalized: an empty list and
// round_not_found; a malformed address is a 400 before anything is read.
func TestAIBTCRoundsWithoutRounds(t *testing.T) {
	t.Parallel()
	f := newBoardFixture(t)
	code, _, body := getAIBTC(t, f.srv.URL, "/rounds")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, map[string]any{"rounds": []any{}, "pagination": map[string]any{"limit": json.Number("20"),
		"offset": json.Number("0"), "hasMore": false}}, body)
	code, _, body = getAIBTC(t, f.srv.URL, "/rounds?limit=500&offset=-3")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, map[string]any{"limit": json.Number("100"), "offset": json.Number("0"), "hasMore": false}, body["pagination"])
	for _, path := range []string{"/rounds/week-1", "/rounds/NOT_AN_ID", "/rounds/week-1/results/" + stxAddr(1)} {
		code, _, body = getAIBTC(t, f.srv.URL, path)
		require.Equal(t, http.StatusNotFound, code, path)
		require.Equal(t, aibtc.CodeRoundNotFound, body["error"])
	}
	code, _, _ = getAIBTC(t, f.srv.URL, "/rounds/week-1/results/SPnope")
	require.Equal(t, http.StatusBadRequest, code)
	code, _, _ = getAIBTC(t, f.srv.URL, "/rounds?limit=x")
	require.Equal(t, http.StatusBadRequest, code)
}

// The submit route answers as the client's documentation promises: the
// bare row (amounts exact past 2^64), 409 with the existing row, 202
// pending, 404 and 422 with {error, code, retryable:false}, 502 retryable.
func TestAIBTCSubmit(t *testing.T) {
	t.Parallel()
	f := newTradeFixture(t)
	post := func(txid string) (int, http.Header, map[string]any) {
		resp, err := http.Post(f.srv.URL+aibtc.Prefix+"/trades", "application/json",
			strings.NewReader(`{"txid":"`+txid+`","note":"fields the landing page ignored"}`))
		require.NoError(t, err)
		defer resp.Body.Close()
		var m map[string]any
		dec := json.NewDecoder(resp.Body)
		dec.UseNumber()
		require.NoError(t, dec.Decode(&m))
		return resp.StatusCode, resp.Header, m
	}
	huge := f.txOf(t, sim.CaseHuge)
	var expected competition.Swap
	for _, sw := range f.world.ExpectedSwaps(worldAt) {
		if sw.TxID == huge {
			expected = sw
		}
	}
	require.NotEmpty(t, expected.TxID)
	code, _, body := post(huge)
	require.Equal(t, http.StatusOK, code, body)
	require.Equal(t, sorted(landingRowFields), keys(body), "the bare row")
	require.Equal(t, json.Number(expected.AmountIn), body["amount_in"])
	require.Equal(t, json.Number(expected.AmountOut), body["amount_out"])
	require.Equal(t, "agent", body["source"])
	require.Equal(t, "success", body["tx_status"])

	code, _, body = post(huge)
	require.Equal(t, http.StatusConflict, code)
	require.Equal(t, []string{"code", "error", "existing_row", "retryable"}, keys(body))
	require.Equal(t, "txid_already_verified", body["code"])
	require.Equal(t, false, body["retryable"])
	require.Equal(t, huge, body["existing_row"].(map[string]any)["txid"])
	require.Equal(t, json.Number(expected.AmountIn), body["existing_row"].(map[string]any)["amount_in"])

	code, _, body = post(f.txOf(t, sim.CasePending))
	require.Equal(t, http.StatusAccepted, code)
	require.Equal(t, true, body["accepted"])
	require.NotEmpty(t, body["note"])

	code, _, body = post(f.txOf(t, sim.CaseNotFound))
	require.Equal(t, http.StatusNotFound, code)
	require.Equal(t, []string{"code", "error", "retryable"}, keys(body))
	require.Equal(t, map[string]any{"code": "tx_not_found", "retryable": false}, map[string]any{"code": body["code"], "retryable": body["retryable"]})

	offList := f.txOf(t, sim.CaseOffList)
	code, _, body = post(offList)
	require.Equal(t, http.StatusUnprocessableEntity, code)
	require.Equal(t, string(f.world.ExpectedOutcomes(worldAt)[offList].Reason), body["code"])
	require.Equal(t, false, body["retryable"])

	code, _, body = post("0xnothex")
	require.Equal(t, http.StatusBadRequest, code)
	require.Equal(t, false, body["retryable"])

	require.NoError(t, f.sim.SetFaults(sim.Faults{PathPrefix: "/extended/", ServerError: 1}))
	code, h, body := post(f.otherSwap(t, huge))
	require.Equal(t, http.StatusBadGateway, code)
	require.Equal(t, "tx_fetch_failed", body["code"])
	require.Equal(t, true, body["retryable"])
	require.NotEmpty(t, h.Get("Retry-After"))
}

// Finalized rounds in the landing page's shapes (its RoundResult and
// CompetitionReward fields): the list newest first, a round's detail, an
// agent's result and its latestRoundResult on /status; a round still open
// is round_not_found everywhere.
func TestAIBTCRounds(t *testing.T) {
	t.Parallel()
	f := newBoardFixture(t)
	ctx := context.Background()
	placed, absent := stxAddr(11), stxAddr(12)
	f.exec(t, `insert into agents (stx_address, btc_address, erc8004_agent_id) values ($1, 'bc1qplaced', 7), ($2, null, null)`, placed, absent)
	start := time.Date(2026, 5, 13, 19, 30, 0, 0, time.UTC)
	change := store.Change{At: start, Actor: "test", Action: store.ActionRoundPut}
	id7 := int64(7)
	pct := 0.0248
	latest := int64(1779000000)
	for i, id := range []string{"week-1", "week-2", "week-3"} {
		s := start.AddDate(0, 0, 7*i)
		_, _, err := f.st.PutRound(ctx, store.RoundSpec{ID: id, StartsAt: s, EndsAt: s.AddDate(0, 0, 7),
			GraceEndsAt: s.AddDate(0, 0, 7).Add(time.Hour), MinVolumeUSD: 50, MinPricedTradeCount: 3}, change)
		require.NoError(t, err)
		if id == "week-3" {
			continue // still open
		}
		_, err = f.st.FinalizeRound(ctx, id, func(in store.FinalizeInputs) (store.FinalizeOutcome, error) {
			return store.FinalizeOutcome{
				Results: []store.RoundResult{{RoundID: id, Rank: 1, STXAddress: placed, BTCAddress: "bc1qplaced", ERC8004AgentID: &id7,
					TradeCount: 5, PricedTradeCount: 4, UnpricedTradeCount: 1, VolumeUSD: 1, ReceivedUSD: 1.0248, PnLUSD: 0.0248,
					PnLPercent: &pct, LatestTradeAt: &latest, SourceCounts: store.SourceCounts{Agent: 3, Sweep: 2},
					UnpricedTokens: []string{"SP1.x::x"}, CalculatedAt: in.At}},
				Rewards: []store.RoundReward{{RoundID: id, Category: store.RewardOverallPnL, Rank: 1, STXAddress: placed,
					ERC8004AgentID: &id7, Status: store.RewardPending, CreatedAt: in.At}},
			}, nil
		})
		require.NoError(t, err)
	}

	code, _, body := getAIBTC(t, f.srv.URL, "/rounds?limit=1")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, map[string]any{"limit": json.Number("1"), "offset": json.Number("0"), "hasMore": true}, body["pagination"])
	rounds := body["rounds"].([]any)
	require.Len(t, rounds, 1)
	r := rounds[0].(map[string]any)
	require.Equal(t, "week-2", r["round_id"], "newest first; week-3 is not final")
	require.Equal(t, []string{"created_at", "ends_at", "finalized_at", "grace_ends_at", "min_priced_trade_count",
		"min_volume_usd", "round_id", "starts_at", "status"}, keys(r))
	require.Equal(t, json.Number(strconv.FormatInt(start.AddDate(0, 0, 7).Unix(), 10)), r["starts_at"])
	require.Equal(t, "finalized", r["status"])
	require.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`, r["finalized_at"])

	code, _, body = getAIBTC(t, f.srv.URL, "/rounds/week-1")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, []string{"results", "rewards", "round"}, keys(body))
	res := body["results"].([]any)[0].(map[string]any)
	require.Equal(t, []string{"btc_address", "calculated_at", "erc8004_agent_id", "latest_trade_at", "pnl_percent", "pnl_usd",
		"priced_trade_count", "rank", "received_usd", "result_json", "round_id", "stx_address", "trade_count",
		"unpriced_trade_count", "volume_usd"}, keys(res))
	require.Equal(t, json.Number("0.0248"), res["pnl_percent"], "a fraction, as the landing page stores it")
	require.Equal(t, map[string]any{"source_counts": map[string]any{"agent": json.Number("3"), "cron": json.Number("2"),
		"chainhook": json.Number("0")}, "unpriced_tokens": []any{"SP1.x::x"}}, res["result_json"])
	rw := body["rewards"].([]any)[0].(map[string]any)
	require.Equal(t, []string{"amount_sats", "category", "created_at", "erc8004_agent_id", "notes", "paid_at", "payout_txid",
		"rank", "round_id", "status", "stx_address"}, keys(rw))

	code, _, body = getAIBTC(t, f.srv.URL, "/rounds/week-1/results/"+placed)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "week-1", body["round_id"])
	require.Equal(t, json.Number("1"), body["result"].(map[string]any)["rank"])
	code, _, body = getAIBTC(t, f.srv.URL, "/rounds/week-1/results/"+absent)
	require.Equal(t, http.StatusNotFound, code)
	require.Equal(t, aibtc.CodeAgentNotPlaced, body["error"])
	for _, path := range []string{"/rounds/week-3", "/rounds/week-3/results/" + placed} {
		code, _, body = getAIBTC(t, f.srv.URL, path)
		require.Equal(t, http.StatusNotFound, code, path)
		require.Equal(t, aibtc.CodeRoundNotFound, body["error"], path)
	}

	code, _, body = getAIBTC(t, f.srv.URL, "/status?address="+placed)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "week-2", body["latestRoundResult"].(map[string]any)["round_id"], "the newest finalized round it placed in")
	code, _, body = getAIBTC(t, f.srv.URL, "/status?address="+absent)
	require.Equal(t, http.StatusOK, code)
	require.NotContains(t, body, "latestRoundResult")
}
