// Package push holds Hiro's WebSocket for the deployment (SPEC §5.0
// "Push"): one worker at a time (a Postgres advisory lock) keeps a socket
// per allowlisted contract, each subscribed to `block` and to the
// contract's `address_tx_update`, and hands every call of the contract by
// a registered agent to the sweep's plan (pending_txs, due at once) and
// wakes the sweep. A push is a hint, never the record: the plan's Verify
// step verifies it, and the readers' positions still say what is
// complete.
//
// A socket holds one address because Hiro's ping loop keeps one set of
// live sockets per kind of topic (a second address on one socket is
// dropped at the first ping), and each holds `block` too so that each has
// a heartbeat of its own: Hiro's server drops a subscriber that missed a
// ping or one 5 s send without closing or saying anything, so a socket
// with no block for Silence (30 s, about seven blocks) counts as stopped:
// it is closed, dialled again and subscribed again, with back-off. Push
// is live while every socket is; the tail slows to its reconciling
// cadence only then.
package push

import (
	"context"
	"errors"
	"hash/fnv"
	"net/http"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/pacer-dev/pacer/internal/hiro"
)

// Mode is PACER_PUSH.
type Mode string

// Modes.
const (
	ModeWS  Mode = "ws"
	ModeOff Mode = "off"
)

// ParseMode reads PACER_PUSH ("" is the default, ws).
func ParseMode(s string) (Mode, error) {
	switch Mode(s) {
	case "", ModeWS:
		return ModeWS, nil
	case ModeOff:
		return ModeOff, nil
	}
	return "", errors.New("push " + s + ": want ws or off")
}

// Defaults.
const (
	// Silence is how long a socket may go without a block before it
	// counts as stopped.
	Silence = 30 * time.Second
	// MinBackoff and MaxBackoff bound the wait before a socket is dialled
	// again: doubling from the first, so a refused socket costs a dial a
	// MaxBackoff at most, never a storm.
	MinBackoff = time.Second
	MaxBackoff = 30 * time.Second
	// RefusedBackoff bounds the wait after a refused upgrade instead: a
	// server that says no is asked again every 5 minutes at most, a
	// request it may bill, not 80 a minute across the sockets.
	RefusedBackoff = 5 * time.Minute
	// leaseEvery is how often a worker without the lease tries to take it,
	// and the holder checks it still holds it.
	leaseEvery = 10 * time.Second
	// saveEvery is how often the holder writes its standing while nothing
	// changes: fresher than Silence, so a holder that died is not live.
	saveEvery = 5 * time.Second
)

// LeaseKey is the advisory lock of the deployment's subscriptions.
var LeaseKey = func() int64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte("pacer.push.ws"))
	return int64(h.Sum64() >> 1)
}()

// Config configures a Reader.
type Config struct {
	BaseURL, APIKey string
	HTTPClient      *http.Client
	// Contracts are the allowlisted contracts: a socket each.
	Contracts []string
	// Silence, MinBackoff, MaxBackoff and RefusedBackoff default to the
	// package's.
	Silence, MinBackoff, MaxBackoff, RefusedBackoff time.Duration
	Logger                                          *zap.Logger
	// OnTx hears each contract call pushed, from the sockets'
	// goroutines; OnChange each change of the standing (live or not, a
	// reconnect), one at a time and in order, and must not block.
	OnTx     func(ctx context.Context, e hiro.Entry)
	OnChange func(State)
}

func (c Config) withDefaults() Config {
	if c.Silence <= 0 {
		c.Silence = Silence
	}
	if c.MinBackoff <= 0 {
		c.MinBackoff = MinBackoff
	}
	if c.MaxBackoff < c.MinBackoff {
		c.MaxBackoff = max(MaxBackoff, c.MinBackoff)
	}
	if c.RefusedBackoff < c.MaxBackoff {
		c.RefusedBackoff = max(RefusedBackoff, c.MaxBackoff)
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	return c
}

// State is the sockets' standing.
type State struct {
	Live bool
	// Since is when Live last changed (or the reader started).
	Since       time.Time
	LastBlockAt time.Time
	// Messages are the notifications read; Reconnects the dials after a
	// socket stopped, was refused or closed.
	Messages, Reconnects int64
	Sockets, LiveSockets int
	LastError            string
}

// Reader holds the sockets.
type Reader struct {
	cfg Config
	mu  sync.Mutex
	st  State
	// live says which sockets are subscribed and heard a block within
	// Silence; the sockets' goroutines set it.
	live []bool
}

// NewReader returns a reader of cfg's contracts.
func NewReader(cfg Config) *Reader {
	cfg = cfg.withDefaults()
	return &Reader{cfg: cfg, live: make([]bool, len(cfg.Contracts)),
		st: State{Since: time.Now(), Sockets: len(cfg.Contracts)}}
}

// State is the standing now.
func (r *Reader) State() State {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.st
}

// Run holds every socket until ctx ends.
func (r *Reader) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for i, c := range r.cfg.Contracts {
		wg.Go(func() { r.socket(ctx, i, c) })
	}
	wg.Wait()
}

// update changes the standing under the lock and tells OnChange when
// liveness or the counts that matter changed.
func (r *Reader) update(f func(st *State)) {
	r.mu.Lock()
	before := r.st
	f(&r.st)
	n := 0
	for _, l := range r.live {
		if l {
			n++
		}
	}
	r.st.LiveSockets = n
	if live := n == len(r.live) && n > 0; live != r.st.Live {
		r.st.Live, r.st.Since = live, time.Now()
	}
	st := r.st
	// Under the lock, so that OnChange hears the changes one at a time
	// and in order; it must not block.
	if r.cfg.OnChange != nil && (st.Live != before.Live || st.Reconnects != before.Reconnects || st.LiveSockets != before.LiveSockets) {
		r.cfg.OnChange(st)
	}
	r.mu.Unlock()
}

// socket keeps socket i (contract's) subscribed until ctx ends.
func (r *Reader) socket(ctx context.Context, i int, contract string) {
	log := r.cfg.Logger.With(zap.String("contract", contract))
	backoff, failures := r.cfg.MinBackoff, 0
	for first := true; ctx.Err() == nil; first = false {
		if !first {
			r.update(func(st *State) { st.Reconnects++ })
		}
		heard, err := r.hold(ctx, i, contract, log)
		r.update(func(st *State) {
			r.live[i] = false
			if err != nil {
				st.LastError = err.Error()
			}
		})
		if ctx.Err() != nil {
			return
		}
		if heard { // it worked a while: start the back-off again
			backoff, failures = r.cfg.MinBackoff, 0
		}
		failures++
		// The first failure of a series is worth a warning; the rest, at
		// most one a MaxBackoff, are debug: a refused socket is no storm.
		if failures == 1 {
			log.Warn("push.socket_down", zap.Error(err), zap.Duration("retryIn", backoff))
		} else {
			log.Debug("push.socket_down", zap.Error(err), zap.Int("failures", failures), zap.Duration("retryIn", backoff))
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		limit := r.cfg.MaxBackoff
		if refused := (*hiro.WSRefusedError)(nil); errors.As(err, &refused) {
			limit = r.cfg.RefusedBackoff
		}
		backoff = min(backoff*2, limit)
	}
}

// errSilent is a socket that went Silence without a block.
var errSilent = errors.New("no block message within the silence bound")

// hold dials, subscribes and reads one socket until it stops: closed,
// refused, or silent for Silence. heard says it delivered a block first
// (the next dial then starts the back-off anew).
func (r *Reader) hold(ctx context.Context, i int, contract string, log *zap.Logger) (heard bool, err error) {
	c, err := hiro.DialSubscribed(ctx, r.cfg.BaseURL, r.cfg.APIKey, r.cfg.HTTPClient,
		hiro.Subscription{Event: hiro.EventBlock},
		hiro.Subscription{Event: hiro.EventAddressTxUpdate, Address: contract})
	if err != nil {
		return false, err
	}
	defer func() { _ = c.Close() }()
	log.Debug("push.subscribed")
	for {
		rctx, cancel := context.WithTimeout(ctx, r.cfg.Silence)
		n, err := c.Next(rctx)
		cancel()
		switch {
		case ctx.Err() != nil:
			return heard, nil
		case errors.Is(err, context.DeadlineExceeded):
			err = errSilent
		}
		if err != nil {
			return heard, err
		}
		if n.Block != nil {
			heard = true
		}
		r.update(func(st *State) {
			st.Messages++
			if n.Block != nil {
				st.LastBlockAt, r.live[i] = time.Now(), true
			}
		})
		if n.AddressTx != nil && r.cfg.OnTx != nil {
			r.cfg.OnTx(ctx, n.AddressTx.Entry())
		}
	}
}
