package hiro

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// # Hiro's WebSocket
//
// Hiro pushes what it indexes over JSON-RPC 2.0 at /extended/v1/ws
// (SPEC §5.0 "Push"). What this file holds to is the server's source,
// hirosystems/stacks-blockchain-api src/api/routes/ws/channels/
// ws-rpc-channel.ts (read at 759c4a58):
//
//   - requests are `subscribe` and `unsubscribe`, params {"event":"block"}
//     or {"event":"address_tx_update","address":P}; the answer is a result
//     ({} for block, {"address":P} for an address) or a JSON-RPC error
//     (-32602 "Invalid params" for an address that is not a principal);
//   - notifications are method "block" with the v1 Block (its `txs` the
//     block's tx ids) and method "address_tx_update" with {address, tx_id,
//     tx_status, tx_type, tx, stx_sent, stx_received, stx_transfers}, sent
//     for each mined transaction of the block touching P;
//   - the server pings each subscribed socket every 5 s and drops, without
//     closing the socket or a word, a socket that missed one pong or whose
//     send took 5 s. Its ping loop keeps one set of live sockets per kind of
//     topic, so a socket's second topic of one kind is dropped at the first
//     ping: a socket holds at most one address.
//
// The socket is coder/websocket's; this file only speaks the JSON-RPC on it.

// WSPath is the WebSocket's path under the API's base URL.
const WSPath = "/extended/v1/ws"

// Subscription events pacer subscribes to.
const (
	EventBlock           = "block"
	EventAddressTxUpdate = "address_tx_update"
)

// wsReadLimit bounds one message: a block names a few hundred tx ids, an
// address update carries one transaction with its arguments.
const wsReadLimit = 8 << 20

// WSURL is the WebSocket address of a Hiro base URL: ws:// for http://,
// wss:// for https://.
func WSURL(base string) (string, error) {
	u, err := url.Parse(strings.TrimRight(base, "/"))
	if err != nil {
		return "", fmt.Errorf("hiro websocket url: %w", err)
	}
	switch u.Scheme {
	case "http":
		u.Scheme = "ws"
	case "https":
		u.Scheme = "wss"
	case "ws", "wss":
	default:
		return "", fmt.Errorf("hiro websocket url: scheme %q is not http or https", u.Scheme)
	}
	u.Path += WSPath
	return u.String(), nil
}

// Subscription is a subscribe request's params.
type Subscription struct {
	Event   string `json:"event"`
	Address string `json:"address,omitempty"`
}

// String names the topic, as logs show it.
func (s Subscription) String() string {
	if s.Address != "" {
		return s.Event + ":" + s.Address
	}
	return s.Event
}

// WSBlock is a block notification's fields pacer reads.
type WSBlock struct {
	Canonical bool   `json:"canonical"`
	Height    int64  `json:"height"`
	Hash      string `json:"hash"`
	BlockTime int64  `json:"block_time"`
	// TxIDs are the block's transactions.
	TxIDs []string `json:"txs"`
}

// WSAddressTx is an address_tx_update notification: a mined transaction
// touching Address.
type WSAddressTx struct {
	Address  string    `json:"address"`
	TxID     string    `json:"tx_id"`
	TxStatus string    `json:"tx_status"`
	TxType   string    `json:"tx_type"`
	Tx       TxSummary `json:"tx"`
}

// Entry is the notification's transaction as a list entry.
func (u WSAddressTx) Entry() Entry { return entryOfV1(u.Tx) }

// Notification is one message the server pushed: a block or an address's
// transaction (the other methods are left nil).
type Notification struct {
	Method    string
	Block     *WSBlock
	AddressTx *WSAddressTx
}

// rpcMessage is any JSON-RPC 2.0 message: a response has an ID, a
// notification a Method.
type rpcMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      *int64          `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *RPCError       `json:"error,omitempty"`
}

// RPCError is a JSON-RPC error the server answered.
type RPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *RPCError) Error() string {
	if len(e.Data) > 0 {
		return fmt.Sprintf("json-rpc error %d %s: %s", e.Code, e.Message, e.Data)
	}
	return fmt.Sprintf("json-rpc error %d %s", e.Code, e.Message)
}

// WSConn is one WebSocket to Hiro. Next reads its notifications; Subscribe
// may be called while Next waits (the reader hands responses over). Close
// it when done.
type WSConn struct {
	c    *websocket.Conn
	mu   sync.Mutex
	id   int64
	wait map[int64]chan rpcMessage
	// notes are the notifications read, err the reader's end.
	notes chan Notification
	done  chan struct{}
	err   error
	// quit ends the reader when no one reads its notifications any more.
	quit      chan struct{}
	closeOnce sync.Once
}

// WSRefusedError is an upgrade the server answered with another status.
type WSRefusedError struct{ Status int }

func (e *WSRefusedError) Error() string {
	return fmt.Sprintf("hiro websocket: upgrade refused: %d %s", e.Status, http.StatusText(e.Status))
}

// ErrWSClosed is Next's error once the connection is closed.
var ErrWSClosed = errors.New("hiro websocket closed")

// DialWS opens the WebSocket of base (a Hiro base URL), sending apiKey as
// x-api-key when set. A refused upgrade is an error naming the status.
func DialWS(ctx context.Context, base, apiKey string, client *http.Client) (*WSConn, error) {
	u, err := WSURL(base)
	if err != nil {
		return nil, err
	}
	h := http.Header{}
	if apiKey != "" {
		h.Set("x-api-key", apiKey)
	}
	c, resp, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPClient: client, HTTPHeader: h})
	if resp != nil && resp.Body != nil {
		_ = resp.Body.Close()
	}
	if err != nil {
		if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
			return nil, &WSRefusedError{Status: resp.StatusCode}
		}
		if apiKey != "" {
			err = errors.New(strings.ReplaceAll(err.Error(), apiKey, "[redacted]"))
		}
		return nil, fmt.Errorf("hiro websocket: dial: %w", err)
	}
	c.SetReadLimit(wsReadLimit)
	w := &WSConn{c: c, wait: map[int64]chan rpcMessage{}, notes: make(chan Notification, 256),
		done: make(chan struct{}), quit: make(chan struct{})}
	go w.read()
	return w, nil
}

// read reads every message until the socket ends: responses go to their
// requests, notifications to Next. Reading all the time is also what
// answers the server's pings.
func (w *WSConn) read() {
	defer close(w.done)
	for {
		_, data, err := w.c.Read(context.Background())
		if err != nil {
			w.err = err
			return
		}
		var m rpcMessage
		if json.Unmarshal(data, &m) != nil {
			continue // not JSON-RPC: nothing to act on
		}
		if m.ID != nil && m.Method == "" {
			w.mu.Lock()
			ch := w.wait[*m.ID]
			delete(w.wait, *m.ID)
			w.mu.Unlock()
			if ch != nil {
				ch <- m
			}
			continue
		}
		n, ok := notification(m)
		if !ok {
			continue
		}
		select {
		case w.notes <- n:
		case <-w.quit:
			return
		}
	}
}

// notification decodes the methods pacer reads; others are passed over.
func notification(m rpcMessage) (Notification, bool) {
	n := Notification{Method: m.Method}
	switch m.Method {
	case EventBlock:
		var b WSBlock
		if json.Unmarshal(m.Params, &b) != nil {
			return n, false
		}
		n.Block = &b
	case EventAddressTxUpdate:
		var u WSAddressTx
		if json.Unmarshal(m.Params, &u) != nil || u.TxID == "" {
			return n, false
		}
		if u.Tx.TxID == "" {
			u.Tx.TxID = u.TxID
		}
		n.AddressTx = &u
	default:
		return n, false
	}
	return n, true
}

// Subscribe subscribes to sub and waits for the server's answer.
func (w *WSConn) Subscribe(ctx context.Context, sub Subscription) error {
	return w.call(ctx, "subscribe", sub)
}

func (w *WSConn) call(ctx context.Context, method string, params any) error {
	w.mu.Lock()
	w.id++
	id := w.id
	ch := make(chan rpcMessage, 1)
	w.wait[id] = ch
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		delete(w.wait, id)
		w.mu.Unlock()
	}()
	p, err := json.Marshal(params)
	if err != nil {
		return fmt.Errorf("hiro websocket %s: %w", method, err)
	}
	req, err := json.Marshal(rpcMessage{JSONRPC: "2.0", ID: &id, Method: method, Params: p})
	if err != nil {
		return fmt.Errorf("hiro websocket %s: %w", method, err)
	}
	if err := w.c.Write(ctx, websocket.MessageText, req); err != nil {
		return fmt.Errorf("hiro websocket %s: %w", method, err)
	}
	select {
	case m := <-ch:
		if m.Error != nil {
			return fmt.Errorf("hiro websocket %s %v: %w", method, params, m.Error)
		}
		return nil
	case <-w.done:
		return fmt.Errorf("hiro websocket %s: %w", method, w.closedErr())
	case <-ctx.Done():
		return fmt.Errorf("hiro websocket %s: %w", method, ctx.Err())
	}
}

// Next is the next notification, or the error that ended the socket.
func (w *WSConn) Next(ctx context.Context) (Notification, error) {
	select {
	case n := <-w.notes:
		return n, nil
	default:
	}
	select {
	case n := <-w.notes:
		return n, nil
	case <-w.done:
		return Notification{}, w.closedErr()
	case <-ctx.Done():
		return Notification{}, ctx.Err()
	}
}

func (w *WSConn) closedErr() error {
	if w.err != nil {
		return fmt.Errorf("%w: %w", ErrWSClosed, w.err)
	}
	return ErrWSClosed
}

// Close closes the socket at once (a server that went quiet would not
// answer a close handshake); closing again does nothing.
func (w *WSConn) Close() error {
	var err error
	w.closeOnce.Do(func() {
		close(w.quit)
		err = w.c.CloseNow()
		<-w.done
	})
	return err
}

// wsDialTimeout bounds a dial and its subscriptions.
const wsDialTimeout = 10 * time.Second

// DialSubscribed dials base and subscribes to subs, closing the socket
// when a subscription fails; the whole within 10 s.
func DialSubscribed(ctx context.Context, base, apiKey string, client *http.Client, subs ...Subscription) (*WSConn, error) {
	ctx, cancel := context.WithTimeout(ctx, wsDialTimeout)
	defer cancel()
	w, err := DialWS(ctx, base, apiKey, client)
	if err != nil {
		return nil, err
	}
	for _, s := range subs {
		if err := w.Subscribe(ctx, s); err != nil {
			_ = w.Close()
			return nil, err
		}
	}
	return w, nil
}
