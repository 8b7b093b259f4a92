package activities

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/budget"
	"github.com/pacer-dev/pacer/internal/competition"
	"github.com/pacer-dev/pacer/internal/discovery"
	"github.com/pacer-dev/pacer/internal/hiro"
	"github.com/pacer-dev/pacer/internal/ingest"
	"github.com/pacer-dev/pacer/internal/store"
)

// Sweep run limits (SPEC §5.2).
const (
	// sweepConcurrency is how many agents one run visits at once: enough
	// to spend a keyed minute (450 requests) in seconds, few enough that
	// the due order still holds.
	sweepConcurrency = 4
	// sweepRunCap ends a run that could go on (a budget with room, a due
	// set that keeps growing) so that it reports and the workflow records
	// it; what is left is due at the next run.
	sweepRunCap = 4 * time.Minute
	// reorgDepth is how many blocks below its cursor a visit reads again:
	// a fork that lost can have held the cursor's block, and the winning
	// fork's transactions at those heights must not be skipped.
	reorgDepth = 6
	// pendingPerVisit bounds the pending transactions a visit looks at again.
	pendingPerVisit = 20
	// SweepMaxWait is the longest the sweep waits for the shared budget
	// before its run ends, leaving the rest to the next run.
	SweepMaxWait = 2 * time.Second
)

// sweepProgress is heartbeated as the run goes: a retried attempt starts
// from its counts. What the visits did is in Postgres already (each visit
// saves its agent's cursor), so the retry just visits who is due.
type sweepProgress struct {
	Result pacer.SweepResult `json:"result"`
}

// Sweep visits the agents that are due, in the policy's order, until none
// is due or the run's share of the Hiro budget is spent (SPEC §5.2). Each
// visit reads the agent's transactions newest first back to its cursor,
// verifies the swaps among them and saves the cursor only once every newer
// transaction is processed, so a retried attempt after a crash loses and
// duplicates nothing. The result's NextDueAt tells the workflow when to
// wake it next.
func (a *Activities) Sweep(ctx context.Context, in pacer.SweepInput) (pacer.SweepResult, error) {
	return paced(ctx, a, pacer.TaskSweep, in.Pace, func(ctx context.Context, batch int) (pacer.SweepResult, error) {
		if in.Pace != nil {
			in.PageSize = batch
		}
		return ledgered(ctx, a, in.Occurrence, func(ctx context.Context) (pacer.SweepResult, error) {
			return a.sweep(ctx, in)
		})
	}, func(r *pacer.SweepResult) (*pacer.Run, int, **pacer.Pace) { return &r.Run, r.Successes(), &r.Pace })
}

// sweepRun is one run's shared state: its result, guarded for the
// concurrent visits and the heartbeat.
type sweepRun struct {
	a     *Activities
	log   *zap.Logger
	cfg   ingest.Config
	alloc ingest.Allocation
	// lane, hiro and verifier are the run's: the sweep's, or the manual
	// lane's for an operator's refresh.
	lane     budget.Lane
	hiro     *hiro.Client
	verifier *competition.Verifier

	mu  sync.Mutex
	res pacer.SweepResult
	// budgetAt is set when a visit found the run's budget share spent:
	// when the budget has room again.
	budgetAt  *time.Time
	budgetWhy string
	// capped is set when the run reached its MaxRequests or its time cap:
	// pacer.StoppedMaxRequests or pacer.StoppedDeadline.
	capped string
	// stop ends the run: the database is gone, or Hiro refuses for good.
	stop error
	// lastErr is the last upstream error of a visit, the run's class if
	// no visit succeeded.
	lastErr error
	// readersNext is when the earliest discovery reader reads next.
	readersNext *time.Time
	// tailNext is when the tail reads next, in tail mode: visits give way
	// to it then (visitDue, which sets yielded), so that history visits
	// never hold it back.
	tailNext *time.Time
	yielded  bool
	// waiting is set when due visits wait for the next minute window,
	// leaving this one's rest to the tail (leaveToTail).
	waiting bool
}

func (a *Activities) sweep(ctx context.Context, in pacer.SweepInput) (res pacer.SweepResult, err error) {
	started := time.Now()
	defer func() { a.Metrics.ObserveSweep(time.Since(started), res, err) }()
	run := &sweepRun{a: a, log: a.Logger.With(zap.String("task", pacer.TaskSweep)), cfg: a.Ingest.WithDefaults(),
		lane: budget.LaneSweep, hiro: a.Hiro, verifier: a.Verifier}
	if in.Occurrence.Manual && a.ManualHiro != nil && a.ManualVerifier != nil {
		run.lane, run.hiro, run.verifier = budget.LaneManual, a.ManualHiro, a.ManualVerifier
	}
	run.res = pacer.SweepResult{Run: pacer.Run{StartedAt: started.UTC()}, RejectionReasons: competition.RejectionReasons(nil)}
	var prog sweepProgress
	if activity.HasHeartbeatDetails(ctx) && activity.GetHeartbeatDetails(ctx, &prog) == nil {
		run.res = prog.Result
		run.res.RejectionReasons = competition.RejectionReasons(toReasons(run.res.RejectionReasons))
		run.log.Info("sweep.resumed", zap.Int("scanned", run.res.Scanned))
	}
	defer keepHeartbeating(ctx, run.progress)()

	if run.alloc, err = a.allocation(ctx, run.cfg, run.lane, started); err != nil {
		return run.fail(pacer.ClassTransport, "plan the sweep: "+err.Error())
	}

	if a.Discovery.WithDefaults().Mode == discovery.ModeTail {
		return run.discover(ctx, in, started)
	}
	if err := run.visitDue(ctx, in, started); err != nil {
		return run.fail(pacer.ClassTransport, err.Error())
	}
	return run.finish(ctx)
}

// visitDue visits the agents that are due, hinted ones first, then in the
// policy's order, until none is due, the run's share of the budget is
// spent or the run must end: visits are paced by the budget, not by a
// number a run (in.PageSize no longer bounds them). Its error is the
// database's.
func (r *sweepRun) visitDue(ctx context.Context, in pacer.SweepInput, started time.Time) error {
	a := r.a
	r.mu.Lock()
	before := r.res
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.res.Scanned == before.Scanned && r.res.HiroErrors == before.HiroErrors {
			return
		}
		if r.res.Readers == nil {
			r.res.Readers = map[string]pacer.ReaderReport{}
		}
		rep := r.res.Readers[readerAgents]
		rep.Requests += r.res.Requests - before.Requests
		rep.Pages += r.res.Scanned - before.Scanned
		rep.Candidates += r.res.Found - before.Found
		r.res.Readers[readerAgents] = rep
	}()
	var visited []string
	for {
		if ctx.Err() != nil || r.done(in, started) {
			return nil
		}
		if len(visited) > 0 && r.yieldToTail() {
			return nil
		}
		now := time.Now()
		due, err := a.Store.HintedAgents(ctx, now, sweepConcurrency*2, visited)
		if err != nil {
			return fmt.Errorf("read the hinted agents: %w", err)
		}
		if len(due) == 0 {
			if due, err = a.Store.DueAgents(ctx, r.cfg, now, sweepConcurrency*2, visited); err != nil {
				return fmt.Errorf("read the due agents: %w", err)
			}
			if len(due) > 0 && r.leaveToTail(ctx, r.batchCost(before, len(visited), len(due))) {
				return nil
			}
		}
		if len(due) == 0 {
			return nil
		}
		due = due[:r.affordable(ctx, len(due))]
		for _, agent := range due {
			visited = append(visited, agent.Address)
		}
		vs := r.firstPages(ctx, in, started, due)
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(sweepConcurrency)
		for _, v := range vs {
			g.Go(func() error {
				// A visit whose first page is read goes on: what that page
				// cost and settled is counted by it.
				if v.first == nil && r.done(in, started) {
					return nil
				}
				r.visit(gctx, v)
				return nil
			})
		}
		_ = g.Wait()
	}
}

// firstPages reads the first listing page of each agent of a batch,
// concurrently, then verifies the allowlisted calls of all those pages
// together, 20 to a detail request, rather than a request for each agent
// with a call (a first start's history visits cost about a request an
// agent less). Each visit then walks its page with those outcomes. An agent
// whose page is not read (the run must stop) is left to its own visit.
func (r *sweepRun) firstPages(ctx context.Context, in pacer.SweepInput, started time.Time, due []store.AgentIngest) []*visit {
	vs := make([]*visit, len(due))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(sweepConcurrency)
	for i, agent := range due {
		vs[i] = r.newVisit(agent)
		g.Go(func() error {
			if r.done(in, started) {
				return nil
			}
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
	listed := vs[:0:0]
	for _, v := range vs {
		if v.first == nil || v.first.err != nil {
			continue
		}
		listed = append(listed, v)
		for _, id := range v.prefetchIDs(v.first.page.Entries, v.agent.Cursor, start) {
			if _, dup := owner[id]; !dup {
				owner[id] = v
				ids = append(ids, id)
			}
		}
	}
	if len(ids) < 2 {
		return vs // one is as cheap alone: the visit verifies it as it walks
	}
	for _, v := range listed {
		v.pre = map[string]competition.Outcome{} // the first page is verified: no prefetch of it
	}
	for i, o := range r.verifier.VerifyMany(ctx, ids, competition.SourceSweep) {
		owner[ids[i]].pre[ids[i]] = o
	}
	return vs
}

// affordable is how many of n due agents the next batch takes: no more
// first pages than the lane can still list in this window with a request
// left to verify their calls, and at least one. A batch whose first pages
// spent the window would leave their calls unverified, the visits cut
// short at their first call, and the next run would list the same pages
// again: with a lane share below a batch's size, nothing would progress.
// All n when the budget cannot be read: their requests find out.
func (r *sweepRun) affordable(ctx context.Context, n int) int {
	room, _, ok := r.laneRoom(ctx)
	if !ok {
		return n
	}
	return int(max(1, min(int64(n), room-1)))
}

// batchCost is what the next batch of n visits is expected to cost: what
// the visited ones cost on average since before, at least a request each.
func (r *sweepRun) batchCost(before pacer.SweepResult, visited, n int) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	per := 1.0
	if visited > 0 {
		per = max(per, float64(r.res.Requests-before.Requests)/float64(visited))
	}
	return int64(math.Ceil(per * float64(n)))
}

// done reports whether the run must stop visiting.
func (r *sweepRun) done(in pacer.SweepInput, started time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.stop != nil || r.budgetAt != nil:
	case in.MaxRequests > 0 && r.res.Requests >= in.MaxRequests:
		r.capped = pacer.StoppedMaxRequests
	case time.Since(started) >= sweepRunCap:
		r.capped = pacer.StoppedDeadline
	default:
		return false
	}
	return true
}

// stoppedBy is why the run stopped, for its result. The caller holds r.mu.
func (r *sweepRun) stoppedBy() string {
	switch {
	case r.stop != nil:
		return pacer.StoppedError
	case r.budgetAt != nil:
		return r.budgetWhy
	}
	return cmp.Or(r.capped, pacer.StoppedDone)
}

// progress is what a heartbeat carries: a copy, since visits go on.
func (r *sweepRun) progress() any {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := sweepProgress{Result: r.res}
	p.Result.RejectionReasons = maps.Clone(r.res.RejectionReasons)
	p.Result.Tiers = maps.Clone(r.res.Tiers)
	return p
}

// fail ends the run as a whole with class.
func (r *sweepRun) fail(class pacer.ErrorClass, msg string) (pacer.SweepResult, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.res.DurationMs = time.Since(r.res.StartedAt).Milliseconds()
	r.res.ErrorClass, r.res.Error, r.res.StoppedBy = class, msg, pacer.StoppedError
	r.log.Warn("sweep.failed", zap.String("class", string(class)), zap.String("error", msg), zap.Int("scanned", r.res.Scanned))
	return r.res, runError(class, msg, r.res)
}

// finish reports where the due set stands and when the next run is due.
func (r *sweepRun) finish(ctx context.Context) (pacer.SweepResult, error) {
	rate, perWindow := r.noteBudget(ctx)
	now := time.Now()
	sum, err := r.a.Store.IngestSummary(ctx, now)
	if err != nil {
		return r.fail(pacer.ClassTransport, "summarise the due set: "+err.Error())
	}
	r.mu.Lock()
	res := &r.res
	res.Tiers = map[string]int{}
	res.AgentsDue, res.LagSeconds, res.NextDueAt = 0, 0, nil
	var next *time.Time
	for _, t := range ingest.Tiers {
		s := sum[t]
		res.Tiers[string(t)] = s.Agents
		res.AgentsDue += s.Due
		res.LagSeconds = max(res.LagSeconds, s.MaxOverdue)
		if s.Agents > 0 && (next == nil || s.NextRunAt.Before(*next)) {
			at := s.NextRunAt
			next = &at
		}
	}
	if r.readersNext != nil && (next == nil || r.readersNext.Before(*next)) {
		next = r.readersNext
	}
	var retryIn time.Duration
	if r.budgetAt != nil {
		retryIn = r.budgetAt.Sub(now)
	}
	// Agents still due after a budget stop wait for the budget, not for
	// their time.
	if at := ingest.NextDue(now, next, r.budgetAt != nil && res.AgentsDue > 0, retryIn, rate, perWindow); at != nil {
		utc := at.UTC()
		res.NextDueAt = &utc
	}
	res.StoppedBy = r.stoppedBy()
	stop, lastErr := r.stop, r.lastErr
	defer r.mu.Unlock()
	res.DurationMs = time.Since(res.StartedAt).Milliseconds()
	if stop == nil && res.Scanned == 0 && lastErr != nil {
		// Not one agent could be listed: the run failed, whatever the class.
		stop = lastErr
	}
	if stop != nil {
		res.StoppedBy = pacer.StoppedError
		class := pacer.ClassOf(stop)
		res.ErrorClass, res.Error = class, stop.Error()
		if class == pacer.ClassRateLimit {
			// Hiro refused every listing: the task waits for the window
			// Hiro named, a day when the month is spent.
			res.RateLimited = true
			backoff := hiroBackoff(*res)
			if r.budgetAt != nil && backoff < pacer.MonthQuotaBackoff {
				backoff = min(max(time.Until(*r.budgetAt), time.Second), pacer.MinuteQuotaBackoff)
			}
			res.RateLimitBackoffMs = backoff.Milliseconds()
		}
		r.log.Warn("sweep.stopped", zap.String("class", string(class)), zap.Error(stop), zap.Int("scanned", res.Scanned))
		return *res, runError(class, res.Error, *res)
	}
	r.log.Info("sweep.summary", zap.Int("scanned", res.Scanned), zap.Int("found", res.Found),
		zap.Int("inserted", res.Inserted), zap.Int("alreadyKnown", res.AlreadyKnown), zap.Int("pending", res.Pending),
		zap.Int("rejected", res.Rejected), zap.Any("rejectionReasons", res.RejectionReasons),
		zap.Int("hiroErrors", res.HiroErrors), zap.Int("requests", res.Requests), zap.String("stoppedBy", res.StoppedBy), zap.Int("agentsDue", res.AgentsDue),
		zap.Float64("lagSeconds", res.LagSeconds), zap.Timep("nextDueAt", res.NextDueAt), zap.Int64("durationMs", res.DurationMs))
	return *res, nil
}

// noteBudget reports what the shared budget has left, and returns the
// sweep lane's rate (requests a minute; 0 when unknown) and what a window
// holds. The sweep lane's even after a manual run: the next run, which the
// schedule starts, is on the sweep lane.
func (r *sweepRun) noteBudget(ctx context.Context) (rate, perWindow float64) {
	if r.a.Budget == nil {
		return 0, 0
	}
	st, now, err := r.a.Budget.Snapshot(ctx)
	if err != nil {
		r.log.Warn("sweep.budget_unreadable", zap.Error(err))
		return 0, 0
	}
	rate = st.Rate(r.a.Budget.Config(), budget.LaneSweep, now)
	minute, month := st.Remaining(r.a.Budget.Config(), now)
	r.mu.Lock()
	defer r.mu.Unlock()
	m := int(min(minute, math.MaxInt32))
	r.res.MinuteRemaining = &m
	if month != nil {
		n := int(min(*month, math.MaxInt32))
		r.res.MonthRemaining = &n
	}
	return rate, float64(st.MinuteCapacity(r.a.Budget.Config(), now))
}

// allocationCache keeps the optimal policy's last solution for
// ingest.AllocationTTL.
type allocationCache struct {
	mu    sync.Mutex
	at    time.Time
	cfg   ingest.Config
	alloc ingest.Allocation
}

// allocation solves the optimal policy for the budget lane has now, at
// most once per ingest.AllocationTTL for the sweep's lane (a manual run's
// budget is not the scheduled runs', so it neither reads nor keeps theirs).
func (a *Activities) allocation(ctx context.Context, cfg ingest.Config, lane budget.Lane, now time.Time) (ingest.Allocation, error) {
	if cfg.Policy != ingest.PolicyOptimal || a.Budget == nil {
		return ingest.Allocation{}, nil
	}
	if lane != budget.LaneSweep {
		return a.solve(ctx, cfg, lane, now)
	}
	c := &a.plan
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.at.IsZero() && c.cfg == cfg && now.Sub(c.at) < ingest.AllocationTTL {
		return c.alloc, nil
	}
	alloc, err := a.solve(ctx, cfg, lane, now)
	if err != nil {
		return alloc, err
	}
	c.at, c.cfg, c.alloc = now, cfg, alloc
	return alloc, nil
}

func (a *Activities) solve(ctx context.Context, cfg ingest.Config, lane budget.Lane, now time.Time) (ingest.Allocation, error) {
	rates, err := a.Store.SwapRates(ctx, now)
	if err != nil {
		return ingest.Allocation{}, err
	}
	st, dbNow, err := a.Budget.Snapshot(ctx)
	if err != nil {
		return ingest.Allocation{}, err
	}
	perDay := st.Rate(a.Budget.Config(), lane, dbNow) * 24 * 60
	swaps := 0.0
	for _, r := range rates {
		swaps += r
	}
	return cfg.Allocate(rates, ingest.VisitBudget(perDay, swaps)), nil
}

// visit is one agent's visit and its bookkeeping.
type visit struct {
	run   *sweepRun
	agent store.AgentIngest
	log   *zap.Logger

	// res counts this visit; it is added to the run's at the end.
	res pacer.SweepResult
	// swaps are the burn times of the allowlisted calls seen for the first
	// time (the swap rate's input).
	swaps []time.Time
	// seen are the txids the listing's pass handled, so pending
	// transactions it settled are not fetched again.
	seen map[string]bool
	// listed is true once one page was read.
	listed bool
	// budgetAt, failed and stop end the visit: the budget share is spent
	// (resume at the next run), upstream trouble (back off), or the run
	// must stop.
	budgetAt  *time.Time
	budgetWhy string
	failed    error
	stop      error
	// refused is Hiro's own refusal (a 429 past the client's retries).
	refused error
	// pre are the outcomes of the page's calls verified together, by
	// txid, before the page is walked (prefetch, or firstPages for the
	// first page: then non-nil before the walk begins).
	pre map[string]competition.Outcome
	// first is the first page, read with the batch's (firstPages).
	first *firstPage
}

// firstPage is a visit's first listing page as firstPages read it.
type firstPage struct {
	page hiro.TxPage
	err  error
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
// the page's allowlisted calls that the walk will verify one by one: those
// above where it stops (the cursor, less the reorg margin, or the
// competition's start) that the listing alone does not decide. The walk
// then takes their outcomes in its order, settling each as before.
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

// prefetchIDs are the page's calls that prefetch verifies together.
func (v *visit) prefetchIDs(entries []hiro.Entry, cursor *hiro.Position, start int64) []string {
	var ids []string
	for _, e := range entries {
		if e.Mined() && cursor != nil && e.Position().Compare(*cursor) <= 0 && e.BlockHeight < cursor.BlockHeight-reorgDepth {
			break
		}
		if t := competition.SwapTime(e.BlockTime, e.BurnBlockTime); e.Mined() && t > 0 && t < start {
			break
		}
		if competition.Found(e, v.run.a.Catalog) && v.run.verifier.NeedsDetail(e) {
			ids = append(ids, e.TxID)
		}
	}
	return ids
}

// newVisit is a visit of agent, not begun.
func (r *sweepRun) newVisit(agent store.AgentIngest) *visit {
	return &visit{run: r, agent: agent, seen: map[string]bool{},
		log: r.log.With(zap.String("agent", agent.Address)),
		res: pacer.SweepResult{RejectionReasons: competition.RejectionReasons(nil)}}
}

// visit reads one agent's new transactions and saves how far it got.
func (r *sweepRun) visit(ctx context.Context, v *visit) {
	started := time.Now()
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
	r.save(ctx, v, row, complete, started)
}

func (v *visit) ok() bool { return v.budgetAt == nil && v.failed == nil && v.stop == nil }

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
			page, err, v.first = f.page, f.err, nil // read from row.VisitFrom by firstPages
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
			again := false
			if e.Mined() && row.Cursor != nil && e.Position().Compare(*row.Cursor) <= 0 {
				if e.BlockHeight < row.Cursor.BlockHeight-reorgDepth {
					reached = true
					break
				}
				again = true // within reach of a reorg: looked at quietly
			}
			if t := competition.SwapTime(e.BlockTime, e.BurnBlockTime); e.Mined() && t > 0 && t < start {
				// Older transactions are older still: outside the competition.
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
	a := v.run.a
	v.seen[e.TxID] = true
	var o competition.Outcome
	switch listed, decided := v.run.verifier.RejectListed(ctx, e); {
	case decided:
		o = listed
	case e.TxStatus == hiro.StatusPending:
		// The listing says it all; a detail request would say the same.
		o = competition.Outcome{TxID: e.TxID, Status: competition.StatusPending}
		if err := a.Store.RecordPending(ctx, e.TxID, e.SenderAddress); err != nil {
			o.LedgerErr = err
		}
	default:
		if pre, ok := v.pre[e.TxID]; ok {
			o = pre
			delete(v.pre, e.TxID)
		} else {
			o = v.run.verifier.Verify(ctx, e.TxID, competition.SourceSweep)
		}
	}
	v.res.Requests += o.Requests
	if o.LedgerErr != nil {
		v.log.Warn("sweep.ledger_write_failed", zap.String("txid", o.TxID), zap.Error(o.LedgerErr))
	}
	if !v.settle(ctx, e, o) {
		// Not looked at yet: the visit goes on from this page next time.
		return false
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

// settle decides what an outcome means for the visit: true to go on. The
// budget, a refusal, the database or a key Hiro rejects end the visit
// before the transaction counts; any other failure (Hiro's 5xx, a body it
// cannot read, a transaction it does not know) keeps the transaction in
// pending_txs to be looked at again at the next visit, without holding the
// cursor back.
func (v *visit) settle(ctx context.Context, e hiro.Entry, o competition.Outcome) bool {
	if o.Status != competition.StatusRejected || o.Reason.Final() {
		return true
	}
	switch {
	case o.Reason == competition.ReasonDBUnavailable:
		v.countRejection(o)
		v.stop = &pacer.Error{Class: pacer.ClassTransport, Op: "sweep " + v.agent.Address, Err: o.Err}
		return false
	case o.Reason == competition.ReasonTxFetchFailed:
		switch pacer.ClassOf(o.Err) {
		case pacer.ClassRateLimit, pacer.ClassPermanent:
			v.upstreamError(o.Err, "verify "+o.TxID)
			return false
		case pacer.ClassTransport:
			v.countRejection(o)
			v.stop = o.Err
			return false
		}
	}
	if err := v.run.a.Store.RecordPending(ctx, o.TxID, e.SenderAddress); err != nil {
		v.stop = &pacer.Error{Class: pacer.ClassTransport, Op: "sweep " + v.agent.Address, Err: err}
		return false
	}
	return true
}

// countRejection counts an outcome that ends the run, so its result says
// why.
func (v *visit) countRejection(o competition.Outcome) {
	v.res.Found++
	v.res.Rejected++
	v.res.RejectionReasons[string(o.Reason)]++
}

// upstreamError ends the visit on a Hiro failure. The run's budget share
// spent ends it quietly: the agent stays due and goes on at the next run.
// A refusal by Hiro ends it the same way, counted as a refusal.
func (v *visit) upstreamError(err error, what string) {
	var spent *hiro.BudgetSpentError
	isSpent := errors.As(err, &spent)
	class := pacer.ClassOf(err)
	refused := class == pacer.ClassRateLimit && (!isSpent || errors.Is(err, store.ErrRefused))
	if isSpent && !refused {
		at := time.Now().Add(spent.RetryAfter)
		v.budgetAt, v.budgetWhy = &at, cmp.Or(spent.Why, budget.WhyMinute)
		return
	}
	v.res.HiroErrors++
	countUpstream(&v.res.Run, class)
	var se *hiro.StatusError
	if errors.As(err, &se) {
		v.log.Warn("sweep.hiro_non_ok", zap.String("what", what), zap.Int("status", se.StatusCode), zap.Error(err))
	} else {
		v.log.Warn("sweep.hiro_failed", zap.String("what", what), zap.Error(err))
	}
	switch {
	case refused && se != nil && se.Quota.MonthExhausted():
		v.failed, v.stop = err, err
	case refused:
		wait := time.Minute
		if d, ok := hiro.RetryAfter(err); ok {
			wait = d
		}
		at := time.Now().Add(wait)
		v.budgetAt, v.budgetWhy, v.refused = &at, budget.WhyBlocked, err
	case class == pacer.ClassPermanent, class == pacer.ClassTransport:
		v.failed, v.stop = err, err
	default:
		v.failed = err
	}
}

// count adds one outcome to the visit's counts.
func (v *visit) count(o competition.Outcome) {
	v.res.Found++
	countUpstream(&v.res.Run, o.Class())
	switch o.Status {
	case competition.StatusInserted:
		v.res.Inserted++
	case competition.StatusAlreadyKnown:
		v.res.AlreadyKnown++
	case competition.StatusPending:
		v.res.Pending++
	case competition.StatusRejected:
		v.res.Rejected++
		v.res.RejectionReasons[string(o.Reason)]++
		v.log.Info("sweep.rejected", zap.String("txid", o.TxID), zap.String("reason", string(o.Reason)),
			zap.String("detail", o.Detail), zap.Bool("known", o.Known), zap.Error(o.Err))
	}
}

// recheckPending looks again at the agent's pending transactions that the
// listing did not settle (a listing without the mempool, or one gone).
func (v *visit) recheckPending(ctx context.Context) {
	a := v.run.a
	txids, err := a.Store.PendingTxs(ctx, v.agent.Address, pendingPerVisit)
	if err != nil {
		v.stop = &pacer.Error{Class: pacer.ClassTransport, Op: "sweep " + v.agent.Address, Err: err}
		return
	}
	for _, txid := range txids {
		if v.seen[txid] {
			continue
		}
		o := v.run.verifier.Verify(ctx, txid, competition.SourceSweep)
		v.res.Requests += o.Requests
		if o.Status == competition.StatusInserted || o.Status == competition.StatusRejected && o.Reason.Final() {
			v.count(o)
		}
		if !v.settle(ctx, hiro.Entry{TxID: txid, SenderAddress: v.agent.Address}, o) {
			return
		}
	}
}

// save records the visit in agent_ingest and adds its counts to the run.
// A visit the budget stopped before its first request changed nothing and
// is not recorded.
func (r *sweepRun) save(ctx context.Context, v *visit, row store.AgentIngest, complete bool, started time.Time) {
	if v.res.Requests == 0 && !v.listed && v.failed == nil && v.stop == nil && v.budgetAt != nil {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.noteBudgetStop(v)
		return
	}
	now := time.Now()
	pol := r.cfg.AfterVisit(row.Agent, ingest.Visit{At: now, Complete: complete, Failed: v.failed != nil && v.budgetAt == nil, Swaps: v.swaps}, r.alloc)
	row.Agent = pol
	row.Status, row.LastError = store.IngestOK, ""
	if v.failed != nil {
		row.Status, row.LastError = store.IngestError, v.failed.Error()
	} else if v.listed {
		at := now
		row.LastSuccessAt = &at
	}
	saved, err := r.a.Store.SaveVisit(ctx, row, v.res.Found, started)
	if err != nil && v.stop == nil {
		v.stop = &pacer.Error{Class: pacer.ClassTransport, Op: "save visit " + row.Address, Err: err}
	}
	if err == nil && !saved {
		v.log.Info("sweep.visit_superseded")
	}
	r.a.Metrics.ObserveVisit(string(pol.Tier), v.res.Found)

	if v.listed {
		r.mu.Lock()
		r.res.Scanned++
		r.mu.Unlock()
	}
	r.absorb(v)
}

// absorb adds a visit's counts and its ending to the run's.
func (r *sweepRun) absorb(v *visit) {
	r.mu.Lock()
	defer r.mu.Unlock()
	add(&r.res, v.res)
	r.noteBudgetStop(v)
	if v.failed != nil {
		r.lastErr = v.failed
	} else if v.refused != nil {
		r.lastErr = v.refused
	}
	if v.stop != nil && r.stop == nil {
		r.stop = v.stop
	}
}

// noteBudgetStop keeps the earliest budget stop of the run's visits, and
// its window. The caller holds r.mu.
func (r *sweepRun) noteBudgetStop(v *visit) {
	if v.budgetAt != nil && (r.budgetAt == nil || v.budgetAt.Before(*r.budgetAt)) {
		r.budgetAt, r.budgetWhy = v.budgetAt, v.budgetWhy
	}
}

// add adds a visit's counts to the run's.
func add(to *pacer.SweepResult, v pacer.SweepResult) {
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
	if class.IsUpstreamFailure() {
		run.UpstreamFailed++
	}
	if class == pacer.ClassRateLimit {
		run.Rejected++
	}
}

// hiroBackoff defers the sweep after a rate limit: a day when the month is
// spent, five minutes otherwise.
func hiroBackoff(res pacer.SweepResult) time.Duration {
	if res.MonthRemaining != nil && *res.MonthRemaining <= 0 {
		return pacer.MonthQuotaBackoff
	}
	return pacer.MinuteQuotaBackoff
}

func toReasons(m map[string]int) map[competition.Reason]int {
	out := make(map[competition.Reason]int, len(m))
	for k, v := range m {
		out[competition.Reason(k)] = v
	}
	return out
}
