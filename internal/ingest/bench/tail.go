package bench

import (
	"cmp"
	"sort"
	"time"

	"github.com/pacer-dev/pacer/internal/budget"
	"github.com/pacer-dev/pacer/internal/discovery"
	"github.com/pacer-dev/pacer/internal/hiro"
)

// The tail strategy (SPEC §5.0, issue 18 item 7): the chain read once for
// every agent. The benchmark keeps the chain (Chain), Hiro's limits
// (upstream), pacer's budget (budget.State) and time; what to read next,
// which entries are new and when to read again are the discovery engine's
// (internal/discovery), reached through Engine so that the figures are
// those of the code the sweep runs.

// Mark is a reader's position: the entry it last read fully.
type Mark struct {
	Height, Index int64
	TxID          string
}

// Scanner is one walk of the feed from its head down to a reader's
// position, as the discovery engine's Scan does it.
type Scanner interface {
	// NextOffset is the feed offset of the next page to read.
	NextOffset() int
	// AddFeed takes the page read at NextOffset and the feed's total then;
	// it returns the entries new to the walk and newer than its position
	// (to filter and verify), and whether the walk reached the position
	// or the feed's end.
	AddFeed(entries []hiro.Entry, total int) (fresh []hiro.Entry, reached bool)
	// Commit says every candidate of the page last added is settled.
	Commit()
	// Done reports whether the committed walk is over.
	Done() bool
	// Position is the reader's position once the walk is done.
	Position() *Mark
	// Gap reports whether the walk gave up before its position (too many
	// pages), leaving the rest to the reconciler.
	Gap() bool
}

// Engine is the discovery engine as the benchmark drives it.
type Engine struct {
	Name string
	// NewScan begins a walk down to from (nil: the reader's first, which
	// only finds the head).
	NewScan func(from *Mark) Scanner
	// Candidate reports whether an entry deserves verification: an
	// allowlisted call (BenchAllowed) by a registered agent (agent says
	// who is one).
	Candidate func(e hiro.Entry, agent func(address string) bool) bool
	// FeedOnly keeps the tail on the feed whatever discovery.PlanSource
	// says (a what-if: the feed at the month's pace).
	FeedOnly bool
}

// Readers, as the results split requests.
const (
	ReaderTail       = "tail"
	ReaderReconciler = "reconciler"
	ReaderDetails    = "details"
)

// Tail timing (SPEC §2 defaults) and the sweep's runs as the service
// has them by default: the workflow starts one every sweepEvery, or
// later when the last said its next is due later; a run reads for runLinger (internal/cli: sweepEvery less half
// a TailEvery) and waits at most runMaxWait at once (half the
// activity's heartbeat timeout).
const (
	TailEvery      = discovery.DefaultTailEvery
	ReconcileEvery = discovery.DefaultReconcileEvery
	runLinger      = sweepEvery - TailEvery/2
	runMaxWait     = time.Minute
)

// readerContracts is the allowlisted contracts' lists as one reader of
// the plan: the benchmark reads them a round of pages at a time
// (reconcile), every list's page of a round together.
const readerContracts = discovery.ContractPrefix + "*"

// reconcileContracts is how many allowlisted contracts have their own
// list, each read from the reconciler's cursor.
func reconcileContracts() int {
	seen := map[string]bool{}
	for _, p := range benchPairs {
		seen[p.contract] = true
	}
	return len(seen)
}

// onContract reports whether a contract is allowlisted (has a pair).
func onContract(id string) bool {
	for _, p := range benchPairs {
		if p.contract == id {
			return true
		}
	}
	return false
}

// tailSim is the tail strategy in one chain on one budget: the sweep's
// runs, each step discovery.Plan's answer to the state the sweep
// activity builds (activities/sweep.go's state), carried out in virtual
// time.
type tailSim struct {
	c   *Chain
	b   Budget
	eng Engine
	hiroSide
	// found[agent][tx] is when the swap's row appeared; byTail whether
	// the tail's walk handed it out (first or after the reconciler).
	found    [][]time.Time
	byTail   [][]bool
	agents   map[string]bool
	requests map[string]int
	pos      *Mark
	scan     Scanner
	// recAt is the contracts' readers' cursor: the ordinal below which
	// they have read every contract's list.
	recAt int
	// recEnd is where the round under way ends (0: none), recPaid how
	// many of its contracts' pages are read, recTo the head the read
	// under way goes to (0: none).
	recEnd, recPaid, recTo int
	// traffic and source are the sweep's observation of the chain and
	// where the tail reads (discovery.PlanSource, once a run).
	traffic discovery.Traffic
	source  discovery.Source
	// tailRead, recRead and probeAt are when the feed's walk, the
	// contracts' lists and the feed's probe last read in full; readCost
	// what the feed's last whole read cost (kept across runs, as the sweep).
	tailRead, recRead, probeAt time.Time
	readCost                   float64
	// listsTime is the time the tail spent on the contracts' lists,
	// decided when the source was last decided.
	listsTime time.Duration
	decided   time.Time
	gaps      int
	reads     int
	// batch is how many transactions one tx/multiple request asks for
	// (hiro.MaxBatch, as the service does, unless a what-if says).
	batch int
}

// SimulateTail runs the tail strategy of eng over c on b, and measures
// the swaps mined in [from, to).
func SimulateTail(c *Chain, b Budget, eng Engine, from, to time.Time) ChainResult {
	return simulateTail(c, b, eng, from, to, hiro.MaxBatch)
}

// simulateTail is SimulateTail with batch transactions a tx/multiple
// request: the sweep's runs, each beginning at the workflow's cadence or
// when the last one said the next is due, whichever is later.
func simulateTail(c *Chain, b Budget, eng Engine, from, to time.Time, batch int) ChainResult {
	x := &tailSim{c: c, b: b, eng: eng, hiroSide: newHiroSide(b),
		requests: map[string]int{}, agents: map[string]bool{}, batch: batch}
	for i, a := range c.W.Agents {
		x.agents[AgentAddress(i)] = true
		x.found = append(x.found, make([]time.Time, len(a.Txs)))
		x.byTail = append(x.byTail, make([]bool, len(a.Txs)))
	}
	now := c.W.Start
	x.decided, x.recAt = now, c.Visible(now)
	for now.Before(c.W.End) {
		began := now
		now = later(x.run(&now), began.Add(sweepEvery), now)
	}
	return x.result(from, to)
}

// run is one sweep run from *now: where the tail reads, then the plan's
// steps until it stops. It returns when the next run is due.
func (x *tailSim) run(now *time.Time) time.Time {
	began, held := *now, map[string]bool{}
	x.decideSource(began)
	for now.Before(x.c.W.End) {
		step := discovery.Plan(x.state(*now, began, held))
		switch step.Kind {
		case discovery.Stop:
			if step.Until.IsZero() {
				return now.Add(discovery.NextRunCap)
			}
			return step.Until
		case discovery.Wait:
			*now = step.Until
		case discovery.ReadTail:
			held[ReaderTail] = !x.readTail(now)
		case discovery.ReadContract:
			if held[step.Reader] = !x.reconcile(now, x.onLists()); !held[step.Reader] {
				x.recRead = *now
			}
		default:
			panic("bench: the tail's plan has no agents to visit: " + step.Kind)
		}
	}
	return *now
}

// onLists reports whether the contracts' lists are where the tail reads.
func (x *tailSim) onLists() bool { return x.source == discovery.SourceContracts }

// decideSource is the run's choice of where the tail reads, as the
// sweep's source: discovery.PlanSource at the lane's rate.
func (x *tailSim) decideSource(now time.Time) {
	if x.onLists() {
		x.listsTime += now.Sub(x.decided)
	}
	x.decided = now
	if x.eng.FeedOnly {
		return
	}
	x.source = discovery.PlanSource(cmp.Or(x.source, discovery.SourceFeed), x.traffic, reconcileContracts(),
		TailEvery, x.st.Rate(x.bcfg, budget.LaneSweep, now))
}

// state is the plan's input at now, built as the sweep activity builds
// it: the tail (the feed's walk, or its probe while the lists are the
// tail), the contracts' lists once the tail has begun, the lane's budget.
func (x *tailSim) state(now, began time.Time, held map[string]bool) discovery.Run {
	s := discovery.Run{Now: now, TailEvery: TailEvery, ReconcileEvery: ReconcileEvery, LastVisit: began,
		Linger: began.Add(runLinger), Cap: began.Add(runCap), MaxWait: runMaxWait, ContractsAreTail: x.onLists()}
	n, at, why := x.st.Room(x.bcfg, budget.LaneSweep, now)
	s.Budget = discovery.Budget{Known: true, Room: n, RoomAt: at, Why: why, WindowEnd: x.st.WindowEnd,
		Rate: x.st.Rate(x.bcfg, budget.LaneSweep, now), ReadCost: x.readCost}
	tail := discovery.Reader{Name: ReaderTail, LastRead: x.tailRead, Scanning: x.scan != nil, Held: held[ReaderTail]}
	if s.ContractsAreTail {
		tail = discovery.Reader{Name: ReaderTail, LastRead: x.probeAt, Held: held[ReaderTail]}
	}
	s.Tail = &tail
	if x.pos != nil || s.ContractsAreTail {
		s.Contracts = []discovery.Reader{{Name: readerContracts, LastRead: x.recRead, Scanning: x.recTo != 0,
			Held: held[readerContracts]}}
	}
	return s
}

// readTail is the plan's ReadTail step: the feed's walk, or its probe
// while the lists are the tail. It reports whether the read is whole.
func (x *tailSim) readTail(now *time.Time) bool {
	if x.onLists() {
		x.probe(now)
		return true
	}
	cost, done := x.tailRun(now)
	if done {
		x.tailRead, x.readCost = *now, float64(max(cost, 1))
	}
	return done
}

// take asks pacer's budget for one request for reader and sends it; false
// when the budget would make it wait longer than maxWait, or Hiro refused.
func (x *tailSim) take(now *time.Time, reader string) bool {
	if !now.Before(x.c.W.End) {
		return false // the horizon is over: its month's figures stay its own
	}
	ok, waits := x.send(now, maxWait)
	if waits == 0 {
		x.requests[reader]++ // sent
	}
	return ok
}

// tailRun reads the feed down to the tail's position, verifying the
// candidates of each page before committing it; a budget stop leaves the
// walk to go on at the next run. It returns the requests it spent, and
// whether the walk is done (the sweep observes a read's cost then).
func (x *tailSim) tailRun(now *time.Time) (int, bool) {
	spent := x.requests[ReaderTail] + x.requests[ReaderDetails]
	if x.scan == nil {
		x.scan = x.eng.NewScan(x.pos)
		x.reads++
	}
	for !x.scan.Done() {
		if !x.take(now, ReaderTail) {
			break
		}
		entries, total := x.c.Feed(*now, x.scan.NextOffset(), hiro.MaxLimit)
		x.traffic.ObserveFeed(total, entries, onContract, *now)
		fresh, _ := x.scan.AddFeed(entries, total)
		var batch [][2]int
		var seen [][2]int
		for _, e := range fresh {
			if !x.eng.Candidate(e, func(addr string) bool { return x.agents[addr] }) {
				continue
			}
			if a, t, ok := x.c.AgentTx(Ordinal(e)); ok {
				seen = append(seen, [2]int{a, t})
				if x.found[a][t].IsZero() {
					batch = append(batch, [2]int{a, t})
				}
			}
		}
		if !x.fetch(now, batch) {
			break // not settled: the page is read again
		}
		for _, s := range seen {
			x.byTail[s[0]][s[1]] = true
		}
		x.scan.Commit()
	}
	done := x.scan.Done()
	if done {
		if x.scan.Gap() {
			x.gaps++
		}
		x.pos, x.scan = x.scan.Position(), nil
	}
	return x.requests[ReaderTail] + x.requests[ReaderDetails] - spent, done
}

// probe reads the feed's newest page when the plan says (every
// ReconcileEvery) while the tail reads the contracts' lists: what keeps the feed's volume
// observed, so that the tail goes back to it when it fits.
func (x *tailSim) probe(now *time.Time) {
	if !x.take(now, ReaderTail) {
		return
	}
	x.probeAt = *now
	entries, total := x.c.Feed(*now, 0, hiro.MaxLimit)
	x.traffic.ObserveFeed(total, entries, onContract, *now)
}

// fetch reads the details of swaps in batches and records their rows;
// false when the budget stopped it before every one was read.
func (x *tailSim) fetch(now *time.Time, swaps [][2]int) bool {
	for i := 0; i < len(swaps); i += x.batch {
		if !x.take(now, ReaderDetails) {
			return false
		}
		x.traffic.ObserveDetails(1, *now)
		for _, s := range swaps[i:min(i+x.batch, len(swaps))] {
			if x.found[s[0]][s[1]].IsZero() {
				x.found[s[0]][s[1]] = *now
			}
		}
	}
	return true
}

// reconcile reads every allowlisted contract's list from the
// contracts' readers' cursor to the head, a page of 50 of every contract
// at a time (at least one each, to learn there is nothing new), and
// fetches the details of any swap not found yet. It moves its cursor a
// round of pages at a time, oldest first: the engine walks each list
// newest first and resumes where a budget stop left it, which costs the
// same requests. primary is the tail reading the lists at its cadence
// (its pages are the tail's, what it finds is not missed); otherwise it
// is the reconciler. It reports whether it reached the head; a read the
// budget cut short goes on to the head it began with (as a scan goes on
// down to its position), the head's news left to the next read.
func (x *tailSim) reconcile(now *time.Time, primary bool) bool {
	if x.recTo == 0 {
		x.recTo = x.c.Visible(*now)
	}
	head := x.recTo
	k := reconcileContracts()
	reader := ReaderReconciler
	if primary {
		reader = ReaderTail
	}
	for first := true; first || x.recAt < head; first = false {
		if x.recEnd == 0 {
			end := x.recAt + sort.Search(head-x.recAt, func(n int) bool {
				return x.c.AllowedIn(x.recAt, x.recAt+n+1) >= k*hiro.MaxLimit
			}) + 1
			x.recEnd, x.recPaid = min(end, head), 0
		}
		end := x.recEnd
		// Each contract's reader keeps its own place: a budget stop
		// part way through a round loses none of the pages paid.
		for ; x.recPaid < k; x.recPaid++ {
			if !x.take(now, reader) {
				return false
			}
		}
		var missing [][2]int
		refs := x.c.AgentsIn(x.recAt, end)
		for _, ref := range refs {
			if x.c.W.Agents[ref.agent].Txs[ref.tx].Swap && x.found[ref.agent][ref.tx].IsZero() {
				missing = append(missing, [2]int{int(ref.agent), int(ref.tx)})
			}
		}
		if !x.fetch(now, missing) {
			return false
		}
		if primary {
			for _, ref := range refs {
				x.byTail[ref.agent][ref.tx] = true
			}
		}
		x.recAt, x.recEnd = end, 0
	}
	x.recTo = 0
	return true
}

// ChainResult is one strategy's figures on one chain and budget.
type ChainResult struct {
	World, Budget, Strategy string
	Volume                  int
	Days                    float64
	// Requests are Hiro requests by reader (ReaderTail, ReaderReconciler,
	// ReaderDetails; per-agent visits under "visits").
	Requests map[string]int
	// All is the delay from a swap being mined to its row, over the
	// measured swaps found.
	All Delays
	// Missed are measured swaps the strategy's own walk passed over (the
	// tail: never handed out by its walk, found only by the reconciler;
	// per-agent: passed over for good); NeverFound have no row at the end.
	Missed, NeverFound int
	Gaps               int
	// OnLists is the share of the time the tail read the allowlisted
	// contracts' lists rather than the feed.
	OnLists   float64
	HasMonth  bool
	MonthLeft int64
	DryAt     *time.Time
	Refused   int64
}

// PerDay is a reader's requests a day (all readers for "").
func (r ChainResult) PerDay(reader string) float64 {
	if reader != "" {
		return float64(r.Requests[reader]) / r.Days
	}
	n := 0
	for _, v := range r.Requests {
		n += v
	}
	return float64(n) / r.Days
}

func (x *tailSim) result(from, to time.Time) ChainResult {
	r := ChainResult{World: x.c.W.Name, Budget: x.b.Name, Strategy: "tail (" + x.eng.Name + ")", Volume: x.c.Volume,
		Days: x.c.W.End.Sub(x.c.W.Start).Hours() / 24, Requests: x.requests, Gaps: x.gaps, Refused: x.refused}
	var all []time.Duration
	for i, a := range x.c.W.Agents {
		for j, tx := range a.Txs {
			if !tx.Swap || tx.At.Before(from) || !tx.At.Before(to) {
				continue
			}
			switch at := x.found[i][j]; {
			case at.IsZero():
				r.NeverFound++
			default:
				// From its block's time (SPEC §5.0 "Times").
				all = append(all, at.Sub(BlockTime(tx.At)))
				if !x.byTail[i][j] {
					r.Missed++
				}
			}
		}
	}
	if x.onLists() {
		x.listsTime += x.c.W.End.Sub(x.decided)
	}
	r.OnLists = x.listsTime.Hours() / 24 / max(r.Days, 1e-9)
	r.All = delays(all)
	r.HasMonth, r.MonthLeft, r.DryAt = x.month()
	return r
}

// perAgentChainResult is a per-agent Result in the chain report's terms.
func perAgentChainResult(r Result, volume int) ChainResult {
	return ChainResult{World: r.World, Budget: r.Budget, Strategy: "per-agent " + r.Strategy, Volume: volume,
		Days: r.Days, Requests: map[string]int{"visits": r.Requests}, All: r.All, Missed: r.Missed,
		NeverFound: r.NotFound, HasMonth: r.HasMonth, MonthLeft: r.MonthLeft, DryAt: r.DryAt, Refused: r.Refused}
}
