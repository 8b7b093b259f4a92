package activities

import (
	"cmp"
	"context"
	"strings"

	"go.uber.org/zap"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/discovery"
	"github.com/pacer-dev/pacer/internal/hiro"
	"github.com/pacer-dev/pacer/internal/push"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/internal/tally"
)

// readers fills the run's readers into s (store.PlanReaders), choosing
// where the tail reads once a run, or at once when Hiro switches the
// feed off: the feed, or the allowlisted contracts' own lists once Hiro
// has switched the feed off or when the lane's rate cannot pay the feed
// at the chain's volume (discovery.PlanSource).
func (r *sweepRun) readers(ctx context.Context, s *discovery.Run) error {
	rows, err := r.e.Store.DiscoveryReaders(ctx)
	if err != nil {
		return err
	}
	contracts, feedOff := r.e.Catalog.Contracts(), r.hiro.Sunset(hiro.EndpointFeed)
	if r.src == "" || feedOff {
		before, now, t := r.e.Traffic.Choose(feedOff, len(contracts), r.dc.TailEvery, s.Budget.Rate)
		if r.src = now; now != before {
			r.log.Info("discovery.source", zap.String("from", string(before)), zap.String("to", string(now)),
				zap.Float64("feedPerMinute", t.FeedPerMinute()), zap.Float64("contractsPerMinute", t.ContractsPerMinute()),
				zap.Float64("detailsPerMinute", t.DetailsPerMinute()))
		}
	}
	s.ContractsAreTail, s.OpenGaps = r.src == discovery.SourceContracts, r.e.Traffic.OpenGaps() > 0
	store.PlanReaders(s, rows, contracts, r.held, feedOff, r.e.Traffic.ProbedAt())
	return nil
}

// push reads where Hiro's WebSocket stands (push_state, written by the
// worker holding it) into s and the run's report: the plan slows the
// readers while it is live. An error is the database's.
func (r *sweepRun) push(ctx context.Context, s *discovery.Run) error {
	if !r.dc.Push {
		return nil
	}
	st, found, err := r.e.Store.ReadPushState(ctx, push.Silence)
	if err != nil {
		return err
	}
	s.PushLive = found && st.Live
	rep := &pacer.PushReport{Live: s.PushLive, Since: st.Since.UTC(), Messages: st.Messages, Reconnects: st.Reconnects,
		Holder: st.Holder, LastError: st.LastError}
	if found && st.Live != s.PushLive { // the holder stopped writing: down since its last word
		rep.Since = st.UpdatedAt.UTC()
	}
	r.mu.Lock()
	r.res.Push = rep
	r.mu.Unlock()
	return nil
}

// readTail is the plan's ReadTail step: the chain's confirmed contract
// calls down to the tail's position, or, while the contracts' lists are
// the tail, one page of the feed that keeps its volume observed (the
// tail's own walk waits where it is: back on the feed, it goes on from
// there). An error is the database's.
func (r *sweepRun) readTail(ctx context.Context) error {
	rd, _, err := r.e.Store.DiscoveryReader(ctx, discovery.ReaderTail)
	if err != nil {
		return err
	}
	if r.src == discovery.SourceContracts {
		r.e.Traffic.Probed(r.e.now())
		w := r.newWalk(zap.String("reader", rd.Name), rd.Name, "")
		w.scan = discovery.NewScan(discovery.ScanConfig{}, discovery.State{}) // no From: the page only finds the head
		if p := w.list(ctx); p.err != nil {
			w.upstreamError(p.err, "read "+rd.Name)
		}
		r.addReader(rd.Name, store.ReaderCounts{Requests: w.res.Requests, Pages: w.pages})
		r.absorb(&w)
		return nil
	}
	return r.read(ctx, rd, discovery.NewScan(discovery.ScanConfig{From: rd.Position, MaxPages: r.dc.MaxPages}, rd.Scan), "")
}

// readContract is the plan's ReadContract step: a contract's own list
// (v3 principals, cursor paged; v1's offsets where the server has no v3)
// from its own position. A contract's reader begins where the tail began,
// so that together they leave nothing out. An error is the database's.
func (r *sweepRun) readContract(ctx context.Context, name string) error {
	rd, found, err := r.e.Store.DiscoveryReader(ctx, name)
	if err != nil {
		return err
	}
	if !found {
		tail, _, err := r.e.Store.DiscoveryReader(ctx, discovery.ReaderTail)
		if err != nil {
			return err
		}
		rd.BeginAt(tail.Start)
	}
	scan := discovery.NewScan(discovery.ScanConfig{From: rd.Position, MaxPages: discovery.ReconcileMaxPages, Tokens: true}, rd.Scan)
	return r.read(ctx, rd, scan, strings.TrimPrefix(name, discovery.ContractPrefix))
}

// read walks one reader's list (principal's; "" is the feed) down to its
// position: each page's candidates verified and settled before the scan
// moves on, the scan's progress saved after every page, so a worker
// killed at any point loses nothing and doubles nothing. A read that
// stops short (Hiro, the budget) is held: it goes on from its scan at
// the next run. An error is the database's.
func (r *sweepRun) read(ctx context.Context, rd store.Reader, scan *discovery.Scan, principal string) error {
	agents, err := r.e.Store.AgentAddresses(ctx)
	if err != nil {
		return err
	}
	w := r.newWalk(zap.String("reader", rd.Name), rd.Name, principal)
	w.scan, w.agents = scan, agents
	defer r.absorb(&w)
	began := r.e.now()
	if !rd.Scan.Started() || rd.ScanBegan == nil {
		rd.ScanBegan = &began
	}
	total := 0
	save := func() error {
		counts := store.ReaderCounts{Requests: w.res.Requests - total, Pages: w.pages, Candidates: w.candidates}
		r.e.Traffic.ObserveDetails(w.details, r.e.now())
		total, w.pages, w.candidates, w.details = w.res.Requests, 0, 0, 0
		r.addReader(rd.Name, counts)
		return r.e.Store.SaveDiscoveryReader(ctx, rd, counts)
	}
	for w.step(ctx) {
		rd.Scan = scan.State()
		if scan.Done() {
			break
		}
		if err := save(); err != nil {
			return err
		}
	}
	r.held[rd.Name] = !scan.Done()
	// What a read costs, the room a read needs before it starts: the
	// feed's walks, or each list's while the lists are the tail; and a
	// read the budget stopped at a page whose details it could not pay
	// (its candidates, counted, not settled) needed one request more.
	// Without it a read started with room for its page alone, and under a
	// trickle of room (the month's pace) read the same page at every run
	// and never paid its details: in the chain bench's month plan a list
	// with swaps never moved, its swaps never found.
	if tail := rd.Name == discovery.ReaderTail || r.src == discovery.SourceContracts && principal != ""; tail && scan.Done() {
		r.e.Traffic.ReadTail(w.res.Requests)
	} else if tail && w.spent && w.candidates > 0 {
		r.e.Traffic.ReadTail(w.res.Requests + 1)
	}
	if scan.Done() {
		rd.Covered(scan.Position(), r.e.now())
		if g := scan.Gap(); g != nil {
			if err := r.e.Store.RecordGap(ctx, rd.Name, *g); err != nil {
				return err
			}
			rd.Gaps++
			r.e.Traffic.SetOpenGaps(1, true)
			r.log.Warn("discovery.gap", zap.String("reader", rd.Name), zap.Stringer("to", g.To),
				zap.Int("maxPages", r.dc.MaxPages), zap.String("filledBy", "the reconciler"))
		}
	}
	rd.HeadLagSeconds = discovery.Lag(rd.Position, w.head)
	return save()
}

// report updates the run's report of a reader.
func (r *sweepRun) report(name string, f func(*pacer.ReaderReport)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	tally.Report(&r.res, name, f)
}

// addReader adds one read's counts to the run's report of the reader.
func (r *sweepRun) addReader(name string, counts store.ReaderCounts) {
	r.report(name, func(rep *pacer.ReaderReport) {
		rep.Requests += counts.Requests
		rep.Pages += counts.Pages
		rep.Candidates += counts.Candidates
	})
}

// reportReaders fills every reader's standing into the run's result:
// position, lag, gaps and when the plan reads it next, and the gaps
// still open.
func (r *sweepRun) reportReaders(ctx context.Context, st discovery.Run) error {
	readers, err := r.e.Store.DiscoveryReaders(ctx)
	if err != nil {
		return err
	}
	open, err := r.e.Store.FillGaps(ctx, discovery.ContractReaders(r.e.Catalog.Contracts()))
	if err != nil {
		return err
	}
	now := r.e.now()
	r.mu.Lock()
	r.res.OpenGaps = open
	r.e.Traffic.SetOpenGaps(open, false)
	r.mu.Unlock()
	for _, rd := range readers {
		if probed := r.e.Traffic.ProbedAt(); rd.Name == discovery.ReaderTail && st.ContractsAreTail && !probed.IsZero() {
			rd.LastReadAt = &probed // the feed's probe is the tail reader's read then
		}
		r.report(rd.Name, func(rep *pacer.ReaderReport) {
			rd.Report(rep, st.Every(rd.Name), now)
			if rd.Name == discovery.ReaderTail {
				rep.Source = string(cmp.Or(r.src, discovery.SourceFeed))
			}
		})
	}
	return nil
}
