package hiro

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/fault"
)

// listTx is a transaction of the fake list server.
type listTx struct {
	id            string
	height, index int64
	pending       bool
}

// fakeLists serves one principal's transactions on the v3 cursor endpoint
// and the v1 offset endpoint, newest first, from a list tests can change
// between calls. Mempool transactions sit on top, as the simulator lists
// them, and only on v1, as Hiro's v3 lists mined ones only.
type fakeLists struct {
	mu       sync.Mutex
	txs      []listTx // any order
	noV3     bool
	v3, v1   int // requests served
	v3Cursor []string
	v1Offset []int
}

// startLists serves txs on a fake list server.
func startLists(t *testing.T, noV3 bool, txs []listTx) (*fakeLists, string) {
	t.Helper()
	f := &fakeLists{noV3: noV3}
	f.set(txs...)
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv.URL
}

func (f *fakeLists) set(txs ...listTx) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.txs = txs
}

func (f *fakeLists) sorted(withPending bool) []listTx {
	var out []listTx
	for _, tx := range f.txs {
		if withPending || !tx.pending {
			out = append(out, tx)
		}
	}
	slices.SortFunc(out, func(a, b listTx) int {
		switch {
		case a.pending != b.pending:
			if a.pending {
				return -1
			}
			return 1
		case a.height != b.height:
			return int(b.height - a.height)
		}
		return int(b.index - a.index)
	})
	return out
}

func (f *fakeLists) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	q := r.URL.Query()
	limit, _ := strconv.Atoi(q.Get("limit"))
	if limit > MaxLimit {
		http.Error(w, `{"error":"limit"}`, http.StatusBadRequest)
		return
	}
	switch {
	case strings.HasPrefix(r.URL.Path, "/extended/v3/principals/SP1/transactions"):
		if f.noV3 {
			http.NotFound(w, r)
			return
		}
		f.v3++
		f.v3Cursor = append(f.v3Cursor, q.Get("cursor"))
		all := f.sorted(false)
		start := 0
		if c := q.Get("cursor"); c != "" {
			var h, mb, i int64
			if _, err := fmt.Sscanf(c, "%d:%d:%d", &h, &mb, &i); err != nil {
				http.Error(w, `{"error":"cursor"}`, http.StatusBadRequest)
				return
			}
			at := Position{h, i}
			start = slices.IndexFunc(all, func(tx listTx) bool { return Position{tx.height, tx.index}.Compare(at) <= 0 })
			if start < 0 {
				start = len(all)
			}
		}
		page := all[start:min(start+limit, len(all))]
		type txJSON struct {
			TxID  string `json:"tx_id"`
			Type  string `json:"type"`
			Block struct {
				Height  int64 `json:"height"`
				TxIndex int64 `json:"tx_index"`
			} `json:"block"`
		}
		var results []map[string]any
		for _, tx := range page {
			var t txJSON
			t.TxID, t.Type, t.Block.Height, t.Block.TxIndex = tx.id, "contract_call", tx.height, tx.index
			results = append(results, map[string]any{"transaction": t, "involvement": "sender"})
		}
		var next *string
		if end := start + limit; end < len(all) {
			n := fmt.Sprintf("%d:2147483647:%d", all[end].height, all[end].index)
			next = &n
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"total": len(all), "limit": limit,
			"cursor": map[string]any{"next": next}, "results": results})
	case r.URL.Path == "/extended/v1/address/SP1/transactions":
		f.v1++
		offset, _ := strconv.Atoi(q.Get("offset"))
		f.v1Offset = append(f.v1Offset, offset)
		all := f.sorted(true)
		page := all[min(offset, len(all)):min(offset+limit, len(all))]
		var results []map[string]any
		for _, tx := range page {
			m := map[string]any{"tx_id": tx.id, "tx_type": "contract_call", "tx_status": "success"}
			if tx.pending {
				m["tx_status"] = "pending"
			} else {
				m["block_height"], m["tx_index"], m["canonical"] = tx.height, tx.index, true
			}
			results = append(results, m)
		}
		w.Header().Set("Warning", `299 - "Deprecated"`)
		_ = json.NewEncoder(w).Encode(map[string]any{"limit": limit, "offset": offset, "total": len(all), "results": results})
	default:
		http.NotFound(w, r)
	}
}

// chain makes n mined transactions, one a block, ids t<height>.
func chain(from, n int64) []listTx {
	var txs []listTx
	for h := from; h < from+n; h++ {
		txs = append(txs, listTx{id: fmt.Sprintf("t%d", h), height: h})
	}
	return txs
}

// readAll pages from a token to the end and returns the ids handed out.
func readAll(t *testing.T, c *Client, from PageToken) (ids []string, pages int) {
	t.Helper()
	for tok := from; ; {
		page, err := c.ListTransactions(t.Context(), "SP1", tok)
		require.NoError(t, err)
		pages++
		for _, e := range page.Entries {
			ids = append(ids, e.TxID)
		}
		if page.Next == "" {
			return ids, pages
		}
		tok = page.Next
		require.Less(t, pages, 100, "paging ends")
	}
}

func idsOf(txs []listTx) []string {
	var ids []string
	for _, tx := range txs {
		ids = append(ids, tx.id)
	}
	return ids
}

func TestListTransactionsPagesEverything(t *testing.T) {
	t.Parallel()
	for _, noV3 := range []bool{false, true} {
		t.Run(fmt.Sprintf("noV3=%v", noV3), func(t *testing.T) {
			t.Parallel()
			f, url := startLists(t, noV3, chain(1000, 120))
			c := newTestClient(t, Config{BaseURL: url})

			ids, pages := readAll(t, c.Client, "")
			want := idsOf(f.sorted(true))
			require.Equal(t, want, ids, "every transaction once, newest first")
			require.Equal(t, 3, pages)
			if noV3 {
				require.Zero(t, f.v3)
				require.Equal(t, 3, f.v1)
				require.Len(t, c.logs.FilterMessage("hiro.v3_missing").All(), 1, "the fallback is noticed once")
				require.Len(t, c.logs.FilterMessage("hiro.deprecated_endpoint").All(), 1, "Warning: 299 logged once")
			} else {
				require.Equal(t, 3, f.v3)
				require.Zero(t, f.v1)
				require.Equal(t, []string{"", "1069:2147483647:0", "1019:2147483647:0"}, f.v3Cursor)
			}
		})
	}
}

func TestListTransactionsEntry(t *testing.T) {
	t.Parallel()
	srv, _ := newFakeHiro(t, ok(`{"total":1,"limit":50,"cursor":{"next":null,"previous":null,"current":"7:2147483647:3"},
"results":[{"transaction":{"tx_id":"0xab","sender":{"address":"SPAGENT","nonce":4},"sponsor":null,"fee_rate":"3000",
"block":{"height":7,"hash":"0x1","index_hash":"0x2","time":1778800000,"tx_index":3},
"bitcoin_block":{"height":900000,"time":1778800001},"status":"abort_by_response","type":"contract_call",
"contract_call":{"contract_id":"SPX.pool","function_name":"swap-x-for-y"}},"involvement":"sender",
"balance_changes":{"stx":{}},"affected_asset_types":{"stx":true,"ft":false,"nft":false}}]}`))
	c := newTestClient(t, Config{BaseURL: srv.URL})

	page, err := c.ListTransactions(t.Context(), "SPAGENT", "")
	require.NoError(t, err)
	require.Equal(t, TxPage{
		Entries: []Entry{{
			TxID: "0xab", TxType: "contract_call", TxStatus: "abort_by_response", SenderAddress: "SPAGENT",
			BlockHeight: 7, TxIndex: 3, BurnBlockTime: 1778800001, BlockTime: 1778800000, Canonical: true,
			ContractCall: &ContractCall{ContractID: "SPX.pool", FunctionName: "swap-x-for-y"},
		}},
		Endpoint: "v3",
		Quota:    Quota{StatusCode: 200, Cost: 1},
		Requests: 1,
	}, page)
	require.True(t, page.Entries[0].Mined())
	require.Equal(t, Position{7, 3}, page.Entries[0].Position())
}

func TestListTransactionsV1Entry(t *testing.T) {
	t.Parallel()
	srv, fake := newFakeHiro(t, canned{status: 404}, ok(fixture(t, "address-transactions-page.json")))
	c := newTestClient(t, Config{BaseURL: srv.URL})

	page, err := c.ListTransactions(t.Context(), "SP4DXVEC16FS6QR7RBKGWZYJKTXPC81W49W0ATJE", "")
	require.NoError(t, err)
	require.Equal(t, "v1", page.Endpoint)
	require.Equal(t, 2, page.Requests, "the v3 probe counts")
	require.Len(t, page.Entries, 3)
	require.Equal(t, "0xaaa", page.Entries[0].TxID)
	require.Equal(t, "swap-x-for-y", page.Entries[0].ContractCall.FunctionName)
	reqs := fake.calls()
	require.Equal(t, "/extended/v3/principals/SP4DXVEC16FS6QR7RBKGWZYJKTXPC81W49W0ATJE/transactions", reqs[0].URL.Path)
	require.Equal(t, "limit=50", reqs[0].URL.RawQuery)
	require.Equal(t, "/extended/v1/address/SP4DXVEC16FS6QR7RBKGWZYJKTXPC81W49W0ATJE/transactions", reqs[1].URL.Path)
	require.Equal(t, "limit=50&offset=0", reqs[1].URL.RawQuery)

	_, err = c.ListTransactions(t.Context(), "SP4DXVEC16FS6QR7RBKGWZYJKTXPC81W49W0ATJE", "")
	require.NoError(t, err)
	require.Len(t, fake.calls(), 3, "v3 is not asked again after its 404")
}

func TestListTransactionsNonCanonicalV1Entry(t *testing.T) {
	t.Parallel()
	srv, _ := newFakeHiro(t, canned{status: 404}, ok(`{"limit":50,"offset":0,"total":2,"results":[
{"tx_id":"0x01","tx_type":"contract_call","tx_status":"success","block_height":9,"tx_index":0,"canonical":false,"microblock_canonical":true},
{"tx_id":"0x02","tx_type":"contract_call","tx_status":"success","block_height":8,"tx_index":0,"canonical":true,"microblock_canonical":false}]}`))
	c := newTestClient(t, Config{BaseURL: srv.URL})
	page, err := c.ListTransactions(t.Context(), "SP1", "")
	require.NoError(t, err)
	require.False(t, page.Entries[0].Canonical)
	require.False(t, page.Entries[1].Canonical)
}

// A saved token resumes where it left off, however many transactions
// arrived in between, and whichever endpoint the server offers by then.
func TestListTransactionsResumesFromSavedToken(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name               string
		giveV3, giveV3Then bool
	}{
		{name: "v3 then v3", giveV3: true, giveV3Then: true},
		{name: "v1 then v1"},
		{name: "v3 token on a server without v3", giveV3: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			old := chain(1000, 130)
			f, url := startLists(t, !tt.giveV3, old)
			c := newTestClient(t, Config{BaseURL: url})
			first, err := c.ListTransactions(t.Context(), "SP1", "")
			require.NoError(t, err)
			require.NotEmpty(t, first.Next)

			// 75 new transactions arrive, and a pending one, before the
			// visit goes on, maybe in another process.
			f.set(append(append(slices.Clone(old), chain(1130, 75)...), listTx{id: "p", pending: true})...)
			f.mu.Lock()
			f.noV3 = !tt.giveV3Then
			f.mu.Unlock()
			later := newTestClient(t, Config{BaseURL: url})
			rest, _ := readAll(t, later.Client, first.Next)

			var got []string
			for _, e := range first.Entries {
				got = append(got, e.TxID)
			}
			got = append(got, rest...)
			require.Equal(t, idsOf(f.sorted(false)[75:]), got, "the old transactions, each once, none skipped")
		})
	}
}

// A v1 token whose list lost entries above its offset (a reorg) reads back
// until it finds its place instead of skipping what slid up.
func TestListTransactionsV1RewindsWhenTheListShrank(t *testing.T) {
	t.Parallel()
	old := chain(1000, 130)
	f, url := startLists(t, true, old)
	c := newTestClient(t, Config{BaseURL: url})

	first, err := c.ListTransactions(t.Context(), "SP1", "")
	require.NoError(t, err)
	seen := idsOf(f.sorted(false)[:50])
	// Three of the newest blocks are orphaned: their transactions go.
	f.set(old[:127]...)
	rest, _ := readAll(t, c.Client, first.Next)

	require.Equal(t, idsOf(f.sorted(false)[47:]), rest, "resumes right after the last entry handed out")
	require.Equal(t, seen[len(seen)-1], f.sorted(false)[46].id)
	require.Equal(t, []int{0, 49, 0, 49}, f.v1Offset[:4], "the overlap read showed the slide; one rewind")
}

func TestListTransactionsRefusesForeignTokens(t *testing.T) {
	t.Parallel()
	for _, give := range []PageToken{"v3:1:2", "v3:a:b:c", "v1:-1", "v1:x", "v1:5:1:2", "v2:0", "garbage", "v3:1:2:3&limit=500"} {
		t.Run(string(give), func(t *testing.T) {
			t.Parallel()
			srv, fake := newFakeHiro(t, ok(`{}`))
			c := newTestClient(t, Config{BaseURL: srv.URL})
			_, err := c.ListTransactions(t.Context(), "SP1", give)
			require.ErrorIs(t, err, ErrInvalidArgument)
			require.Equal(t, pacer.ClassPermanent, fault.ClassOf(err))
			require.Empty(t, fake.calls())
		})
	}
}

func TestListTransactionsV3CursorMustMove(t *testing.T) {
	t.Parallel()
	body := `{"total":9,"limit":50,"cursor":{"next":"5:1:1"},"results":[{"transaction":{"tx_id":"0x1","block":{"height":5,"tx_index":1}}}]}`
	srv, _ := newFakeHiro(t, ok(body))
	c := newTestClient(t, Config{BaseURL: srv.URL})
	_, err := c.ListTransactions(t.Context(), "SP1", "v3:5:1:1")
	require.Equal(t, pacer.ClassParseError, fault.ClassOf(err))
	require.Contains(t, err.Error(), "unusable next cursor")
}

func TestListTransactionsV1Gone(t *testing.T) {
	t.Parallel()
	srv, _ := newFakeHiro(t, canned{status: 404}, canned{status: 410, body: `{"error":"gone"}`})
	c := newTestClient(t, Config{BaseURL: srv.URL})
	_, err := c.ListTransactions(t.Context(), "SP1", "")
	require.Equal(t, pacer.ClassNotFound, fault.ClassOf(err), "a sunset answer is not a permanent error")
	require.ErrorIs(t, err, ErrSunset)
	require.True(t, c.Sunset(EndpointV1List))
	page, err := c.ListTransactions(t.Context(), "SP1", "v1:50")
	require.ErrorIs(t, err, ErrSunset, "and v1 is not asked again")
	require.Zero(t, page.Requests)
}

func TestPositionCompare(t *testing.T) {
	t.Parallel()
	tests := []struct {
		giveA, giveB Position
		want         int
	}{
		{Position{5, 0}, Position{4, 99}, 1},
		{Position{5, 1}, Position{5, 2}, -1},
		{Position{5, 2}, Position{5, 2}, 0},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, tt.giveA.Compare(tt.giveB), "%v vs %v", tt.giveA, tt.giveB)
	}
}

func TestListTransactionsV3Fixture(t *testing.T) {
	t.Parallel()
	srv, _ := newFakeHiro(t, ok(fixture(t, "principal-transactions-v3.json")))
	c := newTestClient(t, Config{BaseURL: srv.URL})
	page, err := c.ListTransactions(t.Context(), "SP4DXVEC16FS6QR7RBKGWZYJKTXPC81W49W0ATJE", "")
	require.NoError(t, err)
	require.Equal(t, PageToken("v3:2841517:2147483647:12"), page.Next)
	require.Len(t, page.Entries, 2)
	require.Equal(t, Entry{
		TxID: "0x0d2e4f6a8b0c2d4e6f8a0b2c4d6e8f0a2b4c6d8e0f2a4b6c8d0e2f4a6b8c0d2e", TxType: "token_transfer",
		TxStatus: "success", SenderAddress: "SP4DXVEC16FS6QR7RBKGWZYJKTXPC81W49W0ATJE",
		BlockHeight: 2841522, BurnBlockTime: 1778786400, BlockTime: 1778786500, Canonical: true,
	}, page.Entries[1])
	require.Equal(t, "stableswap-stx-ststx-v-1-2", strings.SplitN(page.Entries[0].ContractCall.ContractID, ".", 2)[1])
}
