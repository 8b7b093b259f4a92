package push

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/pacer-dev/pacer/internal/hiro"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/internal/wait"
)

// HoldOptions configures Hold.
type HoldOptions struct {
	// Reader configures the sockets (OnTx and OnChange are Hold's).
	Reader Config
	Store  *store.Store
	// Holder names this worker in push_state.
	Holder string
	// Allowed reports whether calls of function on contractID count: a
	// pushed call that does not is passed over without a write.
	Allowed func(contractID, function string) bool
	// Wake wakes the sweep (the scheduler's hint signal) once a push
	// queued a transaction: at most one a WakeGap, the last never lost.
	Wake    func(ctx context.Context, agent string) error
	WakeGap time.Duration
	Logger  *zap.Logger
}

// Hold holds the deployment's subscriptions whenever this worker holds
// the lease, until ctx ends: a worker without it tries again every
// leaseEvery, so another takes over within about that when the holder
// dies (its connection, and the lock with it, go).
func Hold(ctx context.Context, o HoldOptions) error {
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	log := o.Logger
	t := time.NewTicker(leaseEvery)
	defer t.Stop()
	for {
		l, err := o.Store.TryLease(ctx, LeaseKey)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			log.Warn("push.lease_failed", zap.Error(err))
		case l != nil:
			log.Info("push.holding", zap.String("holder", o.Holder), zap.Int("sockets", len(o.Reader.Contracts)))
			hold(ctx, l, o)
			l.Release()
			log.Info("push.released", zap.String("holder", o.Holder))
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// hold runs the reader while the lease holds.
func hold(ctx context.Context, l *Lease, o HoldOptions) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	log := o.Logger
	wake := make(chan string, 1)
	changed := make(chan struct{}, 1)
	cfg := o.Reader
	cfg.Logger = log
	wasLive := false
	cfg.OnChange = func(st State) {
		select {
		case changed <- struct{}{}:
		default:
		}
		if wasLive && !st.Live {
			// Down: the sweep, cooled to the reconciling cadence, must read
			// the tail at PACER_TAIL_EVERY again now, not at its next run.
			select {
			case wake <- "":
			default:
			}
		}
		wasLive = st.Live
	}
	cfg.OnTx = func(ctx context.Context, e hiro.Entry) {
		if !e.Mined() || !e.Canonical || e.ContractCall == nil || o.Allowed == nil ||
			!o.Allowed(e.ContractCall.ContractID, e.ContractCall.FunctionName) {
			return
		}
		queued, err := o.Store.RecordPushed(ctx, e.TxID, e.SenderAddress)
		if err != nil {
			log.Warn("push.record_failed", zap.String("txid", e.TxID), zap.Error(err))
			return
		}
		if queued {
			log.Debug("push.queued", zap.String("txid", e.TxID), zap.String("sender", e.SenderAddress))
			select {
			case wake <- e.SenderAddress:
			default: // a wake is waiting already: it covers this one
			}
		}
	}
	r := NewReader(cfg)
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	go wakes(ctx, o, wake)

	save := func() {
		st := r.State()
		ps := store.PushState{Holder: o.Holder, Live: st.Live, Since: st.Since, Messages: st.Messages,
			Reconnects: st.Reconnects, Sockets: st.Sockets, LiveSockets: st.LiveSockets, LastError: st.LastError}
		if !st.LastBlockAt.IsZero() {
			ps.LastBlockAt = &st.LastBlockAt
		}
		if err := o.Store.SavePushState(ctx, ps); err != nil && ctx.Err() == nil {
			log.Warn("push.save_failed", zap.Error(err))
		}
	}
	save()
	tick, check := time.NewTicker(saveEvery), time.NewTicker(leaseEvery)
	defer tick.Stop()
	defer check.Stop()
	for {
		select {
		case <-done:
			return
		case <-changed:
			save()
		case <-tick.C:
			save()
		case <-check.C:
			if err := l.Check(ctx); err != nil {
				log.Warn("push.lease_lost", zap.Error(err))
				cancel()
				<-done
				return
			}
		}
	}
}

// Lease is the store's lease, as Hold uses it.
type Lease = store.Lease

// wakes sends the sweep's wakes: at once for the first push, then at most
// one a WakeGap, so a burst is one wake and the last push of a burst
// still gets one after the gap.
func wakes(ctx context.Context, o HoldOptions, wake <-chan string) {
	gap := o.WakeGap
	if gap <= 0 {
		gap = time.Second
	}
	for {
		var agent string
		select {
		case <-ctx.Done():
			return
		case agent = <-wake:
		}
		if o.Wake != nil {
			wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			if err := o.Wake(wctx, agent); err != nil && ctx.Err() == nil {
				o.Logger.Warn("push.wake_failed", zap.Error(err))
			}
			cancel()
		}
		t := time.NewTimer(gap)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// Listen rings pushed whenever a push queued a transaction, in any
// process (store.ListenPushed), until ctx ends: a sweep run in flight
// waits on it, so a push never waits for the next run. A lost connection
// is listened again after a back-off; the bell rings as it listens again.
func Listen(ctx context.Context, st *store.Store, pushed *wait.Bell, log *zap.Logger) error {
	if log == nil {
		log = zap.NewNop()
	}
	backoff := time.Second
	for {
		heard := false
		err := st.ListenPushed(ctx, func(string) { heard = true; pushed.Ring() })
		if ctx.Err() != nil {
			return nil
		}
		if heard {
			backoff = time.Second
		}
		log.Warn("push.listen_failed", zap.Error(err), zap.Duration("retry_in", backoff))
		if wait.Sleep(ctx, backoff) != nil {
			return nil
		}
		backoff = min(2*backoff, 30*time.Second)
	}
}
