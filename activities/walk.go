package activities

import (
	"cmp"
	"context"
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/competition"
	"github.com/pacer-dev/pacer/internal/discovery"
	"github.com/pacer-dev/pacer/internal/fault"
	"github.com/pacer-dev/pacer/internal/hiro"
	"github.com/pacer-dev/pacer/internal/tally"
)

// walk is one walk of a list with a discovery.Scan (the chain's feed, a
// contract's list, an agent's): each page's candidates verified and
// settled before the scan moves on. What it counted and how it ended are
// added to the run's at the end (absorb).
type walk struct {
	run *sweepRun
	log *zap.Logger
	res pacer.SweepResult
	// spent is set when the budget ended it (it goes on at the next step
	// the plan allows); failed when upstream trouble did (back off); stop
	// when the run must end; refused is Hiro's own refusal.
	spent                 bool
	failed, stop, refused error

	scan *discovery.Scan
	// reader names the walk in the run's report; principal owns the list
	// ("" is the feed). agents are the registered agents, for a reader's
	// walk: its candidates are their calls, and it hints their senders
	// (see settle); an agent's own list (nil) takes any sender's.
	reader, principal string
	agents            map[string]bool
	// first is the next page when it is read and verified already (a
	// visit batch's first pages).
	first *page
	// head is the newest entry seen; pages, candidates and details count
	// the pages read, their candidates and the detail requests.
	head                       *discovery.Position
	pages, candidates, details int
	// swaps are the times of the allowlisted calls seen for the first
	// time (a visit's swap rate).
	swaps []time.Time
}

// newWalk begins a walk of principal's list ("" the feed), reported as
// reader's and logged with field.
func (r *sweepRun) newWalk(field zap.Field, reader, principal string) walk {
	return walk{run: r, log: r.log.With(field), res: pacer.SweepResult{RejectionReasons: competition.RejectionReasons(nil)},
		reader: reader, principal: principal}
}

func (w *walk) ok() bool { return !w.spent && w.failed == nil && w.stop == nil }

// page is one page of a walk: its candidates, their outcomes once
// verified, or why it could not be read.
type page struct {
	cands []hiro.Entry
	outs  []competition.Outcome
	err   error
}

// step reads the walk's next page (first, when read already), verifies
// and settles its candidates in order and commits it: false when the
// walk is done or stops (Hiro, the budget, a verdict that could not be
// settled: the page is looked at again, and what the rest of it did, rows
// inserted and requests sent, is counted).
func (w *walk) step(ctx context.Context) bool {
	if w.scan.Done() || !w.ok() || ctx.Err() != nil {
		return false
	}
	p := w.first
	if w.first = nil; p == nil {
		if p = w.list(ctx); p.err == nil {
			p.outs = w.run.verifier.VerifyEntries(ctx, p.cands, competition.SourceSweep)
		}
	}
	if p.err != nil {
		w.upstreamError(p.err, "read "+cmp.Or(w.principal, w.reader))
		return false
	}
	for _, o := range p.outs {
		w.details += o.Requests
	}
	for i, o := range p.outs {
		if !w.settle(ctx, p.cands[i].SenderAddress, seenAt(p.cands[i]), o, w.agents != nil) {
			for _, o := range p.outs[i+1:] {
				w.res.Requests += o.Requests
				if o.Status == competition.StatusInserted {
					w.count(o)
				}
			}
			return false
		}
		e, again := p.cands[i], w.scan.Again(p.cands[i])
		if again && o.Status != competition.StatusInserted {
			continue // looked at again within the reorg margin: counts only if new
		}
		w.count(o)
		if t := competition.SwapTime(e.BlockTime, e.BurnBlockTime); !again && e.Mined() && t > 0 {
			w.swaps = append(w.swaps, time.Unix(t, 0))
		}
	}
	w.scan.Commit()
	return true
}

// list reads the scan's next page and picks its candidates: the
// allowlisted calls (of a registered agent, for a reader). A dropped call
// already judged is passed over: listings show it until Hiro forgets it,
// and it counted once (a failed lookup says no: the verifier then judges
// it again).
func (w *walk) list(ctx context.Context) *page {
	r := w.run
	var entries []hiro.Entry
	var fresh discovery.Page
	if w.principal == "" {
		res, err := r.hiro.Feed(ctx, hiro.TxTypeContractCall, w.scan.NextOffsetAt(r.e.now(), r.e.Traffic.FeedPerMinute()))
		if w.res.Requests += res.Requests; err != nil {
			return &page{err: err}
		}
		r.e.Traffic.ObserveFeed(res.Total, res.Entries, r.e.Catalog.HasContract, r.e.now())
		entries, fresh = res.Entries, w.scan.AddFeed(res.Entries, res.Total)
	} else {
		res, err := r.hiro.ListTransactions(ctx, w.principal, hiro.PageToken(w.scan.NextToken()))
		r.report(w.reader, func(rep *pacer.ReaderReport) { rep.Source = cmp.Or(res.Endpoint, rep.Source) })
		if w.res.Requests += res.Requests; err != nil {
			return &page{err: err}
		}
		entries, fresh = res.Entries, w.scan.AddList(res.Entries, string(res.Next))
	}
	w.pages++
	for _, e := range entries {
		if p := discovery.PositionOf(e); e.Mined() && (w.head == nil || p.Compare(w.head.Position) > 0) {
			w.head = &p
		}
	}
	p := &page{}
	for _, e := range fresh.Fresh {
		if !competition.Found(e, r.e.Catalog) || w.agents != nil && !w.agents[e.SenderAddress] {
			continue
		}
		if !e.Mined() && e.TxStatus != hiro.StatusPending {
			if _, known, err := r.e.Store.KnownRejection(ctx, e.TxID); err == nil && known {
				continue
			}
		}
		p.cands = append(p.cands, e)
	}
	w.candidates += len(p.cands)
	return p
}

// settle decides what an outcome means and records it, the one place a
// verdict of the sweep is settled: true to go on. The budget, a refusal,
// the database or a key Hiro rejects end the work before the transaction
// counts. A pending transaction, or any other failure (Hiro's 5xx, a body
// it cannot read, a transaction it does not know), is kept in pending_txs
// (the one place the sweep writes it) to be looked at again by the
// plan's Verify step, without holding a cursor back; a reader's failure
// hints the sender too, whose visit makes it due at once. One seen in a
// block (seenAt, its block time; 0 for one in the mempool or looked at
// again) holds completeThrough before that block until it is settled
// (store.HoldPending): the reader moves past it.
func (w *walk) settle(ctx context.Context, sender string, seenAt int64, o competition.Outcome, hint bool) bool {
	st := w.run.e.Store
	w.res.Requests += o.Requests
	if o.LedgerErr != nil {
		w.log.Warn("sweep.ledger_write_failed", zap.String("txid", o.TxID), zap.Error(o.LedgerErr))
	}
	retry := o.Status == competition.StatusRejected && !o.Reason.Final()
	class := fault.ClassOf(o.Err)
	switch {
	case retry && o.Reason == competition.ReasonTxFetchFailed && (class == pacer.ClassRateLimit || class == pacer.ClassPermanent):
		w.upstreamError(o.Err, "verify "+o.TxID)
		return false
	case retry && (o.Reason == competition.ReasonDBUnavailable || o.Reason == competition.ReasonTxFetchFailed && class == pacer.ClassTransport):
		o.AddTo(&w.res) // a rejection for now, not an upstream's failure (transport)
		w.stop = o.Err
		if o.Reason == competition.ReasonDBUnavailable {
			w.stop = &fault.Error{Class: pacer.ClassTransport, Op: "sweep " + sender, Err: o.Err}
		}
		return false
	}
	if retry || o.Status == competition.StatusPending {
		if err := st.RecordPending(ctx, o.TxID, sender); err != nil {
			w.stop = &fault.Error{Class: pacer.ClassTransport, Op: "sweep " + sender, Err: err}
			return false
		}
		if seenAt > 0 {
			if err := st.HoldPending(ctx, o.TxID, seenAt); err != nil {
				w.stop = &fault.Error{Class: pacer.ClassTransport, Op: "sweep " + sender, Err: err}
				return false
			}
		}
	}
	if retry && hint {
		if _, err := st.HintAgent(ctx, sender); err != nil {
			w.log.Warn("discovery.hint_failed", zap.String("txid", o.TxID), zap.Error(err))
		}
	}
	return true
}

// seenAt is the block time of a listed entry in a block, 0 for one in the
// mempool.
func seenAt(e hiro.Entry) int64 {
	if !e.Mined() {
		return 0
	}
	return competition.SwapTime(e.BlockTime, e.BurnBlockTime)
}

// count adds one outcome to the counts.
func (w *walk) count(o competition.Outcome) {
	o.AddTo(&w.res)
	if o.Status == competition.StatusAlreadyKnown && o.Detail != "" {
		// A chainhook delivery's row the chain corrected (SPEC §11).
		w.log.Warn("sweep.push_mismatch", zap.String("txid", o.TxID), zap.String("detail", o.Detail))
	}
	if o.Status == competition.StatusRejected {
		w.log.Info("sweep.rejected", zap.String("txid", o.TxID), zap.String("reason", string(o.Reason)),
			zap.String("detail", o.Detail), zap.Bool("known", o.Known), zap.Error(o.Err))
	}
}

// upstreamError ends the work on a Hiro failure. The run's budget share
// spent ends it quietly: it goes on when the plan finds room. A refusal
// by Hiro ends it the same way, counted as a refusal.
func (w *walk) upstreamError(err error, what string) {
	end := hiro.EndingOf(err)
	if end == hiro.EndSpent {
		w.spent = true
		return
	}
	w.res.HiroErrors++
	tally.Count(&w.res.Run, fault.ClassOf(err))
	var se *hiro.StatusError
	if errors.As(err, &se) {
		w.log.Warn("sweep.hiro_non_ok", zap.String("what", what), zap.Int("status", se.StatusCode), zap.Error(err))
	} else {
		w.log.Warn("sweep.hiro_failed", zap.String("what", what), zap.Error(err))
	}
	switch end {
	case hiro.EndRefused:
		w.spent, w.refused = true, err
	case hiro.EndStop:
		w.failed, w.stop = err, err
	default:
		w.failed = err
	}
}

// absorb adds a walk's counts and its ending to the run's.
func (r *sweepRun) absorb(w *walk) {
	r.mu.Lock()
	defer r.mu.Unlock()
	tally.Add(&r.res, w.res)
	if w.failed != nil {
		r.lastErr = w.failed
	} else if w.refused != nil {
		r.lastErr = w.refused
	}
	if w.stop != nil && r.stop == nil {
		r.stop = w.stop
	}
}
