package activities

import (
	"cmp"
	"context"
	"time"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/competition"
	"github.com/pacer-dev/pacer/internal/discovery"
	"github.com/pacer-dev/pacer/internal/hiro"
)

// walk is one walk of a list with a discovery.Scan (the chain's feed, a
// contract's list, an agent's): each page's candidates verified and
// settled before the scan moves on.
type walk struct {
	tally
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
	// time (a visit's swap rate); seen the txids the walk handled, so
	// pending ones it settled are not fetched again.
	swaps []time.Time
	seen  map[string]bool
}

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
			p.outs = w.run.verify(ctx, p.cands)
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
		if !w.settle(ctx, p.cands[i].SenderAddress, o, w.agents != nil) {
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
		res, err := r.hiro.Feed(ctx, hiro.TxTypeContractCall, w.scan.NextOffset())
		if w.res.Requests += res.Requests; err != nil {
			return &page{err: err}
		}
		r.observeFeed(res)
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
		if p := discovery.PositionOf(e); e.Mined() && (w.head == nil || p.Compare(*w.head) > 0) {
			w.head = &p
		}
	}
	p := &page{}
	for _, e := range fresh.Fresh {
		if !competition.Found(e, r.a.Catalog) || w.agents != nil && !w.agents[e.SenderAddress] {
			continue
		}
		w.seen[e.TxID] = true
		if !e.Mined() && e.TxStatus != hiro.StatusPending {
			if _, known, err := r.a.Store.KnownRejection(ctx, e.TxID); err == nil && known {
				continue
			}
		}
		p.cands = append(p.cands, e)
	}
	w.candidates += len(p.cands)
	return p
}
