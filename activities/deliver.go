package activities

import (
	"context"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/rollup"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/internal/webhook"
)

// Per-run bounds of the deliver task (SPEC §10.3).
const (
	// MaxAttemptsPerRun and MaxRetriesPerRun cap one run; what is left is
	// due at once, and the result asks to run again soon.
	MaxAttemptsPerRun = 500
	MaxRetriesPerRun  = 50
	// deliveryConcurrency bounds the attempts in flight. Endpoints
	// that are failing may use at most half of it, and one subscriber at
	// most perSubscriber, so that slow or dead endpoints never hold up
	// the healthy ones.
	deliveryConcurrency = 32
	perSubscriber       = 4
	// An attempt still waiting for its answer after slowAfter gives its
	// slot back: an endpoint that hangs is failing, but nobody knows it
	// until its attempt times out, and twenty of them with a few
	// deliveries each would otherwise hold every slot for the whole
	// attempt timeout while the healthy endpoints and the retries wait.
	// What is in flight, slow or not, stays within parkedFactor × the
	// concurrency (and perSubscriber per subscriber).
	slowAfter    = 2 * time.Second
	parkedFactor = 4
	// maxRunTime ends a run's picking of new work; attempts in flight then
	// finish within their timeout. It keeps a run, and so the new
	// deliveries the next run emits, from waiting on a long stream of slow
	// endpoints.
	maxRunTime = 60 * time.Second
	// soon is how far ahead the next run is asked for while deliveries are
	// due (SPEC: at least 1 s).
	soon = time.Second
	// duePage is the keyset page of the due set.
	duePage = 100
	// leaseMargin is added to the attempt timeout to make a claim's lease.
	leaseMargin = 30 * time.Second
)

// Lookbacks of emission: the periods whose deliveries a run may still
// create. An hourly delivery older than two days is no longer worth
// sending (its subscriber can pull it); a day is delivered once complete, which can take a while after a long outage.
const (
	hourlyLookback = 48 * time.Hour
	dailyLookback  = (DayLookback + 1) * 24 * time.Hour
)

// DeliveryConfig configures the deliver task.
type DeliveryConfig struct {
	// Ladder is PACER_DELIVERY_LADDER.
	Ladder webhook.Ladder
	// Sender makes the signed POSTs.
	Sender *webhook.Sender
	// DisableAfter is how long a subscriber may fail every attempt before
	// it is disabled (0: never).
	DisableAfter time.Duration
}

// DefaultDisableAfter is PACER_DISABLE_AFTER's default (SPEC §10.2):
// five days of failing every attempt.
const DefaultDisableAfter = 120 * time.Hour

func newDeliveryConfig(o Options) DeliveryConfig {
	ladder := o.DeliveryLadder
	if len(ladder) == 0 {
		ladder, _ = webhook.ParseLadder(webhook.DefaultLadder)
	}
	disableAfter := o.DisableAfter
	switch {
	case disableAfter == 0:
		disableAfter = DefaultDisableAfter
	case disableAfter < 0:
		disableAfter = 0
	}
	return DeliveryConfig{
		Ladder:       ladder,
		Sender:       webhook.NewSender(webhook.SenderOptions{Timeout: o.DeliveryTimeout, AllowPrivate: o.WebhookAllowPrivate}),
		DisableAfter: disableAfter,
	}
}

// Deliver runs one round of webhook deliveries (SPEC §10.3), in this one
// activity whatever the number of subscribers: it creates the deliveries
// that new rollups call for, then attempts what is due, concurrently and
// within the per-run caps, persisting each outcome the moment it is known.
// While attempts are in flight it keeps picking up deliveries that fall
// due, so a retry is sent on time even when a slow endpoint holds the run.
// The result's NextDueAt says when to run again.
//
// A worker killed between a POST and its record leaves the delivery
// claimed; once the lease runs out a later run sends it again under the
// same webhook-id, which receivers use to drop the repeat (Standard
// Webhooks' idempotency key). Nothing is lost, and no period ever gets a
// second id.
func (a *Activities) Deliver(ctx context.Context, in pacer.DeliverInput) (pacer.DeliverResult, error) {
	return ledgered(ctx, a, in.Occurrence, func(ctx context.Context) (pacer.DeliverResult, error) {
		return a.deliver(ctx)
	})
}

func (a *Activities) deliver(ctx context.Context) (res pacer.DeliverResult, err error) {
	started := time.Now()
	defer func() { a.Metrics.ObserveDeliver(time.Since(started), res, err) }()
	res = pacer.DeliverResult{Run: pacer.Run{StartedAt: started.UTC()}}
	log := a.Logger.With(zap.String("task", pacer.TaskDeliver))
	fail := func(err error) (pacer.DeliverResult, error) {
		res.DurationMs = time.Since(started).Milliseconds()
		res.ErrorClass, res.Error = pacer.ClassTransport, err.Error()
		log.Error("deliver.failed", zap.Error(err))
		return res, runError(pacer.ClassTransport, err.Error(), res)
	}

	d := &dispatcher{a: a, log: log, res: &res, done: make(chan attempt), perSub: map[string]int{}, flights: map[string]*flight{}}
	if err := d.emit(ctx); err != nil {
		return fail(err)
	}
	if _, err := a.Store.PruneDeliveries(ctx, a.now().Add(-store.DeliveryRetention)); err != nil {
		log.Warn("deliver.prune_failed", zap.Error(err))
	}

	var progress atomic.Int64
	stop := keepHeartbeating(ctx, func() any { return progress.Load() })
	runErr := d.run(ctx, &progress)
	stop()
	if runErr != nil {
		return fail(runErr)
	}

	if res.Retries >= MaxRetriesPerRun && !res.Capped {
		// Past its retry cap a run reads first attempts only, so it never
		// meets the retries it leaves: ask whether any is due.
		if res.Capped, err = a.Store.RetriesDue(ctx, a.now()); err != nil {
			return fail(err)
		}
	}
	counts, err := a.Store.DeliveryCounts(ctx)
	if err != nil {
		return fail(err)
	}
	res.Pending, res.Retrying, res.ExhaustedTotal = counts[store.DeliveryPending], counts[store.DeliveryRetrying], counts[store.DeliveryExhausted]
	next, err := a.Store.NextDeliveryDue(ctx)
	if err != nil {
		return fail(err)
	}
	if next != nil || res.Capped {
		at := a.now().Add(soon)
		if next != nil && next.After(at) && !res.Capped {
			at = *next
		}
		res.NextDueAt = &at
	}
	res.DurationMs = time.Since(started).Milliseconds()
	log.Info("deliver.run_completed", zap.Any("result", res))
	return res, nil
}

// attempt is one finished attempt, as the dispatcher's loop learns of it.
type attempt struct {
	due     store.DueDelivery
	outcome webhook.Outcome
	// exhausted and disabled are what recording the outcome did.
	exhausted int
	disabled  bool
	err       error // recording failed
}

// dispatcher runs the attempts of one deliver run. Only its loop
// goroutine touches its fields; attempts report back on done.
type dispatcher struct {
	a   *Activities
	log *zap.Logger
	res *pacer.DeliverResult

	done      chan attempt
	emittedAt time.Time
	// inFlight counts every attempt under way, parked the slow ones that
	// gave their slot back (slowAfter), suspectInFlight the failing
	// endpoints' attempts that hold a slot.
	inFlight        int
	parked          int
	suspectInFlight int
	flights         map[string]*flight
	perSub          map[string]int
	recordErr       error
}

// flight is an attempt under way.
type flight struct {
	started         time.Time
	suspect, parked bool
}

func (d *dispatcher) run(ctx context.Context, progress *atomic.Int64) error {
	deadline := time.Now().Add(maxRunTime)
	for {
		picking := ctx.Err() == nil && time.Now().Before(deadline) && d.recordErr == nil
		var next *time.Time
		d.park(time.Now())
		if picking {
			launched := d.fill(ctx)
			if time.Since(d.emittedAt) >= soon && d.recordErr == nil {
				// Rollups computed while this run goes on are delivered
				// by it (after what was due: a retry never waits on this).
				if d.recordErr = d.emit(ctx); d.recordErr == nil {
					launched += d.fill(ctx)
				}
			}
			// Rows due now that fill could not start (caps, a busy
			// subscriber) wait for an attempt to finish; only later ones
			// set the timer, and only while there is room to start them.
			now := d.a.now()
			if d.room() > 0 {
				next, _ = d.a.Store.NextDeliveryDueAfter(ctx, now) // nil when it fails
			}
			if d.inFlight == 0 && launched == 0 && (next == nil || next.Sub(now) > soon || d.res.Capped) {
				return d.recordErr
			}
			// Something falls due within the second: the next run could
			// not start sooner, so this one waits for it.
		} else if d.inFlight == 0 {
			return d.recordErr
		}
		progress.Store(int64(d.res.Attempted))

		var wake <-chan time.Time // nil: only a finished attempt wakes the loop
		if picking {
			in := time.Until(d.emittedAt.Add(soon))
			if next != nil {
				in = min(in, next.Sub(d.a.now()))
			}
			if at, ok := d.nextPark(); ok {
				in = min(in, time.Until(at))
			}
			wake = time.After(in) // collected unfired when an attempt wakes the loop first
		}
		select {
		case at := <-d.done:
			d.finish(at)
			// Take every other attempt that has finished too, so that the
			// next fill starts them in one page.
			for more := true; more; {
				select {
				case at := <-d.done:
					d.finish(at)
				default:
					more = false
				}
			}
		case <-wake:
		}
	}
}

// emit creates the deliveries that the rollups computed so far call for
// (SPEC §10.3): hourly ones once an hour's rollups exist, daily ones once
// a day is complete.
func (d *dispatcher) emit(ctx context.Context) error {
	now := d.a.now()
	for _, e := range []struct {
		event    string
		lookback time.Duration
	}{{rollup.EventHourly, hourlyLookback}, {rollup.EventDaily, dailyLookback}} {
		n, err := d.a.Store.EmitDeliveries(ctx, e.event, now, now.Add(-e.lookback))
		if err != nil {
			return err
		}
		d.res.Emitted += n
	}
	d.emittedAt = time.Now()
	return nil
}

// fill starts every due attempt that the run's caps and the concurrency
// allow, reading the due set page by page in keyset order and claiming
// each page's picks in one statement, and says how many it started. A
// failure to read or claim stops the run's picking (recordErr); the
// attempts in flight still finish and are recorded.
func (d *dispatcher) fill(ctx context.Context) int {
	suspectSlots := max(1, deliveryConcurrency/2)
	lease := d.a.Deliveries.Sender.Timeout() + leaseMargin
	launched := 0
	var after *store.DueKey
	for d.room() > 0 {
		var busy []string
		for sub, n := range d.perSub {
			if n >= perSubscriber {
				busy = append(busy, sub)
			}
		}
		now := d.a.now()
		// A page a little larger than the room left: rows of busy
		// subscribers or spent caps may be skipped.
		limit := min(duePage, 2*d.room()+8)
		page, err := d.a.Store.DueDeliveries(ctx, store.DueQuery{
			Now: now, After: after, Busy: busy, Limit: limit,
			FirstAttemptsOnly: d.res.Retries >= MaxRetriesPerRun,
		})
		if err != nil {
			d.recordErr = err
			return launched
		}
		var picks []store.DueDelivery
		full := false
	pick:
		for _, due := range page {
			after = &due.DueKey
			retry := due.Attempts > 0
			switch {
			case d.res.Attempted >= MaxAttemptsPerRun:
				d.res.Capped, full = true, true
				break pick
			case retry && d.res.Retries >= MaxRetriesPerRun:
				d.res.Capped = true
				continue
			case d.room() <= 0:
				full = true
				break pick
			case due.Suspect && d.suspectInFlight >= suspectSlots:
				// Suspects sort last: nothing after this one can go.
				full = true
				break pick
			case d.perSub[due.SubscriberID] >= perSubscriber:
				continue
			}
			d.reserve(due, 1)
			picks = append(picks, due)
		}
		if len(picks) > 0 {
			claimed, err := d.a.Store.ClaimDeliveries(ctx, picks, now, now.Add(lease))
			if err != nil {
				for _, p := range picks {
					d.reserve(p, -1)
				}
				d.recordErr = err
				return launched
			}
			// claimed keeps the picks' order; the others changed since they
			// were read, or another run holds them.
			for _, p := range picks {
				if len(claimed) > 0 && claimed[0].ID == p.ID {
					d.start(ctx, claimed[0])
					claimed = claimed[1:]
					launched++
				} else {
					d.reserve(p, -1)
				}
			}
		}
		if full || len(page) < limit {
			return launched
		}
	}
	return launched
}

// room is how many more attempts may start now: the slots not held by an
// attempt under way (parked ones hold none), within the bound of all that
// may be in flight.
func (d *dispatcher) room() int {
	return min(deliveryConcurrency-(d.inFlight-d.parked), parkedFactor*deliveryConcurrency-d.inFlight)
}

// park gives back the slots of attempts under way for slowAfter or more.
func (d *dispatcher) park(now time.Time) {
	for _, f := range d.flights {
		if !f.parked && now.Sub(f.started) >= slowAfter {
			f.parked = true
			d.parked++
			if f.suspect {
				d.suspectInFlight--
			}
		}
	}
}

// nextPark is when the next attempt under way will give its slot back.
func (d *dispatcher) nextPark() (time.Time, bool) {
	var at time.Time
	for _, f := range d.flights {
		if p := f.started.Add(slowAfter); !f.parked && (at.IsZero() || p.Before(at)) {
			at = p
		}
	}
	return at, !at.IsZero()
}

// reserve counts an attempt in (n = 1) or back out (n = -1) of the run's
// caps and its concurrency, before it starts.
func (d *dispatcher) reserve(due store.DueDelivery, n int) {
	d.hold(due, n)
	d.res.Attempted += n
	if due.Attempts > 0 {
		d.res.Retries += n
	}
}

// hold takes (n = 1) or gives back (n = -1) an attempt's place in the
// concurrency bounds.
func (d *dispatcher) hold(due store.DueDelivery, n int) {
	d.inFlight += n
	f := d.flights[due.ID]
	switch {
	case n > 0:
		d.flights[due.ID] = &flight{started: time.Now(), suspect: due.Suspect}
	case f != nil:
		delete(d.flights, due.ID)
		if f.parked {
			d.parked--
		}
	}
	if due.Suspect && (f == nil || !f.parked) {
		d.suspectInFlight += n
	}
	if d.perSub[due.SubscriberID] += n; d.perSub[due.SubscriberID] <= 0 {
		delete(d.perSub, due.SubscriberID)
	}
}

// start sends one claimed delivery in its own goroutine and records the
// outcome there, at once, whatever happens to the rest of the run.
func (d *dispatcher) start(ctx context.Context, due store.DueDelivery) {
	go func() {
		out := d.a.Deliveries.Sender.Send(ctx, webhook.Message{ID: due.ID, URL: due.URL, Secret: due.Secret,
			PreviousSecret: due.PreviousSecret, Body: due.Body})
		at := attempt{due: due, outcome: out}
		// Record even if the run is being cancelled: the POST happened.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if ctx.Err() != nil && out.Result != webhook.Delivered {
			// Cut short by the run's end, not by the endpoint: this is no
			// failure of the subscriber's. The claim lapses and a later
			// run sends it again.
			at.err = d.a.Store.ReleaseDelivery(rctx, due.ID)
			at.outcome.Result = ""
		} else {
			at.exhausted, at.disabled, at.err = d.record(rctx, due, out)
		}
		d.done <- at
	}()
}

// record persists one outcome.
func (d *dispatcher) record(ctx context.Context, due store.DueDelivery, out webhook.Outcome) (exhausted int, disabled bool, err error) {
	now := d.a.now()
	log := d.log.With(zap.String("delivery", due.ID), zap.String("subscriber", due.SubscriberID),
		zap.Int("attempt", due.Attempts+1), zap.String("result", string(out.Result)), zap.Int("status", out.Status),
		zap.Duration("took", out.Took))
	f := store.Failure{ID: due.ID, SubscriberID: due.SubscriberID, At: now, Status: out.Status, Error: out.Error,
		DisableAfter: d.a.Deliveries.DisableAfter}
	switch out.Result {
	case webhook.Delivered:
		log.Debug("deliver.delivered")
		return 0, false, d.a.Store.RecordDelivered(ctx, due.ID, now, out.Status)
	case webhook.Gone:
		n, disabled, err := d.a.Store.DisableSubscriber(ctx, f)
		if err == nil && disabled {
			log.Warn("deliver.subscriber_disabled", zap.Int("exhausted", n))
		}
		return n, disabled, err
	}
	wait, ok := d.a.Deliveries.Ladder.Next(due.Attempts+1, out.RetryAfter, rand.Float64())
	if ok {
		next := now.Add(wait)
		f.Next = &next
		log.Info("deliver.attempt_failed", zap.String("error", out.Error), zap.Duration("retryIn", wait))
	} else {
		exhausted = 1
		log.Error("deliver.exhausted", zap.String("error", out.Error))
	}
	disabled, err = d.a.Store.RecordFailed(ctx, f)
	if disabled {
		log.Warn("deliver.subscriber_disabled", zap.String("reason", "failing every attempt"),
			zap.Duration("disableAfter", f.DisableAfter))
	}
	return exhausted, disabled, err
}

// finish accounts for a finished attempt in the loop goroutine.
func (d *dispatcher) finish(at attempt) {
	d.hold(at.due, -1)
	if at.err != nil {
		d.log.Error("deliver.record_failed", zap.String("delivery", at.due.ID), zap.Error(at.err))
		if d.recordErr == nil {
			d.recordErr = at.err
		}
	}
	switch at.outcome.Result {
	case "":
		return
	case webhook.Delivered:
		d.res.Delivered++
		if !at.due.Correction {
			// A correction is late by nature: it would only blur the
			// delay of the first delivery, which is what this measures.
			d.a.Metrics.ObserveDeliveryDelay(d.a.now().Sub(at.due.PeriodEnd))
		}
	default:
		d.res.Failed++
	}
	d.res.Exhausted += at.exhausted
	if at.disabled {
		d.res.Disabled++
	}
	d.a.Metrics.ObserveDeliveryAttempt(string(at.outcome.Result), at.due.Attempts > 0)
}
