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

func TestFeedReadsOnePageOfConfirmedCalls(t *testing.T) {
	srv, f := newFakeHiro(t, ok(`{"limit":50,"offset":100,"total":1234,"results":[
		{"tx_id":"0xaa","tx_type":"contract_call","tx_status":"success","sender_address":"SP1","block_height":9,"tx_index":2,
		 "burn_block_time":1778800000,"block_time":1778800007,"canonical":true,
		 "contract_call":{"contract_id":"SP2.dex","function_name":"swap"}},
		{"tx_id":"0xbb","tx_type":"contract_call","tx_status":"success","sender_address":"SP1","block_height":8,"tx_index":0,
		 "burn_block_time":1778799000,"canonical":false,"contract_call":{"contract_id":"SP2.dex","function_name":"swap"}}]}`))
	c := newTestClient(t, Config{BaseURL: srv.URL})
	page, err := c.Feed(t.Context(), TxTypeContractCall, 100)
	require.NoError(t, err)
	require.Equal(t, 1234, page.Total)
	require.Equal(t, 1, page.Requests)
	require.Len(t, page.Entries, 2)
	require.Equal(t, Entry{TxID: "0xaa", TxType: "contract_call", TxStatus: "success", SenderAddress: "SP1", BlockHeight: 9, TxIndex: 2,
		BurnBlockTime: 1778800000, BlockTime: 1778800007, Canonical: true,
		ContractCall: &ContractCall{ContractID: "SP2.dex", FunctionName: "swap"}}, page.Entries[0])
	require.False(t, page.Entries[1].Canonical)
	q := f.calls()[0].URL
	require.Equal(t, "/extended/v1/tx", q.Path)
	require.Equal(t, "contract_call", q.Query().Get("type"))
	require.Equal(t, "50", q.Query().Get("limit"))
	require.Equal(t, "100", q.Query().Get("offset"))
}

func TestFeedRefusesBadAnswers(t *testing.T) {
	for name, body := range map[string]string{
		"not json":    `{"results":`,
		"no tx_id":    `{"total":1,"results":[{"tx_type":"contract_call"}]}`,
		"wrong types": `{"total":"x","results":[]}`,
	} {
		t.Run(name, func(t *testing.T) {
			srv, _ := newFakeHiro(t, ok(body))
			c := newTestClient(t, Config{BaseURL: srv.URL})
			_, err := c.Feed(t.Context(), TxTypeContractCall, 0)
			require.Equal(t, pacer.ClassParseError, fault.ClassOf(err))
		})
	}
	_, err := newTestClient(t, Config{BaseURL: "http://127.0.0.1:1"}).Feed(t.Context(), TxTypeContractCall, -1)
	require.ErrorIs(t, err, ErrInvalidArgument)
}

// multipleServer serves /extended/v1/tx/multiple and /extended/v1/tx/{id}
// from a set of transactions with n events each, paging events as Hiro
// does (event_limit, event_offset).
type multipleServer struct {
	mu       sync.Mutex
	events   map[string]int
	forks    map[string]bool // on a losing fork: /multiple says found:false, the detail serves it
	refuse   bool
	multiple int
	singles  int
	ids      [][]string
}

func (m *multipleServer) tx(id string, limit, offset int) map[string]any {
	n := m.events[id]
	var evs []map[string]any
	for i := offset; i < min(n, offset+limit); i++ {
		evs = append(evs, map[string]any{"event_index": i, "event_type": "fungible_token_asset",
			"asset": map[string]any{"asset_event_type": "transfer", "asset_id": "SP.t::t", "sender": "a", "recipient": "b", "amount": "1"}})
	}
	return map[string]any{"tx_id": id, "tx_type": "contract_call", "tx_status": "success", "event_count": n, "events": evs}
}

func (m *multipleServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m.mu.Lock()
	defer m.mu.Unlock()
	q := r.URL.Query()
	limit, _ := strconv.Atoi(q.Get("event_limit"))
	offset, _ := strconv.Atoi(q.Get("event_offset"))
	if r.URL.Path == "/extended/v1/tx/multiple" {
		m.multiple++
		if m.refuse {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		m.ids = append(m.ids, q["tx_id"])
		out := map[string]any{}
		for _, id := range q["tx_id"] {
			if _, ok := m.events[id]; ok && !m.forks[id] {
				out[id] = map[string]any{"found": true, "result": m.tx(id, limit, offset)}
			} else {
				out[id] = map[string]any{"found": false, "result": map[string]any{"tx_id": id}}
			}
		}
		_ = json.NewEncoder(w).Encode(out)
		return
	}
	m.singles++
	id := strings.TrimPrefix(r.URL.Path, "/extended/v1/tx/")
	if _, ok := m.events[id]; !ok {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	tx := m.tx(id, limit, offset)
	if m.forks[id] {
		tx["canonical"] = false
	}
	_ = json.NewEncoder(w).Encode(tx)
}

func TestTxsBatchesAndPagesEvents(t *testing.T) {
	m := &multipleServer{events: map[string]int{"0xf0" + "4c": 2}, forks: map[string]bool{"0xf04c": true}}
	ids := []string{"0xf04c"}
	for i := range 25 {
		id := fmt.Sprintf("0x%02x", i)
		ids = append(ids, id)
		m.events[id] = 3
	}
	m.events["0x07"] = 250 // three pages of events
	ids = append(ids, "0xdead")
	srv := httptest.NewServer(m)
	t.Cleanup(srv.Close)
	c := newTestClient(t, Config{BaseURL: srv.URL})

	got, requests, err := c.Txs(t.Context(), ids)
	require.NoError(t, err)
	require.Len(t, got, 27)
	require.Equal(t, 3, m.multiple, "27 transactions in one batch, and the busy transaction's two further event pages")
	require.Equal(t, 2, m.singles, "one detail for each id /multiple did not find")
	require.Equal(t, 5, requests)
	require.NoError(t, got["0xf04c"].Err, "a losing fork's transaction is read from its detail")
	require.NotNil(t, got["0xf04c"].Tx.Canonical)
	require.False(t, *got["0xf04c"].Tx.Canonical, "and says it is not canonical")
	require.Len(t, m.ids[0], 27)
	for _, id := range ids[1:26] {
		require.NoError(t, got[id].Err)
		require.True(t, got[id].Tx.EventsComplete(), id)
		require.Len(t, got[id].Tx.Events, m.events[id])
	}
	require.Equal(t, pacer.ClassNotFound, fault.ClassOf(got["0xdead"].Err))
}

func TestTxsFallsBackToOneRequestEach(t *testing.T) {
	m := &multipleServer{events: map[string]int{"0x01": 1, "0x02": 2}, refuse: true}
	srv := httptest.NewServer(m)
	t.Cleanup(srv.Close)
	c := newTestClient(t, Config{BaseURL: srv.URL})
	got, requests, err := c.Txs(t.Context(), []string{"0x01", "0x02", "0x03"})
	require.NoError(t, err)
	require.Equal(t, 1, m.multiple)
	require.Equal(t, 3, m.singles)
	require.Equal(t, 4, requests)
	require.Len(t, got["0x02"].Tx.Events, 2)
	require.Equal(t, pacer.ClassNotFound, fault.ClassOf(got["0x03"].Err))
	// Batches stay off for a while: the next call asks one by one.
	_, _, err = c.Txs(t.Context(), []string{"0x01", "0x02"})
	require.NoError(t, err)
	require.Equal(t, 1, m.multiple)
}

// A batch the server fails as a whole (one transaction it cannot render)
// is read in halves, so the others are not held back.
func TestTxsFailedBatchIsReadOneByOne(t *testing.T) {
	m := &multipleServer{events: map[string]int{"0x01": 1, "0x02": 2}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if slices.Contains(r.URL.Query()["tx_id"], "0x03") || r.URL.Path == "/extended/v1/tx/0x03" {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		m.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	c := newTestClient(t, Config{BaseURL: srv.URL})
	got, _, err := c.Txs(t.Context(), []string{"0x01", "0x02", "0x03"})
	require.NoError(t, err)
	require.NoError(t, got["0x01"].Err)
	require.Len(t, got["0x02"].Tx.Events, 2)
	require.Equal(t, pacer.ClassServerError, fault.ClassOf(got["0x03"].Err))
}
