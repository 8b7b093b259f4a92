package sim

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"
)

// wsWorld is a simulator serving its WebSocket over a real listener, on a
// fake clock that the test moves and whose blocks step() announces.
type wsWorld struct {
	s     *Server
	clock *fakeClock
	url   string
}

func newWSWorld(t *testing.T) *wsWorld {
	t.Helper()
	unlimited := Limits{PerMinute: 1 << 30, PerMonth: 1 << 30}
	s, clock := newSim(t, Config{Seed: 21, Hiro: HiroConfig{Origin: epoch, Arrivals: 10 * time.Minute,
		Agents: 24, Anonymous: unlimited, Chain: ChainConfig{Volume: 40_000}}})
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return &wsWorld{s: s, clock: clock, url: "ws" + strings.TrimPrefix(srv.URL, "http") + "/extended/v1/ws"}
}

// rpc is a JSON-RPC message as the test reads it, independent of pacer's
// client.
type rpc struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Data    string `json:"data"`
	} `json:"error"`
}

func dialWS(t *testing.T, url string) *websocket.Conn {
	t.Helper()
	c, _, err := websocket.Dial(t.Context(), url, nil)
	require.NoError(t, err)
	c.SetReadLimit(8 << 20)
	t.Cleanup(func() { _ = c.CloseNow() })
	return c
}

func send(t *testing.T, c *websocket.Conn, msg string) rpc {
	t.Helper()
	require.NoError(t, c.Write(t.Context(), websocket.MessageText, []byte(msg)))
	return recv(t, c)
}

func recv(t *testing.T, c *websocket.Conn) rpc {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, data, err := c.Read(ctx)
	require.NoError(t, err)
	var m rpc
	require.NoError(t, json.Unmarshal(data, &m), string(data))
	require.Equal(t, "2.0", m.JSONRPC)
	return m
}

// TestWSAnswersAsHiroDoes holds the answers to the source's handlers:
// results, and the errors of jsonrpc-lite.
func TestWSAnswersAsHiroDoes(t *testing.T) {
	t.Parallel()
	w := newWSWorld(t)
	c := dialWS(t, w.url)

	m := send(t, c, `{"jsonrpc":"2.0","id":1,"method":"subscribe","params":{"event":"block"}}`)
	require.JSONEq(t, `1`, string(m.ID))
	require.JSONEq(t, `{}`, string(m.Result))

	contract := "SM1793C4R5PZ4NS4VQ4WMP7SKKYVH8JZEWSZ9HCCR.xyk-core-v-1-2"
	m = send(t, c, `{"jsonrpc":"2.0","id":"a","method":"subscribe","params":{"event":"address_tx_update","address":"`+contract+`"}}`)
	require.JSONEq(t, `"a"`, string(m.ID))
	require.JSONEq(t, `{"address":"`+contract+`"}`, string(m.Result))

	for _, tc := range []struct{ give, wantData string }{
		{`{"jsonrpc":"2.0","id":2,"method":"subscribe","params":{"event":"address_tx_update","address":"nope"}}`, "invalid address"},
		{`{"jsonrpc":"2.0","id":3,"method":"subscribe","params":{}}`, "subscription requests must include an event name"},
		{`{"jsonrpc":"2.0","id":4,"method":"subscribe","params":{"event":"weather"}}`, "subscription request must use a valid event name"},
	} {
		m = send(t, c, tc.give)
		require.NotNil(t, m.Error, tc.give)
		require.Equal(t, -32602, m.Error.Code)
		require.Equal(t, "Invalid params", m.Error.Message)
		require.Equal(t, tc.wantData, m.Error.Data)
	}
	m = send(t, c, `{"jsonrpc":"2.0","id":5,"method":"listen","params":{"event":"block"}}`)
	require.Equal(t, -32601, m.Error.Code)
	m = send(t, c, `not json`)
	require.Equal(t, -32700, m.Error.Code)
	require.Equal(t, "null", string(m.ID))
}

// TestWSAnnouncesBlocksAndContractCalls checks what a subscriber is sent as
// the clock passes blocks against the world's own transactions: each
// block once, in order, with its transactions, and every agent's mined
// call of the contract as an address_tx_update carrying it.
func TestWSAnnouncesBlocksAndContractCalls(t *testing.T) {
	t.Parallel()
	w := newWSWorld(t)
	world := w.s.hiro.world
	// The contract the most agents' calls go to in the first minutes.
	calls := map[string]int{}
	end := epoch.Add(3 * time.Minute)
	for _, tx := range world.existing(end) {
		if tx.found(world.allow) && !inMempool(tx.statusAt(end)) && !tx.fork && tx.minedAt().After(epoch) {
			calls[tx.call.ContractID]++
		}
	}
	var contract string
	for c, n := range calls {
		if n > calls[contract] {
			contract = c
		}
	}
	require.NotEmpty(t, contract, "the world's agents call an allowlisted contract in its first minutes")

	c := dialWS(t, w.url)
	send(t, c, `{"jsonrpc":"2.0","id":1,"method":"subscribe","params":{"event":"block"}}`)
	send(t, c, `{"jsonrpc":"2.0","id":2,"method":"subscribe","params":{"event":"address_tx_update","address":"`+contract+`"}}`)

	want := map[string]bool{}
	for _, tx := range world.existing(end) {
		if tx.call != nil && tx.call.ContractID == contract && !inMempool(tx.statusAt(end)) && !tx.fork && tx.minedAt().After(epoch) {
			want[tx.TxID] = true
		}
	}
	got, blocks := map[string]bool{}, map[int64][]string{}
	var heights []int64
	for w.clock.Now().Before(end) {
		w.clock.Add(time.Second)
		w.s.ws.step()
	}
	st := w.s.WSStats()
	for range st.Blocks + st.AddressTxs {
		m := recv(t, c)
		switch m.Method {
		case "block":
			var b struct {
				Height    int64    `json:"height"`
				Hash      string   `json:"hash"`
				BlockTime int64    `json:"block_time"`
				Canonical bool     `json:"canonical"`
				Txs       []string `json:"txs"`
			}
			require.NoError(t, json.Unmarshal(m.Params, &b))
			require.True(t, b.Canonical)
			heights = append(heights, b.Height)
			blocks[b.Height] = b.Txs
		case "address_tx_update":
			var u struct {
				Address  string `json:"address"`
				TxID     string `json:"tx_id"`
				TxStatus string `json:"tx_status"`
				TxType   string `json:"tx_type"`
				Tx       struct {
					TxID         string `json:"tx_id"`
					BlockHeight  int64  `json:"block_height"`
					ContractCall struct {
						ContractID string `json:"contract_id"`
					} `json:"contract_call"`
				} `json:"tx"`
				StxSent string `json:"stx_sent"`
			}
			require.NoError(t, json.Unmarshal(m.Params, &u))
			require.Equal(t, contract, u.Address)
			require.Equal(t, u.TxID, u.Tx.TxID)
			require.Equal(t, contract, u.Tx.ContractCall.ContractID)
			require.Equal(t, "contract_call", u.TxType)
			require.Contains(t, blocks[u.Tx.BlockHeight], u.TxID, "the block was announced before its calls, naming them")
			world.mu.Lock()
			agents := world.byID[u.TxID] != nil // an agent's, not a stranger's
			world.mu.Unlock()
			if agents {
				got[u.TxID] = true
			}
		default:
			t.Fatalf("unexpected method %q", m.Method)
		}
	}
	require.Equal(t, want, got)
	for i := 1; i < len(heights); i++ {
		require.Equal(t, heights[i-1]+1, heights[i], "each block once, in order")
	}
	require.Equal(t, int((end.Unix()-epoch.Unix())/stacksBlockPeriod), len(heights))
}

// TestWSSilentStopAndRefusal: a silent stop keeps the socket open and
// sends it nothing again, even once it is over; a new socket is served;
// a refused upgrade is a 503.
func TestWSSilentStopAndRefusal(t *testing.T) {
	t.Parallel()
	w := newWSWorld(t)
	old := dialWS(t, w.url)
	send(t, old, `{"jsonrpc":"2.0","id":1,"method":"subscribe","params":{"event":"block"}}`)
	w.clock.Add(4 * time.Second)
	w.s.ws.step()
	require.Equal(t, "block", recv(t, old).Method)

	require.NoError(t, w.s.SetFaults(Faults{WSSilent: true}))
	w.clock.Add(8 * time.Second)
	w.s.ws.step()
	st := w.s.WSStats()
	require.Equal(t, 1, st.Blocks, "nothing sent while silent")
	require.Equal(t, 1, st.Dropped)
	require.Zero(t, st.Live)
	require.NoError(t, w.s.SetFaults(Faults{}))
	w.clock.Add(8 * time.Second)
	w.s.ws.step()
	require.Equal(t, 1, w.s.WSStats().Blocks, "the silenced subscription stays dropped")

	fresh := dialWS(t, w.url)
	send(t, fresh, `{"jsonrpc":"2.0","id":1,"method":"subscribe","params":{"event":"block"}}`)
	w.clock.Add(4 * time.Second)
	w.s.ws.step()
	require.Equal(t, "block", recv(t, fresh).Method)

	require.NoError(t, w.s.SetFaults(Faults{WSRefused: true}))
	_, resp, err := websocket.Dial(t.Context(), w.url, nil)
	require.Error(t, err)
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	require.Equal(t, 1, w.s.WSStats().Refused)
}
