package bench

import (
	"cmp"
	"context"
	"sort"
	"time"

	"github.com/pacer-dev/pacer/internal/budget"
	"github.com/pacer-dev/pacer/internal/discovery"
	"github.com/pacer-dev/pacer/internal/hiro"
	"github.com/pacer-dev/pacer/internal/ingest"
	pbench "github.com/pacer-dev/pacer/internal/pacing/bench"
	"github.com/pacer-dev/pacer/internal/store"
)

// Budget is a Hiro plan: the limit Hiro enforces a minute, the one pacer is
// configured with, and the month quota (0: none).
type Budget struct {
	Name       string
	Documented int64
	PerMinute  int64
	Month      int64
}

// Strategy is how the sweep discovers: the tail reading the chain for
// every agent (no Policy), or the agents mode's visits under Policy.
type Strategy struct {
	Name   string
	Policy ingest.Policy
	// FeedOnly keeps the tail on the feed whatever discovery.PlanSource
	// says (a what-if: the feed at the month's pace).
	FeedOnly bool
	// Allowlist is the tail's chain's (nil: BenchAllowlist).
	Allowlist *Allowlist
	// Push runs the tail with Hiro's WebSocket live, as the service does
	// by default (PACER_PUSH=ws; push.go); PushDelay is how long after
	// its block a call's push arrives (0: PushDelay).
	Push      bool
	PushDelay time.Duration
}

// Tail is the service's discovery engine reading the chain's tail, on
// the benchmark's allowlist; ServiceTail on the service's own, polling
// alone (the socket down: the fallback); ServicePush the same with Hiro's
// WebSocket live, the service's default configuration.
var (
	Tail        = Strategy{Name: "tail (discovery engine)"}
	ServiceTail = Strategy{Name: "tail, the service's allowlist", Allowlist: ServiceAllowlist}
	ServicePush = Strategy{Name: "tail + push, the service's allowlist", Allowlist: ServiceAllowlist, Push: true}
)

// Readers, as the results split requests.
const (
	ReaderTail       = "tail"
	ReaderReconciler = "reconciler"
	ReaderDetails    = "details"
	ReaderVisits     = "visits"
)

// Timing of the simulation: a Hiro request takes requestTime; the
// workflow never starts a sweep sooner than sweepEvery after the last one
// started (PACER_SWEEP_EVERY); a run lasts at most runCap, reads for
// runLinger (internal/cli: sweepEvery less half a TailEvery) and waits at
// most runMaxWait at once (half the activity's heartbeat timeout); a
// request waits at most maxWait for the budget.
const (
	TailEvery   = discovery.DefaultTailEvery
	requestTime = 100 * time.Millisecond
	sweepEvery  = time.Minute
	runCap      = 4 * time.Minute
	runLinger   = sweepEvery - TailEvery/2
	runMaxWait  = time.Minute
	maxWait     = 2 * time.Second
)

// readerContracts is the allowlisted contracts' lists as one reader of
// the plan: the benchmark reads them a round of pages at a time
// (reconcile), every list's page of a round together.
const readerContracts = discovery.ContractPrefix + "*"

// sim is one strategy in one world on one budget: the sweep's runs, each
// step discovery.Plan's answer to the state the sweep activity builds
// (activities/sweep.go's state), carried out in virtual time. On a chain
// the tail reads it for every agent; without one the agents are visited
// (PACER_DISCOVERY=agents), in the policy's due order.
type sim struct {
	w   *World
	c   *Chain
	b   Budget
	s   Strategy
	cfg ingest.Config
	// bcfg and st are pacer's budget (budget.State, as the sweep takes
	// from it) in front of Hiro (up: the benchmarks' one upstream model).
	bcfg    budget.Config
	st      budget.State
	up      *pbench.Upstream
	refused int64
	// found[agent][tx] is when the swap's row appeared; byTail whether
	// the tail's walk or a push handed it out (first or after the
	// reconciler).
	found    [][]time.Time
	byTail   [][]bool
	requests map[string]int
	// lastVisit is when the run's last visit batch ended (or it began).
	lastVisit time.Time

	// The tail: its filter, position and walk under way.
	filter discovery.Filter
	pos    *discovery.Position
	scan   *discovery.Scan
	// recAt is the contracts' readers' cursor: the ordinal below which
	// they have read every contract's list. recEnd is where the round
	// under way ends (0: none), recPaid how many of its contracts' pages
	// are read, recTo the head the read under way goes to (0: none).
	recAt, recEnd, recPaid, recTo int
	// obs is the sweep's observation of the chain (its traffic, the
	// feed's probe, what the feed's last whole read cost), source where
	// the tail reads (obs.Choose, once a run).
	obs    discovery.Observer
	source discovery.Source
	// tailRead and recRead are when the feed's walk and the contracts'
	// lists last read in full; tailReads counts the tail's whole reads.
	tailRead, recRead time.Time
	tailReads         int
	// listsTime is the time the tail spent on the contracts' lists,
	// decided when the source was last decided.
	listsTime time.Duration
	decided   time.Time
	// gaps counts the ranges the tail gave up on; gapTo is the ordinal
	// below which they lie (open while the contracts' lists have not
	// read past it, recAt).
	gaps, gapTo int

	// Push (push.go): pushNext is the index in the chain's agents'
	// entries of the next push not delivered yet, pending the pushed
	// transactions waiting for the Verify step (pending_txs), oldest
	// first; lastWake is push.Hold's last wake, hinted the scheduler's
	// HintedAt (zero: none), runBegan when the run under way began.
	pushNext         int
	pending          []agentTxRef
	lastWake, hinted time.Time
	runBegan         time.Time

	// The agents and their due set, as the store's query orders it
	// (ingest.Config.Less): future by next_run_at, due by the policy's
	// order, waiting by how long a due agent has waited (its order once
	// critical); dueAt is when the due set was last filled.
	agents               []*agent
	future, due, waiting *agentHeap
	dueAt                time.Time
	alloc                ingest.Allocation
	allocs               ingest.Allocations
	// visited are the agents the run visited: the store's due query
	// passes them over until the run ends (the sweep's r.visited).
	visited []*agent
}

// Simulate runs s in w (on c when s is the tail) on b and measures the
// swaps mined in [from, to).
func Simulate(w *World, c *Chain, b Budget, s Strategy, from, to time.Time) Result {
	x := &sim{w: w, b: b, s: s, cfg: ingest.DefaultConfig(), requests: map[string]int{}, bcfg: budget.Config{PerMinute: b.PerMinute},
		up: pbench.NewUpstream(pbench.Hidden{Phases: []pbench.Phase{{PerMinute: int(b.Documented)}}, PerMonth: int(b.Month)}, int(b.Documented), start)}
	agents := map[string]bool{}
	for i, a := range w.Agents {
		agents[AgentAddress(i)] = true
		x.found = append(x.found, make([]time.Time, len(a.Txs)))
		x.byTail = append(x.byTail, make([]bool, len(a.Txs)))
	}
	if s.Policy != "" {
		x.cfg.Policy = s.Policy
		x.initAgents()
	} else {
		x.c, x.recAt, x.decided = c, c.Visible(w.Start), w.Start
		x.filter = discovery.Filter{Agent: func(a string) bool { return agents[a] }, Allowed: c.A.Allowed}
	}
	for now := w.Start; now.Before(w.End); {
		began := now
		if x.runBegan = began; !x.hinted.After(began) {
			x.hinted = time.Time{} // the start clears the scheduler's hint
		}
		next := x.run(&now) // not before the run ends, nor sweepEvery after it began
		cadence := pbench.Latest(next, began.Add(sweepEvery), now)
		if s.Push {
			cadence = x.hintedStart(began, now, cadence) // or a hint's
		}
		now = cadence
	}
	return x.result(from, to)
}

// run is one sweep run from *now: where the tail reads (or the optimal
// allocation), then the sweep activity's loop (discovery.Drive) over the
// simulation's steps until the plan stops. It returns when the next run
// is due.
func (x *sim) run(now *time.Time) time.Time {
	began := *now
	x.lastVisit = began
	for _, a := range x.visited {
		x.future.push(a)
	}
	x.visited = x.visited[:0]
	if x.c != nil {
		x.decideSource(began)
	} else if x.cfg.Policy == ingest.PolicyOptimal {
		x.alloc, _ = x.allocs.Get(x.cfg, began, func() (ingest.Lane, error) { return x.lane(began) })
	}
	st, step, _ := discovery.Drive(context.Background(), &runner{x: x, now: now, began: began, held: map[string]bool{}})
	if step.Kind != discovery.Stop {
		return *now // the horizon is over
	}
	// The agents it visited count again for the next run's time (the
	// sweep's finish: the due set's summary).
	for _, a := range x.visited {
		if st.Agents.Next.IsZero() || a.NextRunAt.Before(st.Agents.Next) {
			st.Agents.Next = a.NextRunAt
		}
	}
	return cmp.Or(discovery.NextRun(st), now.Add(discovery.NextRunCap))
}

// runner is one run of the simulation as the sweep activity's loop
// drives it (discovery.Runner), on the virtual clock *now: held are the
// readers that stopped short in the run.
type runner struct {
	x     *sim
	now   *time.Time
	began time.Time
	held  map[string]bool
}

func (r *runner) State(context.Context) (discovery.Run, error) {
	return r.x.state(*r.now, r.began, r.held), nil
}

// Planned ends the run with the horizon.
func (r *runner) Planned(discovery.Step) bool { return !r.now.Before(r.x.w.End) }

func (r *runner) Execute(_ context.Context, step discovery.Step) error {
	x, now, held := r.x, r.now, r.held
	switch step.Kind {
	case discovery.Wait:
		until := step.Until
		if x.s.Push {
			until = x.bell(*now, until) // a push ends the wait
		}
		*now = until
	case discovery.ReadTail:
		held[ReaderTail] = !x.readTail(now)
	case discovery.ReadContract:
		progressed, done := x.reconcile(now, x.onLists())
		if held[step.Reader] = !progressed; done {
			x.recRead = *now
			if x.onLists() {
				x.tailReads++
			}
		}
	case discovery.Visit:
		x.visitBatch(now, step.Agents)
	case discovery.Verify:
		x.verify(now, held)
	}
	return nil
}

// state is the plan's input at now, built as the sweep activity builds
// it: the lane's budget; the agents due, or the tail (the feed's walk, or
// its probe while the lists are the tail) and the contracts' lists once
// the tail has begun.
func (x *sim) state(now, began time.Time, held map[string]bool) discovery.Run {
	s := discovery.Run{Now: now, TailEvery: TailEvery, ReconcileEvery: discovery.DefaultReconcileEvery, LastVisit: x.lastVisit,
		Linger: began, Cap: began.Add(runCap), MaxWait: runMaxWait}
	s.Budget = store.PlanBudget(&x.st, x.bcfg, budget.LaneSweep, now) // as store.PlanView gives it to the sweep
	s.Budget.ReadCost = x.obs.ReadCost()
	if x.c == nil {
		x.promote(now)
		s.Agents.Due = x.due.Len() // the critical agents are in it too
		if a := x.future.peek(); a != nil {
			s.Agents.Next = a.NextRunAt
		}
		return s
	}
	s.Linger, s.ContractsAreTail, s.Lists = began.Add(runLinger), x.onLists(), x.c.A.Contracts()
	s.OpenGaps = x.recAt < x.gapTo
	tail := discovery.Reader{Name: ReaderTail, LastRead: x.tailRead, Scanning: x.scan != nil, Held: held[ReaderTail]}
	if s.ContractsAreTail {
		tail = discovery.Reader{Name: ReaderTail, LastRead: x.obs.ProbedAt(), Held: held[ReaderTail]}
	}
	s.Tail = &tail
	if x.pos != nil || s.ContractsAreTail {
		s.Contracts = []discovery.Reader{{Name: readerContracts, LastRead: x.recRead, Scanning: x.recTo != 0,
			Held: held[readerContracts]}}
	}
	if x.s.Push { // the socket live; the pushed transactions due (push.go)
		x.deliver(now)
		s.PushLive = true
		if !held[readerPending] {
			s.Pending = min(len(x.pending), hiro.MaxBatch)
			s.Pushed = s.Pending
		}
	}
	return s
}

// take asks pacer's budget for one request for reader, waiting at most
// maxWait, and sends it: Hiro answers and the budget observes. False when
// the budget would make it wait longer, Hiro refused, or the horizon is
// over (its month's figures stay its own).
func (x *sim) take(now *time.Time, reader string) bool {
	if !now.Before(x.w.End) {
		return false
	}
	for {
		d := x.st.Take(x.bcfg, budget.LaneSweep, 1, *now)
		if d.OK {
			break
		}
		if d.RetryIn > maxWait {
			return false
		}
		*now = now.Add(d.RetryIn)
	}
	x.requests[reader]++
	a := x.up.Take(*now)
	if !a.Allowed {
		x.refused++
	}
	*now = now.Add(requestTime)
	x.st.Observe(x.bcfg, budget.LaneSweep, a.Obs, *now)
	return a.Allowed
}

// onLists reports whether the contracts' lists are where the tail reads.
func (x *sim) onLists() bool { return x.source == discovery.SourceContracts }

// decideSource is the run's choice of where the tail reads, as the
// sweep's source: the observer's choice at the lane's rate.
func (x *sim) decideSource(now time.Time) {
	if x.onLists() {
		x.listsTime += now.Sub(x.decided)
	}
	x.decided = now
	if !x.s.FeedOnly {
		_, x.source, _ = x.obs.Choose(false, x.c.A.Contracts(), TailEvery, x.st.Rate(x.bcfg, budget.LaneSweep, now))
	}
}

// readTail is the plan's ReadTail step: the feed's walk, or its probe
// while the lists are the tail. It reports whether the read is whole.
func (x *sim) readTail(now *time.Time) bool {
	if x.onLists() {
		x.probe(now)
		return true
	}
	spent := x.requests[ReaderTail] + x.requests[ReaderDetails]
	done := x.walk(now)
	if done {
		x.tailRead = *now
		x.tailReads++
		x.obs.ReadTail(x.requests[ReaderTail] + x.requests[ReaderDetails] - spent)
	}
	return done
}

// walk reads the feed down to the tail's position, verifying the
// candidates of each page before committing it; a budget stop leaves the
// walk to go on at the next run. It reports whether the walk is done (the
// sweep observes a read's cost then).
func (x *sim) walk(now *time.Time) bool {
	if x.scan == nil {
		x.scan = discovery.NewScan(discovery.ScanConfig{From: x.pos}, discovery.State{})
	}
	for !x.scan.Done() && x.take(now, ReaderTail) {
		entries, total := x.c.Feed(*now, x.scan.NextOffsetAt(*now, x.obs.FeedPerMinute()), hiro.MaxLimit)
		x.obs.ObserveFeed(total, entries, x.c.A.OnContract, *now)
		var seen []agentTxRef
		for _, e := range x.scan.AddFeed(entries, total).Fresh {
			if ref, ok := x.c.AgentTx(e); ok && x.filter.Candidate(e) {
				seen = append(seen, ref)
			}
		}
		if !x.fetch(now, seen, true) {
			break // not settled: the page is read again
		}
		for _, s := range seen {
			x.byTail[s.agent][s.tx] = true
		}
		x.scan.Commit()
	}
	if !x.scan.Done() {
		return false
	}
	if g := x.scan.Gap(); g != nil {
		x.gaps++
		x.gapTo = max(x.gapTo, x.c.Ordinal(g.To.Position)+1)
	}
	x.pos, x.scan = x.scan.Position(), nil
	return true
}

// probe reads the feed's newest page when the plan says (every
// ReconcileEvery) while the tail reads the contracts' lists: what keeps
// the feed's volume observed, so that the tail goes back to it when it fits.
func (x *sim) probe(now *time.Time) {
	if x.take(now, ReaderTail) {
		x.obs.Probed(*now)
		entries, total := x.c.Feed(*now, 0, hiro.MaxLimit)
		x.obs.ObserveFeed(total, entries, x.c.A.OnContract, *now)
	}
}

// fetch reads the details of the swaps among refs not found yet, in
// batches, and records their rows; false when the budget stopped it
// before every one was read. observe says whether the sweep's traffic
// counts them (a reader's, not the Verify step's).
func (x *sim) fetch(now *time.Time, refs []agentTxRef, observe bool) bool {
	var swaps []agentTxRef
	for _, r := range refs {
		if x.unfound(r) {
			swaps = append(swaps, r)
		}
	}
	for i := 0; i < len(swaps); i += hiro.MaxBatch {
		if !x.take(now, ReaderDetails) {
			return false
		}
		if observe {
			x.obs.ObserveDetails(1, *now)
		}
		for _, s := range swaps[i:min(i+hiro.MaxBatch, len(swaps))] {
			x.found[s.agent][s.tx] = *now
		}
	}
	return true
}

// unfound reports whether r is a swap without its row.
func (x *sim) unfound(r agentTxRef) bool {
	return x.w.Agents[r.agent].Txs[r.tx].Swap && x.found[r.agent][r.tx].IsZero()
}

// reconcile is one step of the contracts' readers' read: one contract's
// page of a round of pages (a page of 50 of every contract, at least one
// each, to learn there is nothing new), or, with the round's pages read,
// the details of any swap not found yet among them; as the service's
// plan reads one contract's list a step, so the tail reads between them.
// It moves its cursor a round of pages at a time, oldest first: the
// engine walks each list newest first and resumes where a budget stop
// left it, which costs the same requests. primary is the tail reading the
// lists at its cadence (its pages are the tail's, what it finds is not
// missed); otherwise it is the reconciler. It reports whether the step
// went (false: the budget stopped it, the read is held) and whether the
// read reached the head; a read goes on to the head it began with (as a
// scan goes on down to its position), the head's news left to the next.
func (x *sim) reconcile(now *time.Time, primary bool) (progressed, done bool) {
	if x.recTo == 0 {
		x.recTo = x.c.Visible(*now)
	}
	head, k, reader := x.recTo, x.c.A.Contracts(), ReaderReconciler
	if primary {
		reader = ReaderTail
	}
	if x.recEnd == 0 {
		end := x.recAt + sort.Search(head-x.recAt, func(n int) bool {
			return x.c.AllowedIn(x.recAt, x.recAt+n+1) >= k*hiro.MaxLimit
		}) + 1
		x.recEnd, x.recPaid = min(end, head), 0
	}
	// Each contract's reader keeps its own place: a budget stop part
	// way through a round loses none of the pages paid.
	if x.recPaid < k {
		if !x.take(now, reader) {
			return false, false
		}
		x.recPaid++
		return true, false
	}
	refs := x.c.AgentsIn(x.recAt, x.recEnd)
	if !x.fetch(now, refs, true) {
		return false, false
	}
	for _, ref := range refs {
		x.byTail[ref.agent][ref.tx] = x.byTail[ref.agent][ref.tx] || primary
	}
	x.recAt, x.recEnd = x.recEnd, 0
	if x.recAt < head {
		return true, false
	}
	x.recTo = 0
	return true, true
}
