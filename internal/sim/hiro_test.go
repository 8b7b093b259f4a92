package sim

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/competition"
	"github.com/pacer-dev/pacer/internal/fault"
	"github.com/pacer-dev/pacer/internal/hiro"
)

func listPath(principal, query string) string {
	return "/extended/v1/address/" + principal + "/transactions" + query
}

func txPath(txid string) string { return "/extended/v1/tx/" + txid }

func v3Path(principal, query string) string {
	return "/extended/v3/principals/" + principal + "/transactions" + query
}

// txOf returns the first transaction of case c.
func txOf(t *testing.T, w *World, c TxCase) WorldTx {
	t.Helper()
	for _, tx := range w.Transactions() {
		if tx.Case == c {
			return tx
		}
	}
	t.Fatalf("no %s transaction", c)
	return WorldTx{}
}

// busiest returns the agent with the longest list once everything exists.
func busiest(w *World) string {
	counts := map[string]int{}
	best := ""
	for _, tx := range w.Transactions() {
		for _, a := range tx.ListedUnder {
			counts[a]++
			if counts[a] > counts[best] || (counts[a] == counts[best] && a < best) {
				best = a
			}
		}
	}
	return best
}

type listBody struct {
	Limit   int               `json:"limit"`
	Offset  int               `json:"offset"`
	Total   int               `json:"total"`
	Results []json.RawMessage `json:"results"`
}

func decodeList(t *testing.T, rec *httptest.ResponseRecorder) (listBody, []hiro.TxSummary) {
	t.Helper()
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	var body listBody
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body))
	var page hiro.Page
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &page))
	return body, page.Results
}

func TestHiroAddressTransactions(t *testing.T) {
	t.Parallel()
	s, clock := newSim(t, Config{Seed: 31})
	clock.Add(settled.Sub(epoch))
	w := s.World()
	agent := busiest(w)

	rec := get(t, s, listPath(agent, ""))
	require.Equal(t, "application/json", rec.Header().Get("Content-Type"))
	require.True(t, strings.HasPrefix(rec.Header().Get("Warning"), `299 - "Deprecated`), rec.Header().Get("Warning"))
	first, results := decodeList(t, rec)
	require.Equal(t, hiroDefaultLimit, first.Limit)
	require.Zero(t, first.Offset)
	require.Greater(t, first.Total, hiroDefaultLimit)
	require.Len(t, results, hiroDefaultLimit)

	all, allResults := decodeList(t, get(t, s, listPath(agent, "?limit=50")))
	require.Equal(t, first.Total, all.Total)
	require.Len(t, allResults, all.Total)
	rest, restResults := decodeList(t, get(t, s, listPath(agent, "?limit=20&offset=20")))
	require.Equal(t, 20, rest.Offset)
	require.Equal(t, allResults, append(results, restResults...), "pages join up")
	past, pastResults := decodeList(t, get(t, s, listPath(agent, "?offset=100")))
	require.Equal(t, all.Total, past.Total)
	require.Empty(t, pastResults)

	// Events always empty, though event_count says how many; the order is
	// TestHiroAddressTransactionsOrder's.
	for i, raw := range all.Results {
		var tx struct {
			Events     []json.RawMessage `json:"events"`
			EventCount *int              `json:"event_count"`
			TxStatus   string            `json:"tx_status"`
		}
		require.NoError(t, json.Unmarshal(raw, &tx))
		require.NotNil(t, tx.Events, "events is [] rather than missing")
		require.Empty(t, tx.Events)
		require.Equal(t, inMempool(tx.TxStatus), tx.EventCount == nil, "mined transactions count their events")
		require.Contains(t, listedUnder(w, allResults[i].TxID), agent)
	}

	for _, tt := range []struct {
		name     string
		give     string
		wantCode int
	}{
		{"limit above 50", listPath(agent, "?limit=51"), http.StatusBadRequest},
		{"limit not a number", listPath(agent, "?limit=ten"), http.StatusBadRequest},
		{"negative offset", listPath(agent, "?offset=-1"), http.StatusBadRequest},
		{"not a principal", listPath("not-an-address", ""), http.StatusBadRequest},
		{"limit 50", listPath(agent, "?limit=50"), http.StatusOK},
		{"unknown address", listPath("SP000000000000000000002Q6VF78", ""), http.StatusOK},
		{"contract principal", listPath(stableswapSTX, ""), http.StatusOK},
	} {
		rec := get(t, s, tt.give)
		require.Equal(t, tt.wantCode, rec.Code, "%s: %s", tt.name, rec.Body.String())
		require.Equal(t, "application/json", rec.Header().Get("Content-Type"), tt.name)
	}
	rec = get(t, s, listPath(agent, "?limit=51"))
	require.Contains(t, decode(t, rec.Body.Bytes())["error"], "limit must be <= 50")
	require.JSONEq(t, `{"limit":20,"offset":0,"total":0,"results":[]}`, get(t, s, listPath("SP000000000000000000002Q6VF78", "")).Body.String())
}

// listedUnder is a transaction's ListedUnder.
func listedUnder(w *World, txid string) []string {
	for _, tx := range w.Transactions() {
		if tx.TxID == txid {
			return tx.ListedUnder
		}
	}
	return nil
}

func TestHiroTx(t *testing.T) {
	t.Parallel()
	s, clock := newSim(t, Config{Seed: 32})
	clock.Add(settled.Sub(epoch))
	w := s.World()

	swap := txOf(t, w, CaseMultiHop)
	rec := get(t, s, txPath(swap.TxID))
	require.Equal(t, http.StatusOK, rec.Code)
	require.Contains(t, rec.Header().Get("Warning"), "Deprecated", "the v9 API deprecates the detail too")
	var tx hiro.Tx
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &tx))
	require.Equal(t, swap.TxID, tx.TxID)
	require.Equal(t, "success", tx.TxStatus)
	require.Equal(t, swap.Sender, tx.SenderAddress)
	require.Equal(t, swap.ContractID, tx.ContractCall.ContractID)
	require.Equal(t, swap.FunctionName, tx.ContractCall.FunctionName)
	require.Equal(t, swap.AppearsAt.Unix(), tx.BlockTime)
	require.Equal(t, BurnBlockOf(swap.AppearsAt).Unix(), tx.BurnBlockTime)
	require.Greater(t, len(tx.Events), 2)
	body := decode(t, rec.Body.Bytes())
	require.Equal(t, json.Number(strconv.Itoa(len(tx.Events))), body["event_count"])
	for i, ev := range body["events"].([]any) {
		e := ev.(map[string]any)
		require.Equal(t, swap.TxID, e["tx_id"])
		require.Equal(t, json.Number(strconv.Itoa(i)), e["event_index"])
		require.Contains(t, []string{"stx_asset", "fungible_token_asset", "smart_contract_log"}, e["event_type"])
	}

	// Hiro takes ids without 0x and in upper case too.
	for _, id := range []string{strings.TrimPrefix(swap.TxID, "0x"), "0x" + strings.ToUpper(swap.TxID[2:])} {
		require.Equal(t, rec.Body.String(), get(t, s, txPath(id)).Body.String())
	}

	unknown := "0x" + strings.Repeat("ab", 32)
	rec = get(t, s, txPath(unknown))
	require.Equal(t, http.StatusNotFound, rec.Code)
	require.JSONEq(t, `{"error":"could not find transaction by ID","message":"could not find transaction by ID `+unknown+`"}`, rec.Body.String())
	require.Equal(t, http.StatusBadRequest, get(t, s, txPath("0xdeadbeef")).Code)

	require.Equal(t, http.StatusNotFound, get(t, s, txPath(txOf(t, w, CaseNotFound).TxID)).Code)
	for range 3 {
		require.Equal(t, http.StatusInternalServerError, get(t, s, txPath(txOf(t, w, CaseFetchFails).TxID)).Code, "always")
	}
	require.Equal(t, 3, s.Stats().Count(HiroTxRoute, http.StatusInternalServerError))
}

func TestHiroTransactionsOverTime(t *testing.T) {
	t.Parallel()
	s, clock := newSim(t, Config{Seed: 33})
	w := s.World()
	// One that is still to come at the origin.
	var tx WorldTx
	for _, c := range w.Transactions() {
		if c.Case == CaseConfirmsLater && c.AppearsAt.After(epoch) {
			tx = c
			break
		}
	}
	require.NotEmpty(t, tx.TxID, "an arrival that confirms later")
	agent := tx.Sender
	inList := func() (hiro.TxSummary, bool) {
		_, results := decodeList(t, get(t, s, listPath(agent, "?limit=50")))
		for _, r := range results {
			if r.TxID == tx.TxID {
				return r, true
			}
		}
		return hiro.TxSummary{}, false
	}
	detail := func() (int, map[string]any) {
		rec := get(t, s, txPath(tx.TxID))
		if rec.Code != http.StatusOK {
			return rec.Code, nil
		}
		return rec.Code, decode(t, rec.Body.Bytes())
	}

	clock.Add(tx.AppearsAt.Sub(epoch) - time.Second)
	_, listed := inList()
	require.False(t, listed, "not yet sent")
	code, _ := detail()
	require.Equal(t, http.StatusNotFound, code)
	require.NotContains(t, w.ExpectedOutcomes(clock.Now()), tx.TxID)

	clock.Add(time.Second)
	summary, listed := inList()
	require.True(t, listed)
	require.Equal(t, "pending", summary.TxStatus)
	code, body := detail()
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "pending", body["tx_status"])
	require.NotContains(t, body, "burn_block_time", "a mempool tx has no block")
	require.Equal(t, json.Number(strconv.FormatInt(tx.AppearsAt.Unix(), 10)), body["receipt_time"])
	require.Empty(t, body["events"])
	require.Equal(t, competition.StatusPending, w.ExpectedOutcomes(clock.Now())[tx.TxID].Status)

	clock.Add(tx.SettlesAt.Sub(tx.AppearsAt))
	summary, listed = inList()
	require.True(t, listed)
	require.Equal(t, "success", summary.TxStatus)
	require.Equal(t, tx.SettlesAt.Unix(), summary.BlockTime, "mined when it settled")
	require.Equal(t, BurnBlockOf(tx.SettlesAt).Unix(), summary.BurnBlockTime, "in its tenure")
	code, body = detail()
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "success", body["tx_status"])
	require.NotEmpty(t, body["events"])
	require.Equal(t, competition.StatusInserted, w.ExpectedOutcomes(clock.Now())[tx.TxID].Status)
	require.True(t, slices.ContainsFunc(w.ExpectedSwaps(clock.Now()), func(sw competition.Swap) bool { return sw.TxID == tx.TxID }))
}

func TestHiroRateLimits(t *testing.T) {
	t.Parallel()

	t.Run("anonymous", func(t *testing.T) {
		t.Parallel()
		s, clock := newSim(t, Config{Seed: 34})
		clock.Add(15 * time.Second)
		path := listPath(s.World().Agents()[0].STXAddress, "")
		for i := range 50 {
			rec := get(t, s, path)
			require.Equal(t, http.StatusOK, rec.Code)
			require.Equal(t, "50", rec.Header().Get("ratelimit-limit"))
			require.Equal(t, strconv.Itoa(49-i), rec.Header().Get("ratelimit-remaining"))
			require.Equal(t, strconv.Itoa(49-i), rec.Header().Get("x-ratelimit-remaining-stacks-minute"))
			require.Equal(t, "45", rec.Header().Get("ratelimit-reset"))
			require.Empty(t, rec.Header().Get("x-ratelimit-remaining-stacks-month"), "no month quota without a key")
			require.Empty(t, rec.Header().Get("x-ratelimit-limit-stacks-month"))
		}
		rec := get(t, s, txPath(s.World().Transactions()[0].TxID))
		require.Equal(t, http.StatusTooManyRequests, rec.Code, "one budget for every Hiro route")
		require.Equal(t, "45", rec.Header().Get("retry-after"))
		require.Equal(t, "0", rec.Header().Get("ratelimit-remaining"))
		require.Equal(t, 1, s.Stats().Count(HiroTxRoute, http.StatusTooManyRequests))

		// A key is a budget of its own.
		rec = get(t, s, path, "x-api-key", "k1")
		require.Equal(t, http.StatusOK, rec.Code)
		require.Equal(t, "499", rec.Header().Get("x-ratelimit-remaining-stacks-minute"))
		require.Equal(t, "150000", rec.Header().Get("x-ratelimit-limit-stacks-month"))
		require.Equal(t, "149999", rec.Header().Get("x-ratelimit-remaining-stacks-month"))

		clock.Add(45 * time.Second)
		rec = get(t, s, path)
		require.Equal(t, http.StatusOK, rec.Code, "a new minute")
		require.Equal(t, "49", rec.Header().Get("ratelimit-remaining"))
	})

	t.Run("month quota", func(t *testing.T) {
		t.Parallel()
		s, _ := newSim(t, Config{Seed: 34, Hiro: HiroConfig{Keyed: Limits{PerMinute: 100, PerMonth: 3}}})
		path := listPath(s.World().Agents()[0].STXAddress, "")
		for range 3 {
			require.Equal(t, http.StatusOK, get(t, s, path, "x-api-key", "k").Code)
		}
		rec := get(t, s, path, "x-api-key", "k")
		require.Equal(t, http.StatusTooManyRequests, rec.Code)
		require.Equal(t, "0", rec.Header().Get("x-ratelimit-remaining-stacks-month"))
		// epoch is mid-May: the month turns over in about 17 days.
		retry, err := strconv.Atoi(rec.Header().Get("retry-after"))
		require.NoError(t, err)
		require.Greater(t, retry, 16*24*3600)

		q := hiro.ParseQuota(rec.Header())
		require.True(t, q.MonthExhausted(), "pacer's client reads it as spent")
	})

	t.Run("api keys", func(t *testing.T) {
		t.Parallel()
		s, _ := newSim(t, Config{Seed: 34, Hiro: HiroConfig{APIKeys: []string{"good"}}})
		path := listPath(s.World().Agents()[0].STXAddress, "")
		require.Equal(t, http.StatusOK, get(t, s, path, "x-api-key", "good").Code)
		require.Equal(t, http.StatusUnauthorized, get(t, s, path, "x-api-key", "bad").Code)
		require.Equal(t, http.StatusOK, get(t, s, path).Code, "anonymous calls still work")
	})
}

func TestHiroFaultsAndRetirement(t *testing.T) {
	t.Parallel()
	s, _ := newSim(t, Config{Seed: 35})
	agent := s.World().Agents()[0].STXAddress
	require.NoError(t, s.SetFaults(Faults{PathPrefix: "/extended/", ServerError: 1}))
	rec := get(t, s, listPath(agent, ""))
	require.GreaterOrEqual(t, rec.Code, 500)
	require.NotEmpty(t, rec.Header().Get("ratelimit-remaining"), "a faulted answer still carries the quota")
	require.Equal(t, http.StatusOK, get(t, s, tokenPath("stx")).Code, "Tenero is untouched")

	sunset, _ := newSim(t, Config{Seed: 35, Hiro: HiroConfig{Sunset: true}})
	var past WorldTx
	for _, tx := range sunset.World().Transactions() {
		if tx.Case == CaseSwap && tx.AppearsAt.Before(epoch) {
			past = tx
			break
		}
	}
	for _, path := range []string{listPath(agent, ""), txPath(past.TxID), "/extended/v1/tx?type=contract_call", "/extended/v1/tx/",
		"/extended/v2/addresses/" + agent + "/transactions"} {
		rec := get(t, sunset, path)
		require.Equal(t, http.StatusGone, rec.Code, path)
		require.JSONEq(t, `{"error":"Gone","message":"This endpoint has been disabled. See https://docs.hiro.so/stacks/api for more information"}`, rec.Body.String())
		require.NotEmpty(t, rec.Header().Get("ratelimit-remaining"), "the gateway's limits still apply")
	}
	require.Equal(t, http.StatusOK, get(t, sunset, v3Path(agent, "")).Code, "the current endpoints are still served")
	require.Equal(t, http.StatusOK, get(t, sunset, "/extended/v1/tx/multiple?tx_id="+past.TxID).Code)
	require.Equal(t, 5, sunset.Stats().Count(HiroTxListRoute, http.StatusGone)+sunset.Stats().Count(HiroTxRoute, http.StatusGone)+
		sunset.Stats().Count(HiroAddressTransactionsRoute, http.StatusGone)+sunset.Stats().Count(HiroV2AddressTransactionsRoute, http.StatusGone),
		"each sunset answer is counted by its route")
	require.NoError(t, s.SetFaults(Faults{}))
	rec = get(t, s, txPath(past.TxID))
	require.Contains(t, rec.Header().Get("Warning"), "299 - \"Deprecated:", "a deprecated route says so while it is served")
}

func TestHiroWorldRoute(t *testing.T) {
	t.Parallel()
	s, _ := newSim(t, Config{Seed: 36})
	rec := get(t, s, "/_sim/world")
	require.Equal(t, http.StatusOK, rec.Code)
	var doc struct {
		Agents       []Agent            `json:"agents"`
		Transactions []WorldTx          `json:"transactions"`
		Outcomes     map[string]Outcome `json:"outcomes"`
	}
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &doc))
	require.Equal(t, s.World().Agents(), doc.Agents)
	require.Len(t, doc.Transactions, len(s.World().Transactions()))
	require.Equal(t, s.World().ExpectedOutcomes(epoch), doc.Outcomes)
	require.Zero(t, s.Stats().Total, "control routes are not counted")
}

// newHiroClient is pacer's Hiro client against s over HTTP, retrying
// without waiting.
func newHiroClient(t *testing.T, s *Server, key string) *hiro.Client {
	t.Helper()
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return hiro.New(hiro.Config{
		BaseURL:    srv.URL,
		APIKey:     key,
		HTTPClient: srv.Client(),
		Sleep:      func(ctx context.Context, _ time.Duration) error { return ctx.Err() },
	})
}

func TestHiroClientRoundTrip(t *testing.T) {
	t.Parallel()
	s, clock := newSim(t, Config{Seed: 37})
	clock.Add(settled.Sub(epoch))
	w := s.World()
	c := newHiroClient(t, s, "key")
	ctx := t.Context()

	agent := busiest(w)
	var page struct {
		Total   int `json:"total"`
		Results []hiro.TxSummary
	}
	require.NoError(t, json.Unmarshal(get(t, s, listPath(agent, "?limit=25")).Body.Bytes(), &page))
	require.Equal(t, page.Total, len(page.Results))

	// The cursor endpoint lists the mined, canonical ones, in the same order.
	listed, err := c.ListTransactions(ctx, agent, "")
	require.NoError(t, err)
	require.Equal(t, "v3", listed.Endpoint)
	require.EqualValues(t, 499, *listed.Quota.MinuteRemaining)
	require.EqualValues(t, 149_999, *listed.Quota.MonthRemaining)
	require.EqualValues(t, 150_000, *listed.Quota.MonthLimit)
	require.NotNil(t, listed.Quota.Reset)
	require.Empty(t, listed.Next, "one page holds the list")
	var mined []string
	for _, r := range page.Results {
		if r.BlockHeight > 0 && r.IsCanonical() {
			mined = append(mined, r.TxID)
		}
	}
	var ids []string
	for _, e := range listed.Entries {
		ids = append(ids, e.TxID)
		tx, err := c.Tx(ctx, e.TxID)
		require.NoError(t, err)
		require.Equal(t, e.TxID, tx.TxID)
		require.True(t, tx.EventsComplete())
		require.Equal(t, e.Position(), hiro.Position{BlockHeight: tx.BlockHeight, TxIndex: tx.TxIndex})
	}
	require.Equal(t, mined, ids)

	_, err = c.Tx(ctx, txOf(t, w, CaseNotFound).TxID)
	require.Equal(t, pacer.ClassNotFound, fault.ClassOf(err))
	s.ResetStats()
	_, err = c.Tx(ctx, txOf(t, w, CaseFetchFails).TxID)
	require.Equal(t, pacer.ClassServerError, fault.ClassOf(err))
	require.Equal(t, 3, s.Stats().Count(HiroTxMultipleRoute, http.StatusInternalServerError), "the client's three attempts")

	sunset, sclock := newSim(t, Config{Seed: 37, Hiro: HiroConfig{Sunset: true}})
	sclock.Add(settled.Sub(epoch))
	sc := newHiroClient(t, sunset, "")
	tx, err := sc.Tx(ctx, listed.Entries[0].TxID)
	require.NoError(t, err, "details come from tx/multiple")
	require.True(t, tx.EventsComplete())
	for range 2 {
		got, _, err := sc.Txs(ctx, []string{txOf(t, w, CaseNotFound).TxID})
		require.NoError(t, err)
		require.Equal(t, pacer.ClassNotFound, fault.ClassOf(got[txOf(t, w, CaseNotFound).TxID].Err), "not found, the detail's sunset answer said")
	}
	require.Equal(t, 1, sunset.Stats().Count(HiroTxRoute, http.StatusGone), "the detail asked once")
}
