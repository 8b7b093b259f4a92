package activities

import (
	"cmp"
	"context"
	"math"
	"slices"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.uber.org/zap"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/competition"
	"github.com/pacer-dev/pacer/internal/discovery"
	"github.com/pacer-dev/pacer/internal/hiro"
	"github.com/pacer-dev/pacer/internal/ingest"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/internal/wait"
)

// DiscoveryConfig is how the sweep finds swaps (SPEC §5.0: PACER_DISCOVERY,
// PACER_TAIL_EVERY, PACER_RECONCILE_EVERY, PACER_TAIL_MAX_PAGES).
type DiscoveryConfig struct {
	Mode           discovery.Mode
	TailEvery      time.Duration
	ReconcileEvery time.Duration
	MaxPages       int
	// Linger is how long one sweep run goes on reading the tail, every
	// TailEvery (stretched by the budget), before it reports: the workflow
	// starts a run at most every PACER_SWEEP_EVERY, and the tail reads
	// more often than that. A run always reads once; 0 is once.
	Linger time.Duration
}

// WithDefaults fills the zero fields. A zero Mode is per-agent visits,
// which need nothing of Hiro but the lists of addresses (tests against a
// server without the feed); the service's own default, PACER_DISCOVERY's,
// is tail.
func (c DiscoveryConfig) WithDefaults() DiscoveryConfig {
	if c.Mode == "" {
		c.Mode = discovery.ModeAgents
	}
	if c.TailEvery <= 0 {
		c.TailEvery = discovery.DefaultTailEvery
	}
	if c.ReconcileEvery <= 0 {
		c.ReconcileEvery = discovery.DefaultReconcileEvery
	}
	if c.MaxPages <= 0 {
		c.MaxPages = discovery.DefaultMaxPages
	}
	return c
}

// readerAgents names the agents' visits in a sweep result's readers.
const readerAgents = "agents"

// reconcileMaxPages bounds one contract reader's scan: the reconciler is
// the last reader, so it goes on across runs (its scan is kept) rather
// than give a range up; the bound only keeps a list that never ends from
// running for ever.
const reconcileMaxPages = 1 << 20

// tailCost is the tail's discovery.Pace, shared by the sweep's runs: what
// one tail read costs (pages and details, smoothed, so that its cadence
// can stretch to fit the budget), the chain's traffic, and where the tail
// reads.
type tailCost struct {
	mu      sync.Mutex
	p       discovery.Pace
	probeAt time.Time
}

func (t *tailCost) observe(requests int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.p.ObserveRead(requests)
}

// costPerRead is what one tail read costs, smoothed (at least 1).
func (t *tailCost) costPerRead() float64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.p.CostPerRead()
}

func (t *tailCost) interval(every time.Duration, ratePerMinute float64) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.p.Interval(every, ratePerMinute)
}

// observeFeed and observeDetails record the traffic at at (Activities'
// clock: the chain's volume is entries over the time they came in).
func (t *tailCost) observeFeed(page hiro.FeedPage, onContract func(string) bool, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.p.Traffic.ObserveFeed(page.Total, page.Entries, onContract, at)
}

func (t *tailCost) observeDetails(requests int, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.p.Traffic.ObserveDetails(requests, at)
}

// plan is where the tail reads next (discovery.PlanSource), and the one
// it read from before.
func (t *tailCost) plan(contracts int, every time.Duration, ratePerMinute float64) (now, before discovery.Source, tr discovery.Traffic) {
	t.mu.Lock()
	defer t.mu.Unlock()
	before = cmp.Or(t.p.Source, discovery.SourceFeed)
	return t.p.Plan(contracts, every, ratePerMinute), before, t.p.Traffic
}

// keep makes src where the tail reads, whatever the traffic says.
func (t *tailCost) keep(src discovery.Source) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.p.Source = src
}

// source is where the tail reads now.
func (t *tailCost) source() discovery.Source {
	t.mu.Lock()
	defer t.mu.Unlock()
	return cmp.Or(t.p.Source, discovery.SourceFeed)
}

// probeDue reports whether the feed's page that keeps its volume observed
// is due (every ReconcileEvery while the tail reads the contracts' lists),
// and takes it.
func (t *tailCost) probeDue(every time.Duration, now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.probeAt.IsZero() && now.Sub(t.probeAt) < every {
		return false
	}
	t.probeAt = now
	return true
}

// discover is a sweep run in tail mode (SPEC §5.2): the tail, then the
// reconciler when it is due, then the agents an event made due (hinted
// ones first); again whenever the tail is due, until Linger has passed.
func (r *sweepRun) discover(ctx context.Context, in pacer.SweepInput, started time.Time) (pacer.SweepResult, error) {
	a := r.a
	dc := a.Discovery.WithDefaults()
	until := started.Add(min(dc.Linger, sweepRunCap))
	for {
		if err := ctx.Err(); err != nil {
			return r.fail(pacer.ClassTimeout, "sweep cancelled: "+err.Error())
		}
		r.mu.Lock()
		r.readersNext, r.tailNext = nil, nil
		r.mu.Unlock()
		agents, err := a.Store.AgentAddresses(ctx)
		if err != nil {
			return r.fail(pacer.ClassTransport, "read the agents: "+err.Error())
		}
		filter := discovery.Filter{Agent: func(s string) bool { return agents[s] }, Allowed: a.Catalog.Allowed}
		src := r.planSource(ctx, dc)
		tail, err := r.readTail(ctx, dc, filter, src)
		if err != nil {
			return r.fail(pacer.ClassTransport, "read the tail: "+err.Error())
		}
		if src == discovery.SourceFeed && r.hiro.Sunset(hiro.EndpointFeed) {
			// The feed just gave its sunset answer: the contracts' lists
			// are the tail from now on, before any visit.
			src = r.planSource(ctx, dc)
		}
		if err := r.reconcile(ctx, dc, filter, tail, src); err != nil {
			return r.fail(pacer.ClassTransport, "reconcile: "+err.Error())
		}
		if err := r.visitDue(ctx, in, started); err != nil {
			return r.fail(pacer.ClassTransport, err.Error())
		}
		if r.takeYielded() {
			continue // the visits gave way to the tail: read it, then they go on
		}
		// Visits waiting for the next window keep the run reading the
		// tail past its linger (up to the run's cap, which visitDue
		// enforces), rather than leave it for the workflow's next start.
		next := r.readersDue()
		if r.stopped() || next == nil || next.After(until) && !r.takeWaiting() || !r.mayWait(ctx, time.Until(*next)) {
			break
		}
		if err := wait.Sleep(ctx, time.Until(*next)); err != nil {
			return r.fail(pacer.ClassTimeout, "sweep cancelled: "+err.Error())
		}
	}
	if err := r.reportReaders(ctx, dc); err != nil {
		return r.fail(pacer.ClassTransport, "report the readers: "+err.Error())
	}
	return r.finish(ctx)
}

// mayWait reports whether the run may wait d for its next read: the
// heartbeats (sent only when the run's progress changed, each read
// changes it) must keep coming within the heartbeat timeout.
func (r *sweepRun) mayWait(ctx context.Context, d time.Duration) bool {
	hb := activity.GetInfo(ctx).HeartbeatTimeout
	return hb <= 0 || d <= hb/2
}

// stopped reports whether the run must stop reading: its budget share is
// spent, or it must end.
func (r *sweepRun) stopped() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stop != nil || r.budgetAt != nil
}

// yieldToTail reports whether agent visits should give way to the tail,
// due again by what its last read in this run said, and notes that they
// did: visitDue stops between batches (after one at least) to let it
// read, so that a first start's history visits, which take minutes,
// never hold the tail back.
func (r *sweepRun) yieldToTail() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.yielded = r.tailNext != nil && !time.Now().Before(*r.tailNext)
	return r.yielded
}

// leaveToTail reports whether the agents' visits (hinted ones aside)
// must leave what remains of the minute window to the tail: its reads
// until the window ends, at what a read costs (SPEC §5.4: the tail is
// served first), would not fit beside the requests of the visits' next batch.
// The run then goes on reading the tail while they wait (discover).
// Without it a first start's history visits spend each
// window within seconds and the tail reads once a minute. Only in tail
// mode, once the tail has read in this run.
func (r *sweepRun) leaveToTail(ctx context.Context, next int64) bool {
	r.mu.Lock()
	tailNext := r.tailNext
	r.mu.Unlock()
	if tailNext == nil {
		return false
	}
	// What the run's lane may still take, against the tail's reads until
	// the window ends and the visits' next batch (next requests).
	minute, left, ok := r.laneRoom(ctx)
	if !ok {
		return false // the visits find out: their requests take from it
	}
	if left <= 0 {
		return false // the window rolls: it is whole again
	}
	every := r.tailInterval(ctx, r.a.Discovery.WithDefaults())
	reads := 1 + int64(left/every)
	wait := float64(minute) < math.Ceil(r.a.tail.costPerRead())*float64(reads)+float64(next)
	r.mu.Lock()
	r.waiting = r.waiting || wait
	r.mu.Unlock()
	return wait
}

// laneRoom is what the run's lane may still take of the budget's window
// (the window's rest but the fast lane's reserve) and how long the window
// has left; ok is false when the budget cannot be read.
func (r *sweepRun) laneRoom(ctx context.Context) (room int64, left time.Duration, ok bool) {
	if r.a.Budget == nil {
		return 0, 0, false
	}
	st, now, err := r.a.Budget.Snapshot(ctx)
	if err != nil {
		return 0, 0, false
	}
	return st.LaneRemaining(r.a.Budget.Config(), r.lane, now), st.WindowEnd.Sub(now), true
}

// takeWaiting reports whether visits waited for the tail's share, and
// clears it.
func (r *sweepRun) takeWaiting() bool { return r.take(&r.waiting) }

// takeYielded reports whether the visits gave way to the tail, and clears it.
func (r *sweepRun) takeYielded() bool { return r.take(&r.yielded) }

// take reads one of the run's flags and clears it, under the run's lock.
func (r *sweepRun) take(flag *bool) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	v := *flag
	*flag = false
	return v
}

// noteTailDue records when the tail reads next, a reader's time too.
func (r *sweepRun) noteTailDue(at time.Time) {
	r.mu.Lock()
	if r.tailNext == nil || at.Before(*r.tailNext) {
		r.tailNext = &at // the earliest, when the contracts' lists are the tail
	}
	r.mu.Unlock()
	r.noteReaderDue(at)
}

// readersDue is when the earliest reader reads next (nil: none known).
func (r *sweepRun) readersDue() *time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.readersNext
}

func (r *sweepRun) noteReaderDue(at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.readersNext == nil || at.Before(*r.readersNext) {
		r.readersNext = &at
	}
}

// laneRate is the sweep lane's rate, requests a minute (0: unknown).
func (r *sweepRun) laneRate(ctx context.Context) float64 {
	if r.a.Budget == nil {
		return 0
	}
	st, now, err := r.a.Budget.Snapshot(ctx)
	if err != nil {
		return 0
	}
	return st.Rate(r.a.Budget.Config(), r.lane, now)
}

// tailInterval is how long after a read the tail reads again: every
// TailEvery, stretched when the budget binds (SPEC §5.4).
func (r *sweepRun) tailInterval(ctx context.Context, dc DiscoveryConfig) time.Duration {
	return r.a.tail.interval(dc.TailEvery, r.laneRate(ctx))
}

// planSource is where the tail reads this time: the feed, or the
// allowlisted contracts' own lists when the sweep's rate cannot pay the
// feed at the chain's volume (discovery.PlanSource).
func (r *sweepRun) planSource(ctx context.Context, dc DiscoveryConfig) discovery.Source {
	if r.hiro.Sunset(hiro.EndpointFeed) {
		// Hiro has switched the feed off: its replacement, for good.
		r.a.tail.keep(discovery.SourceContracts)
		return discovery.SourceContracts
	}
	src, before, tr := r.a.tail.plan(len(allowlistedContracts(r.a)), dc.TailEvery, r.laneRate(ctx))
	if src != before {
		r.log.Info("discovery.source", zap.String("from", string(before)), zap.String("to", string(src)),
			zap.Float64("feedPerMinute", tr.FeedPerMinute()), zap.Float64("contractsPerMinute", tr.ContractsPerMinute()),
			zap.Float64("detailsPerMinute", tr.DetailsPerMinute()))
	}
	return src
}

// onContract reports whether a contract is on the allowlist.
func (r *sweepRun) onContract() func(string) bool {
	set := map[string]bool{}
	for _, c := range allowlistedContracts(r.a) {
		set[c] = true
	}
	return func(id string) bool { return set[id] }
}

// readTail reads the chain's confirmed contract calls down to the tail's
// position when it is due, and returns the tail's row. An error is the
// database's; Hiro's failures end the read and are the run's to report.
func (r *sweepRun) readTail(ctx context.Context, dc DiscoveryConfig, f discovery.Filter, src discovery.Source) (store.Reader, error) {
	a := r.a
	rd, _, err := a.Store.DiscoveryReader(ctx, discovery.ReaderTail)
	if err != nil {
		return rd, err
	}
	onContract := r.onContract()
	if src == discovery.SourceContracts {
		// The contracts' readers are the tail now (reconcile); a page
		// of the feed keeps its volume observed. The tail's own walk
		// waits where it is: back on the feed, it goes on from there
		// (a range too long is a gap, which the contracts' readers
		// have read).
		if !r.stopped() && !r.hiro.Sunset(hiro.EndpointFeed) && a.tail.probeDue(dc.ReconcileEvery, a.now()) {
			v := r.readerVisit(rd.Name)
			page, err := r.hiro.Feed(ctx, hiro.TxTypeContractCall, 0)
			v.res.Requests += page.Requests
			counts := store.ReaderCounts{Requests: page.Requests}
			if err != nil {
				v.upstreamError(err, "read "+rd.Name)
			} else {
				counts.Pages = 1
				a.tail.observeFeed(page, onContract, a.now())
			}
			r.addReader(rd.Name, counts, rd)
			r.absorb(v)
		}
		return rd, nil
	}
	interval := r.tailInterval(ctx, dc)
	if rd.LastReadAt != nil && !rd.Scan.Started() && time.Since(*rd.LastReadAt) < interval {
		r.noteTailDue(rd.LastReadAt.Add(interval))
		return rd, nil
	}
	if r.stopped() {
		return rd, nil
	}
	scan := discovery.NewScan(discovery.ScanConfig{From: rd.Position, MaxPages: dc.MaxPages}, rd.Scan)
	pager := func(ctx context.Context, s *discovery.Scan) ([]hiro.Entry, discovery.Page, int, error) {
		page, err := r.hiro.Feed(ctx, hiro.TxTypeContractCall, s.NextOffset())
		if err != nil {
			return nil, discovery.Page{}, page.Requests, err
		}
		a.tail.observeFeed(page, onContract, a.now())
		return page.Entries, s.AddFeed(page.Entries, page.Total), page.Requests, nil
	}
	rd, requests, err := r.read(ctx, rd, scan, pager, f)
	if err != nil {
		return rd, err
	}
	if !scan.Done() {
		return rd, nil // the budget or Hiro stopped it: it goes on from its scan
	}
	a.tail.observe(requests)
	r.noteTailDue(time.Now().Add(r.tailInterval(ctx, dc)))
	return rd, nil
}

// reconcile reads each allowlisted contract's own list from its own
// position, when due (SPEC §5.0.2): every ReconcileEvery, or at the
// tail's cadence when they are where the tail reads (src). A contract's
// reader begins where the tail began, so that together they leave
// nothing out.
func (r *sweepRun) reconcile(ctx context.Context, dc DiscoveryConfig, f discovery.Filter, tail store.Reader, src discovery.Source) error {
	if tail.Start == nil && src != discovery.SourceContracts {
		return nil // the tail has not begun: nothing to reconcile yet
	}
	a := r.a
	every, requests, read, done := dc.ReconcileEvery, 0, 0, 0
	due := r.noteReaderDue
	if src == discovery.SourceContracts {
		// They are the tail: the agents' visits give way to them as
		// to the feed's reads (yieldToTail, leaveToTail).
		every, due = r.tailInterval(ctx, dc), r.noteTailDue
		defer func() {
			if read > 0 && read == done {
				a.tail.observe(requests) // every list due was read to its position
			}
		}()
	}
	for _, contract := range allowlistedContracts(a) {
		if r.stopped() {
			return nil
		}
		rd, found, err := a.Store.DiscoveryReader(ctx, discovery.ContractReader(contract))
		if err != nil {
			return err
		}
		if !found && tail.Start != nil {
			start := *tail.Start
			rd.Position, rd.Start = &start, &start
		} // else the feed never served: the list's first read finds its head
		if rd.LastReadAt != nil && !rd.Scan.Started() && time.Since(*rd.LastReadAt) < every {
			due(rd.LastReadAt.Add(every))
			continue
		}
		read++
		scan := discovery.NewScan(discovery.ScanConfig{From: rd.Position, MaxPages: reconcileMaxPages, Tokens: true}, rd.Scan)
		pager := func(ctx context.Context, s *discovery.Scan) ([]hiro.Entry, discovery.Page, int, error) {
			// The contract's own list: v3 principals, cursor paged (v1's
			// offsets where the server has no v3).
			page, err := r.hiro.ListTransactions(ctx, contract, hiro.PageToken(s.NextToken()))
			r.setSource(discovery.ContractReader(contract), page.Endpoint)
			if err != nil {
				return nil, discovery.Page{}, page.Requests, err
			}
			return page.Entries, s.AddList(page.Entries, string(page.Next)), page.Requests, nil
		}
		_, n, err := r.read(ctx, rd, scan, pager, f)
		requests += n
		if err != nil {
			return err
		}
		if scan.Done() {
			done++
			due(time.Now().Add(every))
		}
	}
	return nil
}

// allowlistedContracts are the contracts of the allowlist, sorted.
func allowlistedContracts(a *Activities) []string {
	var out []string
	for _, p := range a.Catalog.Pairs() {
		if len(out) == 0 || out[len(out)-1] != p.ContractID {
			out = append(out, p.ContractID)
		}
	}
	return out
}

// pager reads the scan's next page and adds it to the scan: the entries
// as read, what the scan made of them, and the requests it took.
type pager func(ctx context.Context, s *discovery.Scan) ([]hiro.Entry, discovery.Page, int, error)

// read walks one reader's list down to its position: each page's
// candidates verified and settled before the scan moves on, the scan's
// progress saved after every page, so a worker killed at any point loses
// nothing and doubles nothing. It returns the reader's row as saved and
// the requests the read took. An error is the database's.
func (r *sweepRun) read(ctx context.Context, rd store.Reader, scan *discovery.Scan, next pager, f discovery.Filter) (store.Reader, int, error) {
	v := r.readerVisit(rd.Name)
	if !rd.Scan.Started() || rd.ScanBegan == nil {
		now := time.Now()
		rd.ScanBegan = &now
	}
	var (
		counts store.ReaderCounts
		total  int
		head   = rd.Position
	)
	save := func() error {
		counts.Requests = v.res.Requests - total
		total = v.res.Requests
		r.addReader(rd.Name, counts, rd)
		err := r.a.Store.SaveDiscoveryReader(ctx, rd, counts)
		counts = store.ReaderCounts{}
		return err
	}
	for !scan.Done() && !r.stopped() && ctx.Err() == nil {
		entries, page, requests, err := next(ctx, scan)
		v.res.Requests += requests
		if err != nil {
			v.upstreamError(err, "read "+rd.Name)
			break
		}
		counts.Pages++
		for _, e := range entries {
			if e.Mined() && (head == nil || discovery.PositionOf(e).Compare(*head) > 0) {
				p := discovery.PositionOf(e)
				head = &p
			}
		}
		var cands []hiro.Entry
		for _, e := range page.Fresh {
			if f.Candidate(e) {
				cands = append(cands, e)
			}
		}
		counts.Candidates += len(cands)
		if !v.settleAll(ctx, cands) {
			break // not settled: the page is read again next time
		}
		scan.Commit()
		rd.Scan = scan.State()
		if scan.Done() {
			break
		}
		if err := save(); err != nil {
			r.absorb(v)
			return rd, v.res.Requests, err
		}
	}
	if scan.Done() {
		rd.Position = scan.Position()
		if rd.Start == nil {
			rd.Start = rd.Position
		}
		rd.Scan = discovery.State{}
		rd.CoveredAt, rd.ScanBegan = rd.ScanBegan, nil
		now := time.Now()
		rd.LastReadAt = &now
		if g := scan.Gap(); g != nil {
			if err := r.a.Store.RecordGap(ctx, rd.Name, *g); err != nil {
				r.absorb(v)
				return rd, v.res.Requests, err
			}
			rd.Gaps++
			r.log.Warn("discovery.gap", zap.String("reader", rd.Name), zap.Stringer("to", g.To),
				zap.Int("maxPages", r.a.Discovery.WithDefaults().MaxPages),
				zap.String("filledBy", "the reconciler"))
		}
	}
	rd.HeadLagSeconds = discovery.Lag(rd.Position, head)
	err := save()
	r.absorb(v)
	return rd, v.res.Requests, err
}

// readerVisit is a visit on behalf of a reader: it counts and settles the
// reader's candidates the way an agent's visit does its own.
func (r *sweepRun) readerVisit(name string) *visit {
	return &visit{run: r, agent: store.AgentIngest{Agent: ingest.Agent{Address: name}}, seen: map[string]bool{},
		log: r.log.With(zap.String("reader", name)),
		res: pacer.SweepResult{RejectionReasons: competition.RejectionReasons(nil)}}
}

// settleAll verifies a page's candidates, those the listing decides alone
// without a request and the rest in batches (one fetch each, SPEC §5.0),
// and settles each: a row, a rejection, or kept in pending_txs for retry
// (its agent then becomes due, so a visit looks again). false when one
// could not be settled (the budget, the database): the page is read again.
func (v *visit) settleAll(ctx context.Context, cands []hiro.Entry) bool {
	a := v.run.a
	var rest []hiro.Entry
	for _, e := range cands {
		o, decided := v.run.verifier.RejectListed(ctx, e)
		if !decided {
			rest = append(rest, e)
			continue
		}
		if !v.settle(ctx, e, o) {
			return false
		}
		v.count(o)
	}
	for chunk := range slices.Chunk(rest, hiro.MaxBatch) {
		ids := make([]string, len(chunk))
		for i, e := range chunk {
			ids[i] = e.TxID
		}
		outs := v.run.verifier.VerifyMany(ctx, ids, competition.SourceSweep)
		details := 0
		for _, o := range outs {
			details += o.Requests
		}
		a.tail.observeDetails(details, a.now())
		for i, o := range outs {
			v.res.Requests += o.Requests
			if o.LedgerErr != nil {
				v.log.Warn("sweep.ledger_write_failed", zap.String("txid", o.TxID), zap.Error(o.LedgerErr))
			}
			if !v.settle(ctx, chunk[i], o) {
				return false
			}
			v.count(o)
			if o.Status == competition.StatusRejected && !o.Reason.Final() {
				if _, err := a.Store.HintAgent(ctx, chunk[i].SenderAddress); err != nil {
					v.log.Warn("discovery.hint_failed", zap.String("txid", o.TxID), zap.Error(err))
				}
			}
		}
	}
	return true
}

// setSource records which endpoint a reader read ("" leaves it).
func (r *sweepRun) setSource(name, endpoint string) {
	if endpoint == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.res.Readers == nil {
		r.res.Readers = map[string]pacer.ReaderReport{}
	}
	rep := r.res.Readers[name]
	rep.Source = endpoint
	r.res.Readers[name] = rep
}

// addReader adds one read's counts to the run's report of the reader.
func (r *sweepRun) addReader(name string, counts store.ReaderCounts, rd store.Reader) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.res.Readers == nil {
		r.res.Readers = map[string]pacer.ReaderReport{}
	}
	rep := r.res.Readers[name]
	rep.Requests += counts.Requests
	rep.Pages += counts.Pages
	rep.Candidates += counts.Candidates
	r.res.Readers[name] = rep
}

// reportReaders fills every reader's standing into the run's result:
// position, lag, gaps and when it reads next, and the gaps still open.
func (r *sweepRun) reportReaders(ctx context.Context, dc DiscoveryConfig) error {
	readers, err := r.a.Store.DiscoveryReaders(ctx)
	if err != nil {
		return err
	}
	var contracts []string
	for _, c := range allowlistedContracts(r.a) {
		contracts = append(contracts, discovery.ContractReader(c))
	}
	open, err := r.a.Store.FillGaps(ctx, contracts)
	if err != nil {
		return err
	}
	interval := r.tailInterval(ctx, dc)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.res.Discovery = string(dc.Mode)
	r.res.OpenGaps = open
	if r.res.Readers == nil {
		r.res.Readers = map[string]pacer.ReaderReport{}
	}
	for _, rd := range readers {
		rep := r.res.Readers[rd.Name]
		if rd.Position != nil {
			rep.Position = rd.Position.String()
		}
		rep.LagSeconds, rep.Gaps = rd.HeadLagSeconds, int(rd.Gaps)
		if rd.Name == discovery.ReaderTail {
			rep.Source = string(r.a.tail.source())
		}
		if rd.LastReadAt != nil {
			every := dc.ReconcileEvery
			if rd.Name == discovery.ReaderTail {
				every = interval
			}
			at := rd.LastReadAt.Add(every).UTC()
			if rd.Scan.Started() {
				at = time.Now().UTC()
			}
			rep.NextDueAt = &at
		}
		r.res.Readers[rd.Name] = rep
	}
	return nil
}
