package bench

import (
	"cmp"
	"time"

	"github.com/pacer-dev/pacer/internal/hiro"
	"github.com/pacer-dev/pacer/internal/schedule"
	simulator "github.com/pacer-dev/pacer/internal/sim"
)

// # Push
//
// With Strategy.Push the sweep runs as the service does by default
// (PACER_PUSH=ws, SPEC §5.0 "Push"): Hiro's WebSocket is live, a socket
// per allowlisted contract, so the plan's readers read at their
// reconciling cadence (discovery.Run.PushLive) and every agent's call of
// an allowlisted contract reaches the plan as a pushed pending
// transaction, verified at once (its Verify step), as internal/push and
// activities/sweep.go do it:
//
//   - the socket delivers each call of an allowlisted contract PushDelay
//     (or Strategy.PushDelay) after its block (Hiro's server pushes address_tx_update as it
//     indexes the block; the simulator's WebSocket pushes at the block,
//     and the bench's feed shows a block at its time: the delay is the
//     push's only handicap);
//   - push.Hold passes over a call not on an allowlisted pair, and
//     store.RecordPushed over one whose sender is no registered agent or
//     whose swap the ledger holds, without a request: in the bench's chain
//     the agents' calls off the allowlist are on other contracts (no
//     socket delivers them) and strangers are not agents, so the queued
//     ones are the agents' swaps not found by then;
//   - a queued push rings the sweep's bell (store.ListenPushed): a run's
//     wait ends at once; and sends the hint signal (push.Hold's wakes: at
//     once, then at most one a wakeGap), which starts a run at once when
//     none runs, at most one a schedule.HintGap after the last start, and
//     right after the one running when it came during a run (the
//     scheduler's HintedAt, cleared when a run starts);
//   - the plan's Verify step takes the due pending transactions
//     (store.DuePending: at most hiro.MaxBatch, a pushed one due at once,
//     oldest first: pushed ones by txid, the chain's order) and verifies
//     them in one tx/multiple batch (competition.VerifyMany: those the
//     ledger holds cost nothing), its requests counted as the details';
//     a batch the budget stops is held to the next run (activities
//     verifyPending), and the Verify step's details are not the tail's
//     read cost (the sweep observes only the readers' details).
//
// The socket never drops in the bench: the rows without push are the
// fallback, the socket down.

// PushDelay is how long after its block a call's address_tx_update
// arrives (Strategy.PushDelay may say otherwise).
const PushDelay = time.Second

// wakeGap is push.Hold's gap between two wakes (HoldOptions.WakeGap's
// default, which the worker keeps).
const wakeGap = time.Second

// readerPending is the Verify step's reader in the held set, as the
// sweep's (activities: readerPending).
const readerPending = "pending"

// pushAt is when the socket delivers the agent's transaction at index i
// of the chain's agents' entries, and whether it delivers it at all (an
// allowlisted call: a swap).
func (x *sim) pushAt(i int) (time.Time, bool) {
	ref := x.c.agentRef[i]
	tx := x.w.Agents[ref.agent].Txs[ref.tx]
	return simulator.BlockOf(tx.At).Add(cmp.Or(x.s.PushDelay, PushDelay)), tx.Swap
}

// queued reports whether a push of r arriving at at waits in pending_txs
// (store.RecordPushed): the ledger has no row of it by then.
func (x *sim) queued(r agentTxRef, at time.Time) bool {
	f := x.found[r.agent][r.tx]
	return f.IsZero() || f.After(at)
}

// deliver takes in the pushes that arrived by now: each one queued waits
// for the Verify step and wakes the sweep.
func (x *sim) deliver(now time.Time) {
	for ; x.pushNext < len(x.c.agentRef); x.pushNext++ {
		at, ok := x.pushAt(x.pushNext)
		if at.After(now) {
			return
		}
		if ref := x.c.agentRef[x.pushNext]; ok && x.queued(ref, at) {
			x.pending = append(x.pending, ref)
			x.wake(at)
		}
	}
}

// nextPush is when the next push to be queued arrives, if one does by
// until: nothing changes the ledger between now (every push before it
// taken in) and then but the Verify step, so one not found now is queued.
func (x *sim) nextPush(until time.Time) (time.Time, bool) {
	for i := x.pushNext; i < len(x.c.agentRef); i++ {
		at, ok := x.pushAt(i)
		if at.After(until) {
			break
		}
		if ref := x.c.agentRef[i]; ok && x.found[ref.agent][ref.tx].IsZero() {
			return at, true
		}
	}
	return time.Time{}, false
}

// wake is push.Hold's wake for a push queued at at: none when a wake at
// or after it is sent already (it covers this one), else at once or a
// wakeGap after the last. A wake after the running sweep started is the
// scheduler's HintedAt until the next start.
func (x *sim) wake(at time.Time) {
	if !at.After(x.lastWake) {
		return
	}
	x.lastWake = laterOf(at, x.lastWake.Add(wakeGap))
	if x.hinted.IsZero() && x.lastWake.After(x.runBegan) {
		x.hinted = x.lastWake
	}
}

// hintedStart is when the next run starts given the hints, after a run
// that began at began ended at now with the next due by its own inputs
// at cadence: a hint during the run starts the next as soon as the
// scheduler lets it (schedule.HintGap after the last start), and a push
// queued before cadence wakes one then.
func (x *sim) hintedStart(began, now, cadence time.Time) time.Time {
	x.deliver(now)
	floor := began.Add(schedule.HintGap)
	if !x.hinted.IsZero() {
		return earlierOf(cadence, laterOf(x.hinted, floor, now))
	}
	at, ok := x.nextPush(cadence)
	if !ok {
		return cadence
	}
	w := at
	if !x.lastWake.IsZero() {
		w = laterOf(at, x.lastWake.Add(wakeGap))
	}
	return earlierOf(cadence, laterOf(w, floor, now))
}

// bell is when a run's wait until until ends: at the next push queued
// before it (the sweep's bell), or until.
func (x *sim) bell(now, until time.Time) time.Time {
	x.deliver(now)
	if at, ok := x.nextPush(until); ok {
		return laterOf(at, now)
	}
	return until
}

// verify is the plan's Verify step: the due pending transactions, a
// batch at most, verified together (the ledger answers those it holds);
// the budget stopping the batch holds the pending ones to the next run.
func (x *sim) verify(now *time.Time, held map[string]bool) {
	defer func() { x.lastVisit = *now }()
	batch := x.pending[:min(len(x.pending), hiro.MaxBatch)]
	if !x.fetch(now, batch, false) {
		held[readerPending] = true
		return
	}
	for _, r := range batch {
		x.byTail[r.agent][r.tx] = true // a push handed it out
	}
	x.pending = x.pending[len(batch):]
}

func earlierOf(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func laterOf(a time.Time, ts ...time.Time) time.Time {
	for _, t := range ts {
		if t.After(a) {
			a = t
		}
	}
	return a
}
