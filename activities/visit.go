package activities

import (
	"context"
	"errors"
	"maps"
	"slices"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/competition"
	"github.com/pacer-dev/pacer/internal/fault"
	"github.com/pacer-dev/pacer/internal/hiro"
	"github.com/pacer-dev/pacer/internal/ingest"
	"github.com/pacer-dev/pacer/internal/store"
)

const (
	// reorgDepth is how many blocks below its cursor a visit reads again:
	// a fork that lost can have held the cursor's block, and the winning
	// fork's transactions at those heights must not be skipped.
	reorgDepth = 6
	// pendingPerVisit bounds the pending transactions a visit looks at again.
	pendingPerVisit = 20
	// readerAgents names the agents' visits in a sweep result's readers.
	readerAgents = "agents"
)

// tally is what one piece of a run (an agent's visit, a reader's read)
// counted and how it ended; it is added to the run's at the end.
type tally struct {
	run *sweepRun
	log *zap.Logger
	res pacer.SweepResult
	// spent is set when the budget ended it (it goes on at the next step
	// the plan allows); failed when upstream trouble did (back off); stop
	// when the run must end; refused is Hiro's own refusal.
	spent                 bool
	failed, stop, refused error
}

func (r *sweepRun) newTally(log *zap.Logger) tally {
	return tally{run: r, log: log, res: pacer.SweepResult{RejectionReasons: competition.RejectionReasons(nil)}}
}

func (t *tally) ok() bool { return !t.spent && t.failed == nil && t.stop == nil }

// settle decides what an outcome means and records it, the one place a
// verdict of the sweep is settled: true to go on. The budget, a refusal,
// the database or a key Hiro rejects end the work before the transaction
// counts. A pending transaction, or any other failure (Hiro's 5xx, a body
// it cannot read, a transaction it does not know), is kept in pending_txs
// (the one place the sweep writes it) to be looked at again at the
// sender's next visit, without holding a cursor back; a reader's then
// hints the sender, so that visit comes.
func (t *tally) settle(ctx context.Context, sender string, o competition.Outcome, hint bool) bool {
	a := t.run.a
	t.res.Requests += o.Requests
	if o.LedgerErr != nil {
		t.log.Warn("sweep.ledger_write_failed", zap.String("txid", o.TxID), zap.Error(o.LedgerErr))
	}
	retry := o.Status == competition.StatusRejected && !o.Reason.Final()
	switch {
	case retry && o.Reason == competition.ReasonDBUnavailable:
		t.countRejection(o)
		t.stop = &fault.Error{Class: pacer.ClassTransport, Op: "sweep " + sender, Err: o.Err}
		return false
	case retry && o.Reason == competition.ReasonTxFetchFailed:
		switch fault.ClassOf(o.Err) {
		case pacer.ClassRateLimit, pacer.ClassPermanent:
			t.upstreamError(o.Err, "verify "+o.TxID)
			return false
		case pacer.ClassTransport:
			t.countRejection(o)
			t.stop = o.Err
			return false
		}
	}
	if retry || o.Status == competition.StatusPending {
		if err := a.Store.RecordPending(ctx, o.TxID, sender); err != nil {
			t.stop = &fault.Error{Class: pacer.ClassTransport, Op: "sweep " + sender, Err: err}
			return false
		}
	}
	if retry && hint {
		if _, err := a.Store.HintAgent(ctx, sender); err != nil {
			t.log.Warn("discovery.hint_failed", zap.String("txid", o.TxID), zap.Error(err))
		}
	}
	return true
}

// countRejection counts an outcome that ends the run, so its result says
// why.
func (t *tally) countRejection(o competition.Outcome) {
	t.res.Found++
	t.res.Rejected++
	t.res.RejectionReasons[string(o.Reason)]++
}

// count adds one outcome to the counts.
func (t *tally) count(o competition.Outcome) {
	t.res.Found++
	countUpstream(&t.res.Run, o.Class())
	switch o.Status {
	case competition.StatusInserted:
		t.res.Inserted++
	case competition.StatusAlreadyKnown:
		t.res.AlreadyKnown++
	case competition.StatusPending:
		t.res.Pending++
	case competition.StatusRejected:
		t.res.Rejected++
		t.res.RejectionReasons[string(o.Reason)]++
		t.log.Info("sweep.rejected", zap.String("txid", o.TxID), zap.String("reason", string(o.Reason)),
			zap.String("detail", o.Detail), zap.Bool("known", o.Known), zap.Error(o.Err))
	}
}

// upstreamError ends the work on a Hiro failure. The run's budget share
// spent ends it quietly: it goes on when the plan finds room. A refusal
// by Hiro ends it the same way, counted as a refusal.
func (t *tally) upstreamError(err error, what string) {
	var spent *hiro.BudgetSpentError
	isSpent := errors.As(err, &spent)
	class := fault.ClassOf(err)
	refused := class == pacer.ClassRateLimit && (!isSpent || errors.Is(err, store.ErrRefused))
	if isSpent && !refused {
		t.spent = true
		return
	}
	t.res.HiroErrors++
	countUpstream(&t.res.Run, class)
	var se *hiro.StatusError
	if errors.As(err, &se) {
		t.log.Warn("sweep.hiro_non_ok", zap.String("what", what), zap.Int("status", se.StatusCode), zap.Error(err))
	} else {
		t.log.Warn("sweep.hiro_failed", zap.String("what", what), zap.Error(err))
	}
	switch {
	case refused && se != nil && se.Quota.MonthExhausted():
		t.failed, t.stop = err, err
	case refused:
		t.spent, t.refused = true, err
	case class == pacer.ClassPermanent, class == pacer.ClassTransport:
		t.failed, t.stop = err, err
	default:
		t.failed = err
	}
}

// absorb adds a tally's counts and its ending to the run's.
func (r *sweepRun) absorb(t *tally) {
	r.mu.Lock()
	defer r.mu.Unlock()
	add(&r.res, t.res)
	if t.failed != nil {
		r.lastErr = t.failed
	} else if t.refused != nil {
		r.lastErr = t.refused
	}
	if t.stop != nil && r.stop == nil {
		r.stop = t.stop
	}
}

// visit is one agent's visit: it reads the agent's transactions newest
// first back to its cursor, verifies the swaps among them and saves the
// cursor only once every newer transaction is processed, so a retried
// attempt after a crash loses and duplicates nothing.
type visit struct {
	tally
	agent store.AgentIngest
	// swaps are the times of the allowlisted calls seen for the first
	// time (the swap rate's input).
	swaps []time.Time
	// seen are the txids the listing's pass handled, so pending
	// transactions it settled are not fetched again.
	seen map[string]bool
	// listed is true once one page was read.
	listed bool
	// pre are the outcomes of the page's calls verified together, by
	// txid, before the page is walked (prefetch, or visitBatch for the
	// first page). first is the first page, read with the batch's.
	pre   map[string]competition.Outcome
	first *firstPage
}

// firstPage is a visit's first listing page as visitBatch read it.
type firstPage struct {
	page hiro.TxPage
	err  error
}

// visitBatch visits a batch of agents (the plan's Visit step). It reads
// their first listing pages concurrently, then verifies the allowlisted
// calls of all those pages together rather than a request for each agent
// with a call, and then each visit walks on with those outcomes. Its
// error is the database's (none: a visit's ends the run through stop).
func (r *sweepRun) visitBatch(ctx context.Context, due []store.AgentIngest) error {
	r.mu.Lock()
	before := r.res
	for _, agent := range due {
		r.visited = append(r.visited, agent.Address)
	}
	r.mu.Unlock()
	vs := make([]*visit, len(due))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(sweepConcurrency)
	for i, agent := range due {
		vs[i] = &visit{tally: r.newTally(r.log.With(zap.String("agent", agent.Address))), agent: agent, seen: map[string]bool{}}
		g.Go(func() error {
			page, err := r.hiro.ListTransactions(gctx, agent.Address, agent.VisitFrom)
			r.setSource(readerAgents, page.Endpoint)
			vs[i].first = &firstPage{page: page, err: err}
			return nil
		})
	}
	_ = g.Wait()
	start := r.verifier.CompetitionStart.Unix()
	var ids []string
	owner := map[string]*visit{}
	for _, v := range vs {
		if v.first.err != nil {
			continue
		}
		for _, id := range v.prefetchIDs(v.first.page.Entries, v.agent.Cursor, start) {
			if _, dup := owner[id]; !dup {
				owner[id] = v
				ids = append(ids, id)
			}
		}
	}
	if len(ids) >= 2 { // one is as cheap alone: its visit verifies it as it walks
		for _, v := range vs {
			if v.first.err == nil {
				v.pre = map[string]competition.Outcome{}
			}
		}
		for i, o := range r.verifier.VerifyMany(ctx, ids, competition.SourceSweep) {
			owner[ids[i]].pre[ids[i]] = o
		}
	}
	g, gctx = errgroup.WithContext(ctx)
	g.SetLimit(sweepConcurrency)
	for _, v := range vs {
		g.Go(func() error {
			v.walk(gctx)
			return nil
		})
	}
	_ = g.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lastVisit = r.a.now()
	rep := r.reader(readerAgents)
	rep.Requests += r.res.Requests - before.Requests
	rep.Pages += r.res.Scanned - before.Scanned
	rep.Candidates += r.res.Found - before.Found
	r.res.Readers[readerAgents] = rep
	return nil
}

// walk carries one agent's visit out and saves how far it got.
func (v *visit) walk(ctx context.Context) {
	r := v.run
	started := r.a.now()
	row := v.agent
	resumed := row.VisitFrom != ""
	complete := v.pass(ctx, &row)
	if complete && resumed && v.ok() {
		// A visit cut short went on from where it stopped; with that range
		// done, a fresh pass reads what arrived meanwhile.
		complete = v.pass(ctx, &row)
	}
	if complete && v.ok() {
		v.recheckPending(ctx)
	}
	if v.res.Requests == 0 && !v.listed && v.failed == nil && v.stop == nil && v.spent {
		return // the budget stopped it before its first request: nothing changed
	}
	now := r.a.now()
	pol := r.cfg.AfterVisit(row.Agent, ingest.Visit{At: now, Complete: complete, Failed: v.failed != nil && !v.spent, Swaps: v.swaps}, r.alloc)
	row.Agent = pol
	row.Status, row.LastError = store.IngestOK, ""
	if v.failed != nil {
		row.Status, row.LastError = store.IngestError, v.failed.Error()
	} else if v.listed {
		row.LastSuccessAt = &now
	}
	saved, err := r.a.Store.SaveVisit(ctx, row, v.res.Found, started)
	if err != nil && v.stop == nil {
		v.stop = &fault.Error{Class: pacer.ClassTransport, Op: "save visit " + row.Address, Err: err}
	}
	if err == nil && !saved {
		v.log.Info("sweep.visit_superseded")
	}
	r.a.Metrics.ObserveVisit(string(pol.Tier), v.res.Found)
	if v.listed {
		v.res.Scanned++
	}
	r.absorb(&v.tally)
}

// pass pages from row.VisitFrom (newest when empty) down to the cursor.
// It leaves row.VisitFrom and row.VisitTop where it stopped, or, when it
// reached the cursor, the cursor advanced and the visit state cleared.
func (v *visit) pass(ctx context.Context, row *store.AgentIngest) (complete bool) {
	a := v.run.a
	from, top := row.VisitFrom, row.VisitTop
	start := v.run.verifier.CompetitionStart.Unix()
	for {
		var page hiro.TxPage
		var err error
		if f := v.first; f != nil {
			page, err, v.first = f.page, f.err, nil // read from row.VisitFrom by visitBatch
		} else {
			page, err = v.run.hiro.ListTransactions(ctx, row.Address, from)
			v.run.setSource(readerAgents, page.Endpoint)
		}
		v.res.Requests += page.Requests
		if err != nil {
			v.upstreamError(err, "list")
			row.VisitFrom, row.VisitTop = from, top
			return false
		}
		v.listed = true
		reached := false
		if v.pre == nil {
			v.prefetch(ctx, page.Entries, row.Cursor, start)
		}
		for _, e := range page.Entries {
			again, end := reach(e, row.Cursor, start)
			if end {
				reached = true
				break
			}
			if !e.Mined() && v.knownRejection(ctx, e) {
				// Dropped from the mempool and judged before: listings
				// show it until Hiro forgets it; it counted once.
				v.seen[e.TxID] = true
				continue
			}
			if e.Mined() && e.Canonical && !again && (top == nil || e.Position().Compare(*top) > 0) {
				p := e.Position()
				top = &p
			}
			if !competition.Found(e, a.Catalog) {
				continue
			}
			if !v.entry(ctx, e, again) {
				v.flushPrefetched()
				row.VisitFrom, row.VisitTop = from, top
				return false
			}
		}
		v.flushPrefetched()
		recordProgress(ctx, v.run.progress())
		if reached || page.Next == "" {
			if top != nil && (row.Cursor == nil || top.Compare(*row.Cursor) > 0) {
				row.Cursor = top
			}
			row.VisitFrom, row.VisitTop = "", nil
			return true
		}
		from = page.Next
	}
}

// entry handles one allowlisted call of the listing; false ends the visit.
// A call seen again (again: below the cursor, within reorgDepth) counts
// only if it turns out new.
func (v *visit) entry(ctx context.Context, e hiro.Entry, again bool) bool {
	v.seen[e.TxID] = true
	var o competition.Outcome
	switch listed, decided := v.run.verifier.RejectListed(ctx, e); {
	case decided:
		o = listed
	case e.TxStatus == hiro.StatusPending:
		// The listing says it all; a detail request would say the same.
		o = competition.Outcome{TxID: e.TxID, Status: competition.StatusPending}
	default:
		if pre, ok := v.pre[e.TxID]; ok {
			o = pre
			delete(v.pre, e.TxID)
		} else {
			o = v.run.verifier.Verify(ctx, e.TxID, competition.SourceSweep)
		}
	}
	if !v.settle(ctx, e.SenderAddress, o, false) {
		return false // not looked at yet: the visit goes on from this page next time
	}
	if again && o.Status != competition.StatusInserted {
		return true
	}
	v.count(o)
	if t := competition.SwapTime(e.BlockTime, e.BurnBlockTime); !again && e.Mined() && t > 0 {
		v.swaps = append(v.swaps, time.Unix(t, 0))
	}
	return true
}

// flushPrefetched counts what the prefetch did that the walk did not
// reach (it stopped first): the rows it inserted and the requests it sent.
// The rest is looked at again by the next visit.
func (v *visit) flushPrefetched() {
	for _, id := range slices.Sorted(maps.Keys(v.pre)) {
		o := v.pre[id]
		v.res.Requests += o.Requests
		if o.Status == competition.StatusInserted {
			v.count(o)
		}
	}
	v.pre = nil
}

// prefetch verifies together (one batched request where Hiro allows it)
// the page's allowlisted calls that the walk will verify one by one. The
// walk then takes their outcomes in its order, settling each as before.
func (v *visit) prefetch(ctx context.Context, entries []hiro.Entry, cursor *hiro.Position, start int64) {
	ids := v.prefetchIDs(entries, cursor, start)
	if len(ids) < 2 {
		return // one is as cheap alone
	}
	v.pre = map[string]competition.Outcome{}
	for i, o := range v.run.verifier.VerifyMany(ctx, ids, competition.SourceSweep) {
		v.pre[ids[i]] = o
	}
}

// prefetchIDs are the page's calls above where the walk stops (the
// cursor, less the reorg margin, or the competition's start) that the
// listing alone does not decide.
func (v *visit) prefetchIDs(entries []hiro.Entry, cursor *hiro.Position, start int64) []string {
	var ids []string
	for _, e := range entries {
		if _, end := reach(e, cursor, start); end {
			break
		}
		if competition.Found(e, v.run.a.Catalog) && v.run.verifier.NeedsDetail(e) {
			ids = append(ids, e.TxID)
		}
	}
	return ids
}

// reach says where a listing entry stands for a visit: at or below the
// cursor but within reach of a reorg (again: looked at quietly), or where
// the visit ends (more than reorgDepth blocks below the cursor, or before
// the competition's start: older transactions are older still).
func reach(e hiro.Entry, cursor *hiro.Position, start int64) (again, end bool) {
	if !e.Mined() {
		return false, false
	}
	if cursor != nil && e.Position().Compare(*cursor) <= 0 {
		if e.BlockHeight < cursor.BlockHeight-reorgDepth {
			return false, true
		}
		again = true
	}
	t := competition.SwapTime(e.BlockTime, e.BurnBlockTime)
	return again, t > 0 && t < start
}

// knownRejection reports whether an entry not mined (dropped) already has
// its verdict in swap_rejections. A failed lookup says no: the verifier
// then judges it again.
func (v *visit) knownRejection(ctx context.Context, e hiro.Entry) bool {
	if e.TxStatus == hiro.StatusPending || !competition.Found(e, v.run.a.Catalog) {
		return false
	}
	_, found, err := v.run.a.Store.KnownRejection(ctx, e.TxID)
	return err == nil && found
}

// recheckPending looks again at the agent's pending transactions that the
// listing did not settle (a listing without the mempool, or one gone).
func (v *visit) recheckPending(ctx context.Context) {
	txids, err := v.run.a.Store.PendingTxs(ctx, v.agent.Address, pendingPerVisit)
	if err != nil {
		v.stop = &fault.Error{Class: pacer.ClassTransport, Op: "sweep " + v.agent.Address, Err: err}
		return
	}
	for _, txid := range txids {
		if v.seen[txid] {
			continue
		}
		o := v.run.verifier.Verify(ctx, txid, competition.SourceSweep)
		if o.Status == competition.StatusInserted || o.Status == competition.StatusRejected && o.Reason.Final() {
			v.count(o)
		}
		if !v.settle(ctx, v.agent.Address, o, false) {
			return
		}
	}
}

// add adds a piece's counts to the run's.
func add(to *pacer.SweepResult, v pacer.SweepResult) {
	to.Scanned += v.Scanned
	to.Found += v.Found
	to.Inserted += v.Inserted
	to.AlreadyKnown += v.AlreadyKnown
	to.Pending += v.Pending
	to.Rejected += v.Rejected
	to.HiroErrors += v.HiroErrors
	to.Requests += v.Requests
	to.Run.Rejected += v.Run.Rejected
	to.UpstreamFailed += v.UpstreamFailed
	for _, k := range slices.Sorted(maps.Keys(v.RejectionReasons)) {
		to.RejectionReasons[k] += v.RejectionReasons[k]
	}
}

// countUpstream counts a failed call against the upstream when the failure
// was the upstream's own (not an item problem).
func countUpstream(run *pacer.Run, class pacer.ErrorClass) {
	if fault.IsUpstreamFailure(class) {
		run.UpstreamFailed++
	}
	if class == pacer.ClassRateLimit {
		run.Rejected++
	}
}
