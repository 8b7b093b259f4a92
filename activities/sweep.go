package activities

import (
	"context"
	"errors"
	"maps"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/budget"
	"github.com/pacer-dev/pacer/internal/competition"
	"github.com/pacer-dev/pacer/internal/discovery"
	"github.com/pacer-dev/pacer/internal/fault"
	"github.com/pacer-dev/pacer/internal/hiro"
	"github.com/pacer-dev/pacer/internal/ingest"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/internal/tally"
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
	// SweepMaxWait is the longest the sweep's Hiro client waits for the
	// shared budget before a request gives up, leaving the rest to the
	// plan.
	SweepMaxWait = 2 * time.Second
)

// sweepProgress is heartbeated as the run goes: a retried attempt starts
// from its counts. What the steps did is in Postgres already (each visit
// saves its agent's cursor, each read its reader's), so the retry just
// asks the plan again.
type sweepProgress struct {
	Result pacer.SweepResult `json:"result"`
}

// Sweep finds the agents' swaps (SPEC §5.2): a loop that asks the plan
// (discovery.Plan) for the next step, carries it out and reports it, until
// the plan says stop. The result's NextDueAt tells the workflow when to
// wake it next; its Reason is the plan's last.
func (a *Activities) Sweep(ctx context.Context, in pacer.SweepInput) (pacer.SweepResult, error) {
	return paced(ctx, a, pacer.TaskSweep, in.Pace, func(ctx context.Context, _ int) (pacer.SweepResult, error) {
		return ledgered(ctx, a, in.Occurrence, func(ctx context.Context) (pacer.SweepResult, error) {
			return a.sweep(ctx, in)
		})
	}, func(r *pacer.SweepResult) (*pacer.Run, int, **pacer.Pace) { return &r.Run, tally.Successes(r), &r.Pace })
}

// sweepRun is one run: its configuration, its result (guarded for the
// concurrent visits and the heartbeat), and what it observed that the
// plan takes as input.
type sweepRun struct {
	e       *SweepEngine
	log     *zap.Logger
	in      pacer.SweepInput
	cfg     ingest.Config
	dc      discovery.Config
	alloc   ingest.Allocation
	started time.Time
	// lane, hiro and verifier are the run's: the sweep's, or the manual
	// lane's for an operator's refresh.
	lane     budget.Lane
	hiro     SweepHiro
	verifier *competition.Verifier

	// visited are the agents visited in this run, lastVisit when the
	// last batch ended; held the readers that stopped short in it; src
	// where the tail reads in it; due and pending the agents and the
	// pending transactions the last state found due, for the step to
	// take. Only the run's loop touches them.
	due       []store.AgentIngest
	pending   []store.PendingTx
	visited   []string
	lastVisit time.Time
	held      map[string]bool
	src       discovery.Source
	// rung closes when a push queued a transaction after the last state
	// was read: a wait ends on it (Activities.Pushed).
	rung <-chan struct{}

	// mu guards the rest, for the concurrent visits and the heartbeat.
	mu  sync.Mutex
	res pacer.SweepResult
	// stop ends the run: the database is gone, or Hiro refuses for good.
	stop error
	// lastErr is the last upstream error of a visit, the run's class if
	// no visit succeeded.
	lastErr error
}

func (a *Activities) sweep(ctx context.Context, in pacer.SweepInput) (res pacer.SweepResult, err error) {
	return a.sweepEngine().Run(ctx, in)
}

// Run is one sweep run on e (the sweep activity's work, SPEC §5.2).
func (e *SweepEngine) Run(ctx context.Context, in pacer.SweepInput) (res pacer.SweepResult, err error) {
	started := e.now()
	defer func() { e.Metrics.ObserveSweep(e.now().Sub(started), res, err) }()
	r := &sweepRun{e: e, log: e.Logger.With(zap.String("task", pacer.TaskSweep)), in: in, cfg: e.Ingest.WithDefaults(),
		dc: e.Discovery.WithDefaults(), started: started, lastVisit: started, lane: budget.LaneSweep, hiro: e.Hiro, verifier: e.Verifier,
		held: map[string]bool{}}
	if in.Occurrence.Manual && e.ManualHiro != nil && e.ManualVerifier != nil {
		r.lane, r.hiro, r.verifier = budget.LaneManual, e.ManualHiro, e.ManualVerifier
	}
	r.res = pacer.SweepResult{Run: pacer.Run{StartedAt: started.UTC()}, RejectionReasons: competition.RejectionReasons(nil),
		Discovery: string(r.dc.Mode)}
	if prog, ok := e.Activity.Resumed(ctx); ok {
		r.res, r.res.RejectionReasons = prog, competition.RejectionReasons(nil)
		maps.Copy(r.res.RejectionReasons, prog.RejectionReasons)
		// The counts go on; how the last attempt ended does not (a worker
		// that stopped heartbeats its progress after the run failed as
		// "sweep cancelled").
		r.res.ErrorClass, r.res.Error, r.res.StoppedBy = "", "", ""
		r.log.Info("sweep.resumed", zap.Int("scanned", r.res.Scanned))
	}
	defer e.Activity.KeepHeartbeating(ctx, r.progress)()
	if r.alloc, err = e.allocation(ctx, r.cfg, r.lane, started); err != nil {
		return r.fail(pacer.ClassTransport, "plan the sweep: "+err.Error())
	}
	st, step, err := discovery.Drive(ctx, r)
	switch {
	case err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return r.fail(pacer.ClassTimeout, "sweep cancelled: "+err.Error())
	case err != nil:
		return r.fail(pacer.ClassTransport, err.Error())
	}
	return r.finish(ctx, st, step)
}

// Planned records the plan's step as the run's last and ends the run when
// a step found it must (discovery.Runner).
func (r *sweepRun) Planned(step discovery.Step) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.res.Reason, r.res.Step = step.Reason, string(step.Kind)
	return r.stop != nil
}

// Execute carries out one step (discovery.Runner). Its error is the
// database's.
func (r *sweepRun) Execute(ctx context.Context, step discovery.Step) error {
	switch step.Kind {
	case discovery.ReadTail:
		return r.readTail(ctx)
	case discovery.ReadContract:
		return r.readContract(ctx, step.Reader)
	case discovery.Visit:
		r.visitBatch(ctx, r.due[:step.Agents])
	case discovery.Verify:
		return r.verifyPending(ctx, r.pending)
	case discovery.Wait:
		// A push ends the wait: the next state finds it due (a
		// cancellation: the loop reports it).
		r.log.Debug("sweep.waiting", zap.Time("until", step.Until), zap.String("reason", step.Reason))
		if rang, _ := r.e.Clock.Wait(ctx, step.Until.Sub(r.e.now()), r.rung); rang {
			r.log.Debug("sweep.pushed", zap.Time("until", step.Until))
		}
	}
	return nil
}

// State is the plan's input at this instant (discovery.Runner): the
// readers, the agents due (hinted ones first) and the pending
// transactions due, kept too for the step to take, the budget and the
// run's limits.
func (r *sweepRun) State(ctx context.Context) (s discovery.Run, err error) {
	r.due, r.pending = nil, nil
	r.rung = r.e.Pushed.C() // before the pending transactions are read: a push after them ends the step's wait
	now := r.e.now()
	s = discovery.Run{Now: now, TailEvery: r.dc.TailEvery, ReconcileEvery: r.dc.ReconcileEvery,
		Linger: r.started, Cap: r.started.Add(sweepRunCap), MaxRequests: r.in.MaxRequests}
	if hb := r.e.Activity.HeartbeatTimeout(ctx); hb > 0 {
		s.MaxWait = hb / 2 // the heartbeats, sent on progress, keep coming
	}
	r.mu.Lock()
	s.Spent = r.res.Requests
	r.mu.Unlock()
	s.Budget, s.LastVisit = r.budget(ctx, now), r.lastVisit
	if r.dc.Mode == discovery.ModeTail {
		s.Linger = r.started.Add(min(r.dc.Linger, sweepRunCap))
		if err = r.readers(ctx, &s); err != nil {
			return s, err
		}
	}
	if !r.held[readerPending] { // looked at again every ReconcileEvery, or once a visit of the sender made them due
		if r.pending, err = r.e.Store.DuePending(ctx, r.dc.ReconcileEvery, hiro.MaxBatch); err != nil {
			return s, err
		}
	}
	if r.due, err = r.e.Store.HintedAgents(ctx, now, discovery.VisitBatch, r.visited); err == nil && len(r.due) == 0 {
		r.due, err = r.e.Store.DueAgents(ctx, r.cfg, now, discovery.VisitBatch, r.visited)
		s.Agents.Due = len(r.due)
	} else {
		s.Agents.Hinted = len(r.due)
	}
	if err == nil {
		err = r.push(ctx, &s)
	}
	s.Pending = len(r.pending)
	for _, p := range r.pending {
		if p.Pushed {
			s.Pushed++
		}
	}
	return s, err
}

// budget is the run's lane's snapshot of the shared budget, on the run's
// clock; what the budget has left goes in the result as it stands.
func (r *sweepRun) budget(ctx context.Context, now time.Time) (b discovery.Budget) {
	b.ReadCost = r.e.Traffic.ReadCost() // what the tail's whole reads cost, in any run
	if r.e.Budget == nil {
		return b
	}
	v, minute, month, err := r.e.Budget.PlanView(ctx, r.lane, now)
	if err != nil {
		r.log.Warn("sweep.budget_unreadable", zap.Error(err))
		return b
	}
	r.mu.Lock()
	tally.Left(&r.res.Run, minute, month)
	r.mu.Unlock()
	v.ReadCost = b.ReadCost
	return v
}

// progress is what a heartbeat carries: a copy, since visits go on.
func (r *sweepRun) progress() any {
	r.mu.Lock()
	defer r.mu.Unlock()
	return sweepProgress{Result: tally.Clone(r.res)}
}

// fail ends the run as a whole with class.
func (r *sweepRun) fail(class pacer.ErrorClass, msg string) (pacer.SweepResult, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.res.DurationMs = r.e.now().Sub(r.started).Milliseconds()
	r.res.ErrorClass, r.res.Error, r.res.StoppedBy = class, msg, pacer.StoppedError
	r.log.Warn("sweep.failed", zap.String("class", string(class)), zap.String("error", msg), zap.Int("scanned", r.res.Scanned))
	return r.res, runError(class, msg, r.res)
}

// finish reports where the due set and the readers stand, why the run
// stopped and when the next is due: the plan's last step says.
func (r *sweepRun) finish(ctx context.Context, st discovery.Run, step discovery.Step) (pacer.SweepResult, error) {
	lapseHolds(ctx, r.e.Store, r.e.Logger, r.e.Metrics)
	publishCompleteThrough(ctx, r.e.Store, r.e.Logger)
	if r.dc.Mode == discovery.ModeTail {
		if err := r.reportReaders(ctx, st); err != nil {
			return r.fail(pacer.ClassTransport, "report the readers: "+err.Error())
		}
	}
	now := r.e.now()
	sum, err := r.e.Store.IngestSummary(ctx, now)
	if err != nil {
		return r.fail(pacer.ClassTransport, "summarise the due set: "+err.Error())
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	res, tot := &r.res, store.Totals(sum)
	res.Tiers, res.AgentsDue, res.LagSeconds, res.NextDueAt = tot.Tiers, tot.Due, tot.MaxOverdue, nil
	if !tot.NextRunAt.IsZero() && (st.Agents.Next.IsZero() || tot.NextRunAt.Before(st.Agents.Next)) {
		st.Agents.Next = tot.NextRunAt
	}
	st.Now = now
	if at := discovery.NextRun(st); !at.IsZero() {
		utc := at.UTC()
		res.NextDueAt = &utc
	}
	res.StoppedBy = step.StoppedBy
	res.DurationMs = now.Sub(r.started).Milliseconds()
	stop := r.stop
	if stop == nil && res.Scanned == 0 && r.lastErr != nil {
		stop = r.lastErr // not one agent or page could be read: the run failed, whatever the class
	}
	if stop != nil {
		res.StoppedBy = pacer.StoppedError
		class := fault.ClassOf(stop)
		res.ErrorClass, res.Error = class, stop.Error()
		if class == pacer.ClassRateLimit {
			// Hiro refused every request: the task waits for the window
			// Hiro named, a day when the month is spent.
			res.RateLimited = true
			monthSpent := res.MonthRemaining != nil && *res.MonthRemaining <= 0
			res.RateLimitBackoffMs = fault.RateLimitBackoff(monthSpent, st.Budget.RoomAt, now).Milliseconds()
		}
		r.log.Warn("sweep.stopped", zap.String("class", string(class)), zap.Error(stop), zap.Int("scanned", res.Scanned))
		return *res, runError(class, res.Error, *res)
	}
	r.log.Info("sweep.summary", zap.Any("result", *res))
	return *res, nil
}

// allocation solves the optimal policy for the budget lane has now, at
// most once per ingest.AllocationTTL for the sweep's lane (a manual run's
// budget is not the scheduled runs', so it neither reads nor keeps theirs).
func (e *SweepEngine) allocation(ctx context.Context, cfg ingest.Config, lane budget.Lane, now time.Time) (ingest.Allocation, error) {
	if cfg.Policy != ingest.PolicyOptimal || e.Budget == nil {
		return ingest.Allocation{}, nil
	}
	solve := func() (l ingest.Lane, err error) {
		if l.Rates, err = e.Store.SwapRates(ctx, now); err != nil {
			return l, err
		}
		st, dbNow, err := e.Budget.Snapshot(ctx)
		l.Rate, l.Taken = st.Rate(e.Budget.Config(), lane, dbNow)*24*60, st.SweepTaken
		return l, err
	}
	if lane != budget.LaneSweep {
		return new(ingest.Allocations).Get(cfg, now, solve)
	}
	return e.Plan.Get(cfg, now, solve)
}
