package activities

import (
	"context"

	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/competition"
	"github.com/pacer-dev/pacer/internal/discovery"
	"github.com/pacer-dev/pacer/internal/fault"
	"github.com/pacer-dev/pacer/internal/hiro"
	"github.com/pacer-dev/pacer/internal/ingest"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/internal/tally"
)

const (
	// readerAgents names the agents' visits in a sweep result's readers;
	// readerPending the Verify step's looks at pending transactions.
	readerAgents, readerPending = "agents", "pending"
)

// visit is one agent's visit: it walks the agent's own list newest first
// back to its cursor, verifies the swaps among its entries and saves the
// cursor only once every newer transaction is processed, so a retried
// attempt after a crash loses and duplicates nothing.
type visit struct {
	walk
	row store.AgentIngest
}

// visitBatch visits a batch of agents (the plan's Visit step): their first
// pages read concurrently and the calls on all of them verified together,
// then each visit walks on alone. A visit's database error ends the run
// through stop.
func (r *sweepRun) visitBatch(ctx context.Context, due []store.AgentIngest) {
	for _, agent := range due {
		r.visited = append(r.visited, agent.Address)
	}
	vs, firsts := make([]*visit, len(due)), make([]*page, len(due))
	concurrently := func(f func(i int, ctx context.Context)) {
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(sweepConcurrency)
		for i := range vs {
			g.Go(func() error { f(i, gctx); return nil })
		}
		_ = g.Wait()
	}
	concurrently(func(i int, ctx context.Context) {
		vs[i] = &visit{walk: r.newWalk(zap.String("agent", due[i].Address), readerAgents, due[i].Address), row: due[i]}
		vs[i].scan = vs[i].newScan()
		firsts[i] = vs[i].list(ctx)
	})
	var all []hiro.Entry
	for _, p := range firsts {
		all = append(all, p.cands...)
	}
	outs := r.verifier.VerifyEntries(ctx, all, competition.SourceSweep)
	for i, p := range firsts {
		p.outs, outs = outs[:len(p.cands)], outs[len(p.cands):]
		vs[i].first = p
	}
	concurrently(func(i int, ctx context.Context) { vs[i].carry(ctx) })
	r.lastVisit = r.e.now()
	var batch pacer.SweepResult // the visits' counts, as carry added them to the run's
	for _, v := range vs {
		tally.Add(&batch, v.res)
	}
	r.addReader(readerAgents, store.ReaderCounts{Requests: batch.Requests, Pages: batch.Scanned, Candidates: batch.Found})
}

// carry carries one agent's visit out from its first page and saves how
// far it got.
func (v *visit) carry(ctx context.Context) {
	r := v.run
	started, resumed := r.e.now(), v.row.VisitFrom != ""
	complete := v.pass(ctx)
	if complete && resumed && v.ok() {
		// A visit cut short went on from where it stopped; with that range
		// done, a fresh pass reads what arrived meanwhile.
		v.scan = v.newScan()
		complete = v.pass(ctx)
	}
	if complete && v.ok() { // its pending transactions the list did not settle are the Verify step's now
		if err := r.e.Store.PendingDueOf(ctx, v.row.Address); err != nil {
			v.stop = &fault.Error{Class: pacer.ClassTransport, Op: "sweep " + v.row.Address, Err: err}
		}
	}
	if v.res.Requests == 0 && v.pages == 0 && v.failed == nil && v.stop == nil && v.spent {
		return // the budget stopped it before its first request: nothing changed
	}
	now, row := r.e.now(), v.row
	row.Agent = r.cfg.AfterVisit(row.Agent, ingest.Visit{At: now, Complete: complete, Failed: v.failed != nil && !v.spent, Swaps: v.swaps}, r.alloc)
	row.Status, row.LastError = store.IngestOK, ""
	if v.failed != nil {
		row.Status, row.LastError = store.IngestError, v.failed.Error()
	} else if v.pages > 0 {
		row.LastSuccessAt = &now
	}
	saved, err := r.e.Store.SaveVisit(ctx, row, v.res.Found, started)
	if err != nil && v.stop == nil {
		v.stop = &fault.Error{Class: pacer.ClassTransport, Op: "save visit " + row.Address, Err: err}
	}
	if err == nil && !saved {
		v.log.Info("sweep.visit_superseded")
	}
	r.e.Metrics.ObserveVisit(string(row.Tier), v.res.Found)
	if v.pages > 0 {
		v.res.Scanned++
	}
	r.absorb(&v.walk)
}

// newScan is the visit's walk of the agent's list: on from where a visit
// cut short stopped (row.VisitFrom, VisitTop), else from the newest entry.
func (v *visit) newScan() *discovery.Scan {
	from, st := v.row.Scan()
	return discovery.NewVisit(from, st, v.run.verifier.CompetitionStart)
}

// pass walks the scan and records in the row where it stopped, or, when
// it is done, the cursor advanced (store.AgentIngest.Walked).
func (v *visit) pass(ctx context.Context) (complete bool) {
	for v.step(ctx) {
		v.run.e.Activity.Progress(ctx, v.run.progress())
	}
	v.row.Walked(v.scan)
	return v.scan.Done()
}

// verifyPending is the plan's Verify step: the pending transactions due
// looked at again in one tx/multiple batch and settled as a page's are
// (those still pending are due again ReconcileEvery later). One that
// stops short (Hiro, the budget) is held to the next run. An error is
// the database's.
func (r *sweepRun) verifyPending(ctx context.Context, due []store.PendingTx) error {
	w := r.newWalk(zap.String("reader", readerPending), readerPending, "")
	defer func() { r.absorb(&w); r.lastVisit = r.e.now() }()
	ids := make([]string, len(due))
	for i, p := range due {
		ids[i] = p.TxID
	}
	for i, o := range r.verifier.VerifyMany(ctx, ids, competition.SourceSweep) {
		if o.Status == competition.StatusInserted || o.Status == competition.StatusRejected && o.Reason.Final() {
			w.count(o)
		}
		if !w.settle(ctx, due[i].Sender, 0, o, false) {
			r.held[readerPending] = true
			return nil
		}
	}
	return r.e.Store.CheckedPending(ctx, ids)
}
