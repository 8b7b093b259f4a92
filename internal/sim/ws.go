package sim

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/pacer-dev/pacer"
)

// # Hiro's WebSocket
//
// The simulator serves Hiro's JSON-RPC 2.0 WebSocket at /extended/v1/ws
// as the stacks-blockchain-api source does (ws-rpc-channel.ts and
// web-socket-transmitter.ts, read at 759c4a58):
//
//   - `subscribe` / `unsubscribe` with params {"event":"block"} (result
//     {}) or {"event":"address_tx_update","address":P} (result
//     {"address":P}; -32602 Invalid params "invalid address" when P is not
//     a principal); another event is -32602 "subscription request must use
//     a valid event name", another method -32601;
//   - as the clock passes each block: "block" with the v1 Block (its txs,
//     every type), then "address_tx_update" for each of the block's mined
//     transactions calling a subscribed contract, {address, tx_id,
//     tx_status, tx_type, tx, stx_sent, stx_received, stx_transfers};
//   - a ping to each subscribed socket every 5 s: a socket that has not
//     answered the last one loses its subscriptions, silently, the socket
//     left open. So does each subscription alive while Faults.WSSilent is
//     on (the silent stop users report: subscriptions that stop after
//     hours, nothing said), and Faults.WSRefused answers the upgrade 503.
//
// No rollback message exists: the WebSocket has none.

// HiroWSRoute is Hiro's WebSocket. It is not counted in Stats (a socket
// is not a request Hiro bills): WSStats counts it.
const HiroWSRoute = "GET /extended/v1/ws"

// wsPingEvery is the server's ping interval (STACKS_API_WS_PING_INTERVAL).
const wsPingEvery = 5 * time.Second

// WSStats counts what the WebSocket did.
type WSStats struct {
	// Connections are the upgrades accepted, Refused those answered 503.
	Connections int `json:"connections"`
	Refused     int `json:"refused"`
	// Subscriptions are the subscribe requests that succeeded; Dropped
	// the subscriptions the server let go silently (a missed pong or
	// Faults.WSSilent).
	Subscriptions int `json:"subscriptions"`
	Dropped       int `json:"dropped"`
	// Blocks and AddressTxs are the notifications sent.
	Blocks     int `json:"blocks"`
	AddressTxs int `json:"addressTxs"`
	// Live is how many sockets hold a live subscription now.
	Live int `json:"live"`
}

// wsHub is the WebSocket's subscribers and the block it last announced.
type wsHub struct {
	s       *Server
	mu      sync.Mutex
	clients map[*wsClient]bool
	// last is the last block announced; running is true while the
	// announcing loop runs (it runs while anyone is connected).
	last    int64
	running bool
	stats   WSStats
	stepMu  sync.Mutex
}

// wsClient is one socket and its live topics ("block", or a principal).
type wsClient struct {
	c      *websocket.Conn
	topics map[string]bool
	// writeMu orders writes: the announcer's and the answers'.
	writeMu sync.Mutex
}

func newWSHub(s *Server) *wsHub { return &wsHub{s: s, clients: map[*wsClient]bool{}} }

// WSStats returns what the WebSocket did so far.
func (s *Server) WSStats() WSStats {
	h := s.ws
	h.mu.Lock()
	defer h.mu.Unlock()
	st := h.stats
	for c := range h.clients {
		if len(c.topics) > 0 {
			st.Live++
		}
	}
	return st
}

// hiroWS upgrades to the WebSocket and serves it until the client leaves.
func (s *Server) hiroWS(w http.ResponseWriter, r *http.Request) {
	h := s.ws
	if s.Faults().WSRefused {
		h.mu.Lock()
		h.stats.Refused++
		h.mu.Unlock()
		writeError(w, http.StatusServiceUnavailable, "Service Unavailable")
		return
	}
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return // Accept answered the bad upgrade itself
	}
	c.SetReadLimit(1 << 20)
	cl := &wsClient{c: c, topics: map[string]bool{}}
	h.mu.Lock()
	h.stats.Connections++
	h.clients[cl] = true
	if !h.running {
		h.running, h.last = true, heightAt(s.now())
		go h.announce()
	}
	h.mu.Unlock()
	ctx, cancel := context.WithCancel(r.Context())
	defer func() {
		cancel()
		h.mu.Lock()
		delete(h.clients, cl)
		h.mu.Unlock()
		_ = c.CloseNow()
	}()
	go h.ping(ctx, cl)
	for {
		_, data, err := c.Read(ctx)
		if err != nil {
			return
		}
		if resp := h.answer(cl, data); resp != nil {
			if h.write(ctx, cl, resp) != nil {
				return
			}
		}
	}
}

// ping pings the socket every wsPingEvery while it holds a subscription;
// one not answered in time drops its subscriptions, the socket left open.
func (h *wsHub) ping(ctx context.Context, cl *wsClient) {
	for h.s.sleep(ctx, wsPingEvery) == nil {
		h.mu.Lock()
		subscribed := len(cl.topics) > 0
		h.mu.Unlock()
		if !subscribed {
			continue
		}
		pctx, cancel := context.WithTimeout(ctx, wsPingEvery)
		err := cl.c.Ping(pctx)
		cancel()
		if err != nil && ctx.Err() == nil {
			h.drop(cl)
		}
	}
}

// drop lets the socket's subscriptions go without a word.
func (h *wsHub) drop(cl *wsClient) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stats.Dropped += len(cl.topics)
	clear(cl.topics)
}

// rpcRequest is a JSON-RPC request as jsonrpc-lite parses it.
type rpcRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  struct {
		Event   string `json:"event"`
		Address string `json:"address"`
	} `json:"params"`
}

// JSON-RPC error codes (jsonrpc-lite's JsonRpcError).
const (
	rpcParseError     = -32700
	rpcInvalidRequest = -32600
	rpcMethodNotFound = -32601
	rpcInvalidParams  = -32602
)

var rpcMessages = map[int]string{rpcParseError: "Parse error", rpcInvalidRequest: "Invalid request",
	rpcMethodNotFound: "Method not found", rpcInvalidParams: "Invalid params"}

// answer handles one request and returns the response (nil: none, for a
// client's notification).
func (h *wsHub) answer(cl *wsClient, data []byte) doc {
	var req rpcRequest
	if err := json.Unmarshal(data, &req); err != nil {
		return rpcError(nil, rpcParseError, err.Error())
	}
	if req.JSONRPC != "2.0" || req.Method == "" {
		return rpcError(req.ID, rpcInvalidRequest, nil)
	}
	if len(req.ID) == 0 {
		return nil // a notification: the server never answers one
	}
	subscribe := req.Method == "subscribe"
	if !subscribe && req.Method != "unsubscribe" {
		return rpcError(req.ID, rpcMethodNotFound, nil)
	}
	var topic string
	var result doc
	switch p := req.Params; p.Event {
	case "":
		return rpcError(req.ID, rpcInvalidParams, "subscription requests must include an event name")
	case "block":
		topic, result = "block", doc{}
	case "address_tx_update":
		if !validPrincipal(p.Address) {
			return rpcError(req.ID, rpcInvalidParams, "invalid address")
		}
		topic, result = p.Address, doc{"address": p.Address}
	default:
		return rpcError(req.ID, rpcInvalidParams, "subscription request must use a valid event name")
	}
	h.mu.Lock()
	switch {
	case !subscribe:
		delete(cl.topics, topic)
	case h.s.Faults().WSSilent:
		h.stats.Subscriptions++
		h.stats.Dropped++ // answered, and never served
	default:
		h.stats.Subscriptions++
		cl.topics[topic] = true
	}
	h.mu.Unlock()
	return doc{"jsonrpc": "2.0", "id": req.ID, "result": result}
}

// contractName is a Clarity contract's name.
var contractName = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9_-]{0,127}$`)

// validPrincipal is the server's isValidPrincipal: a standard principal,
// or a contract's (a standard principal, a dot and a contract name).
func validPrincipal(s string) bool {
	addr, name, contract := strings.Cut(s, ".")
	return pacer.ValidPrincipal(addr) && (!contract || contractName.MatchString(name))
}

func rpcError(id json.RawMessage, code int, data any) doc {
	e := doc{"code": code, "message": rpcMessages[code]}
	if data != nil {
		e["data"] = data
	}
	var rid any // null when the request's id is unknown
	if len(id) > 0 {
		rid = id
	}
	return doc{"jsonrpc": "2.0", "id": rid, "error": e}
}

// write sends one message, giving up after the server's 5 s send timeout.
func (h *wsHub) write(ctx context.Context, cl *wsClient, m doc) error {
	body, err := json.Marshal(m)
	if err != nil {
		return err
	}
	cl.writeMu.Lock()
	defer cl.writeMu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, wsPingEvery)
	defer cancel()
	return cl.c.Write(ctx, websocket.MessageText, body)
}

// announce sends each block as the clock passes it, until no one is
// connected.
func (h *wsHub) announce() {
	ctx := context.Background()
	for {
		now := h.s.now()
		next := blockTime(heightAt(now) + 1)
		if err := h.s.sleep(ctx, max(next.Sub(now), 10*time.Millisecond)); err != nil {
			return
		}
		if !h.step() {
			return
		}
	}
}

// blockTime is when block height was mined.
func blockTime(height int64) time.Time {
	return time.Unix(heightEpoch+(height-stacksHeightAt)*stacksBlockPeriod, 0).UTC()
}

// step announces the blocks mined since the last one; false once no one
// is connected (the loop ends).
func (h *wsHub) step() bool {
	h.stepMu.Lock() // one announcement at a time, blocks in order
	defer h.stepMu.Unlock()
	now := h.s.now()
	top := heightAt(now)
	h.mu.Lock()
	if len(h.clients) == 0 {
		h.running = false
		h.mu.Unlock()
		return false
	}
	from := h.last
	h.last = max(h.last, top)
	silent := h.s.Faults().WSSilent
	subs := map[*wsClient][]string{}
	principals := map[string]bool{}
	for c := range h.clients {
		if silent {
			h.stats.Dropped += len(c.topics)
			clear(c.topics)
			continue
		}
		for t := range c.topics {
			subs[c] = append(subs[c], t)
			if t != "block" {
				principals[t] = true
			}
		}
	}
	h.mu.Unlock()
	if top <= from || len(subs) == 0 {
		return true
	}
	w := h.s.hiro.world
	blocks := blockTxs(w.feed(nil, now), from, top)
	updates := map[string]map[int64][]*worldTx{}
	for p := range principals {
		updates[p] = blockTxs(w.principalList(p, now), from, top)
	}
	for height := from + 1; height <= top; height++ {
		// The block first, then its calls, as the server's transmitter
		// queues them.
		block := blockDoc(height, blocks[height])
		for c, topics := range subs {
			if slices.Contains(topics, "block") {
				h.notify(c, "block", block, func(st *WSStats) { st.Blocks++ })
			}
		}
		for c, topics := range subs {
			for _, t := range topics {
				for _, tx := range updates[t][height] {
					h.notify(c, "address_tx_update", addressTxDoc(t, tx, now), func(st *WSStats) { st.AddressTxs++ })
					h.s.trace.served(&h.s.trace.tr.Pushed, false, tx)
				}
			}
		}
	}
	return true
}

// notify sends a notification; a send that fails or takes the server's 5 s
// drops the socket's subscriptions, as the server does.
func (h *wsHub) notify(c *wsClient, method string, params doc, count func(*WSStats)) {
	err := h.write(context.Background(), c, doc{"jsonrpc": "2.0", "method": method, "params": params})
	if err != nil {
		if !errors.Is(err, context.Canceled) {
			h.drop(c)
		}
		return
	}
	h.mu.Lock()
	count(&h.stats)
	h.mu.Unlock()
}

// blockTxs are a list's canonical mined transactions in blocks (from, to],
// by height, in the block's order.
func blockTxs(m merged, from, to int64) map[int64][]*worldTx {
	out := map[int64][]*worldTx{}
	for k := 0; ; k += hiroMaxLimit {
		its := m.items(k, hiroMaxLimit)
		for _, it := range its {
			p := m.position(it)
			if p.height <= from {
				return out
			}
			if tx := m.tx(it); p.height <= to && !tx.fork {
				out[p.height] = append([]*worldTx{tx}, out[p.height]...)
			}
		}
		if len(its) < hiroMaxLimit {
			return out
		}
	}
}

// tenureHeightAt is the tenure (coinbase) height at the burn block
// burnHeightAt.
const tenureHeightAt = 100_000

// blockDoc is the v1 Block of height with its transactions (schema
// src/api/schemas/v1/entities/block.ts).
func blockDoc(height int64, txs []*worldTx) doc {
	at := blockTime(height)
	burn := BurnBlockOf(at)
	burnHeight := burnHeightAt + (burn.Unix()-heightEpoch)/burnBlockPeriod
	ids := make([]string, len(txs))
	for i, tx := range txs {
		ids[i] = tx.TxID
	}
	return doc{
		"canonical": true, "height": height, "hash": blockHash(height),
		"block_time": at.Unix(), "block_time_iso": isoTime(at),
		"tenure_height":    burnHeight - burnHeightAt + tenureHeightAt,
		"index_block_hash": blockHash(height ^ 0x5a5a), "parent_block_hash": blockHash(height - 1),
		"burn_block_time": burn.Unix(), "burn_block_time_iso": isoTime(burn),
		"burn_block_hash": blockHash(burnHeight << 24), "burn_block_height": burnHeight,
		"miner_txid":                blockHash(height ^ 0x3c3c),
		"execution_cost_read_count": 0, "execution_cost_read_length": 0, "execution_cost_runtime": 0,
		"execution_cost_write_count": 0, "execution_cost_write_length": 0,
		"txs": ids, "parent_microblock_hash": "", "parent_microblock_sequence": -1,
		"microblocks_accepted": []string{}, "microblocks_streamed": []string{}, "microblock_tx_count": doc{},
	}
}

// addressTxDoc is an address_tx_update's params: the transaction as the
// API renders it (without events) and its STX movements for address (a
// contract call moves none of the caller's STX to the contract here).
func addressTxDoc(address string, tx *worldTx, at time.Time) doc {
	r := tx.render(at, eventWindow{})
	return doc{"address": address, "tx_id": r.TxID, "tx_status": r.TxStatus, "tx_type": r.TxType,
		"tx": r, "stx_sent": "0", "stx_received": "0", "stx_transfers": []any{}}
}
