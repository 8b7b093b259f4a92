package hiro_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/hiro"
)

// hiroWS answers as ws-rpc-channel.ts does (jsonrpc-lite's serialisation),
// then pushes the two notifications below, copied in the server's shape.
func hiroWS(t *testing.T, gotKey *string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/extended/v1/ws" {
			http.NotFound(w, r)
			return
		}
		*gotKey = r.Header.Get("x-api-key")
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		ctx := r.Context()
		for range 2 {
			_, data, err := c.Read(ctx)
			if err != nil {
				return
			}
			var req struct {
				ID     int64 `json:"id"`
				Params struct {
					Event   string `json:"event"`
					Address string `json:"address"`
				} `json:"params"`
			}
			_ = json.Unmarshal(data, &req)
			res := `{"jsonrpc":"2.0","id":` + jsonInt(req.ID) + `,"result":{}}`
			if req.Params.Event == "address_tx_update" {
				if req.Params.Address == "bad" {
					res = `{"jsonrpc":"2.0","id":` + jsonInt(req.ID) + `,"error":{"code":-32602,"message":"Invalid params","data":"invalid address"}}`
				} else {
					res = `{"jsonrpc":"2.0","id":` + jsonInt(req.ID) + `,"result":{"address":"` + req.Params.Address + `"}}`
				}
			}
			_ = c.Write(ctx, websocket.MessageText, []byte(res))
		}
		for _, m := range []string{blockNote, addressNote, `{"jsonrpc":"2.0","method":"mempool","params":{}}`} {
			_ = c.Write(ctx, websocket.MessageText, []byte(m))
		}
		_, _, _ = c.Read(ctx) // until the client leaves
	}))
	t.Cleanup(srv.Close)
	return srv
}

func jsonInt(n int64) string { b, _ := json.Marshal(n); return string(b) }

const blockNote = `{"jsonrpc":"2.0","method":"block","params":{"canonical":true,"height":190001,"hash":"0xaa","block_time":1778760004,"block_time_iso":"2026-05-14T12:00:04.000Z","tenure_height":1,"index_block_hash":"0xbb","parent_block_hash":"0xcc","burn_block_time":1778760000,"burn_block_time_iso":"2026-05-14T12:00:00.000Z","burn_block_hash":"0xdd","burn_block_height":900000,"miner_txid":"0xee","execution_cost_read_count":0,"execution_cost_read_length":0,"execution_cost_runtime":0,"execution_cost_write_count":0,"execution_cost_write_length":0,"txs":["0x01","0x02"],"parent_microblock_hash":"","parent_microblock_sequence":-1,"microblocks_accepted":[],"microblocks_streamed":[],"microblock_tx_count":{}}}`

const addressNote = `{"jsonrpc":"2.0","method":"address_tx_update","params":{"address":"SP000000000000000000002Q6VF78.pox","tx_id":"0x02","tx_status":"success","tx_type":"contract_call","tx":{"tx_id":"0x02","tx_status":"success","tx_type":"contract_call","sender_address":"SP2J6ZY48GV1EZ5V2V5RB9MP66SW86PYKKNRV9EJ7","block_height":190001,"block_time":1778760004,"burn_block_time":1778760000,"tx_index":3,"canonical":true,"microblock_canonical":true,"contract_call":{"contract_id":"SP000000000000000000002Q6VF78.pox","function_name":"swap","function_signature":"","function_args":[]},"events":[]},"stx_sent":"0","stx_received":"0","stx_transfers":[]}}`

// TestWSSubscribesAndReadsHirosMessages: the client subscribes, reads a
// block and an address update in the server's shapes, passes over other
// methods, sends the API key, and reports a JSON-RPC error.
func TestWSSubscribesAndReadsHirosMessages(t *testing.T) {
	t.Parallel()
	var key string
	srv := hiroWS(t, &key)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	c, err := hiro.DialSubscribed(ctx, srv.URL, "k3y", nil,
		hiro.Subscription{Event: hiro.EventBlock},
		hiro.Subscription{Event: hiro.EventAddressTxUpdate, Address: "SP000000000000000000002Q6VF78.pox"})
	require.NoError(t, err)
	defer c.Close()
	require.Equal(t, "k3y", key)

	n, err := c.Next(ctx)
	require.NoError(t, err)
	require.NotNil(t, n.Block)
	require.Equal(t, int64(190001), n.Block.Height)
	require.Equal(t, []string{"0x01", "0x02"}, n.Block.TxIDs)
	require.Equal(t, int64(1778760004), n.Block.BlockTime)

	n, err = c.Next(ctx)
	require.NoError(t, err)
	require.NotNil(t, n.AddressTx)
	e := n.AddressTx.Entry()
	require.Equal(t, "0x02", e.TxID)
	require.Equal(t, "SP2J6ZY48GV1EZ5V2V5RB9MP66SW86PYKKNRV9EJ7", e.SenderAddress)
	require.Equal(t, "swap", e.ContractCall.FunctionName)
	require.True(t, e.Mined() && e.Canonical)
	require.Equal(t, int64(3), e.TxIndex)

	_, err = hiro.DialSubscribed(ctx, srv.URL, "", nil,
		hiro.Subscription{Event: hiro.EventBlock}, hiro.Subscription{Event: hiro.EventAddressTxUpdate, Address: "bad"})
	var rpcErr *hiro.RPCError
	require.ErrorAs(t, err, &rpcErr)
	require.Equal(t, -32602, rpcErr.Code)
}

func TestWSURL(t *testing.T) {
	t.Parallel()
	for give, want := range map[string]string{
		"http://127.0.0.1:3999":  "ws://127.0.0.1:3999/extended/v1/ws",
		"https://api.hiro.so/":   "wss://api.hiro.so/extended/v1/ws",
		"https://example.com/hi": "wss://example.com/hi/extended/v1/ws",
	} {
		got, err := hiro.WSURL(give)
		require.NoError(t, err)
		require.Equal(t, want, got)
	}
	_, err := hiro.WSURL("ftp://x")
	require.Error(t, err)
}
