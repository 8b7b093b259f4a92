package bench

import (
	"sort"
	"time"

	"github.com/pacer-dev/pacer/internal/budget"
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
	// NewPace is the engine's view of its cost and of the chain's traffic
	// between reads (nil: the feed every TailEvery, whatever the budget).
	NewPace func() Pace
}

// Pace is discovery.Pace as the benchmark drives it: what the sweep
// observes of the chain and of its reads, where the tail reads next, and
// how long after a read it reads again.
type Pace interface {
	ObserveFeed(total int, page []hiro.Entry, onContract func(contractID string) bool, at time.Time)
	ObserveDetails(requests int, at time.Time)
	ObserveRead(requests int)
	// Contracts decides where the tail reads next: true for the
	// allowlisted contracts' own lists, false for the feed.
	Contracts(contracts int, every time.Duration, ratePerMinute float64) bool
	Interval(every time.Duration, ratePerMinute float64) time.Duration
}

// Readers, as the results split requests.
const (
	ReaderTail       = "tail"
	ReaderReconciler = "reconciler"
	ReaderDetails    = "details"
)

// Tail timing (SPEC §2 defaults).
const (
	TailEvery      = 10 * time.Second
	ReconcileEvery = 15 * time.Minute
)

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

// tailSim is the tail strategy in one chain on one budget.
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
	// many of its contracts' pages are read.
	recEnd, recPaid int
	pace            Pace
	// onLists is the tail reading the contracts' lists; listsTime the
	// time it spent so; probeAt when it last read a page of the feed.
	onLists   bool
	listsTime time.Duration
	probeAt   time.Time
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
// request.
func simulateTail(c *Chain, b Budget, eng Engine, from, to time.Time, batch int) ChainResult {
	x := &tailSim{c: c, b: b, eng: eng, hiroSide: newHiroSide(b),
		requests: map[string]int{}, agents: map[string]bool{}, batch: batch}
	for i, a := range c.W.Agents {
		x.agents[AgentAddress(i)] = true
		x.found = append(x.found, make([]time.Time, len(a.Txs)))
		x.byTail = append(x.byTail, make([]bool, len(a.Txs)))
	}
	if eng.NewPace != nil {
		x.pace = eng.NewPace()
	}
	now := c.W.Start
	decided := now
	nextTail, nextRec := now, now.Add(ReconcileEvery)
	x.recAt = c.Visible(now)
	for now.Before(c.W.End) {
		if !x.onLists && !nextRec.After(nextTail) {
			// The reconciler, while the tail reads the feed (on the
			// contracts' lists the tail is what reads them).
			now = later(now, nextRec)
			x.reconcile(&now, false)
			nextRec = nextRec.Add(ReconcileEvery)
			continue
		}
		now = later(now, nextTail)
		rate := x.st.Rate(x.bcfg, budget.LaneSweep, now)
		if x.onLists {
			x.listsTime += now.Sub(decided)
		}
		decided = now
		if x.pace != nil {
			x.onLists = x.pace.Contracts(reconcileContracts(), TailEvery, rate)
		}
		if x.onLists {
			x.probe(&now)
			cost := x.requests[ReaderTail] + x.requests[ReaderDetails]
			if x.reconcile(&now, true) {
				x.pace.ObserveRead(x.requests[ReaderTail] + x.requests[ReaderDetails] - cost)
			}
			nextRec = now.Add(ReconcileEvery)
		} else if cost, done := x.tailRun(&now); done && x.pace != nil {
			x.pace.ObserveRead(cost)
		}
		// As the sweep does: the next read is due an interval after this
		// one ended.
		every := TailEvery
		if x.pace != nil {
			every = x.pace.Interval(TailEvery, x.st.Rate(x.bcfg, budget.LaneSweep, now))
		}
		nextTail = now.Add(every)
	}
	return x.result(from, to)
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
		if x.pace != nil {
			x.pace.ObserveFeed(total, entries, onContract, *now)
		}
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

// probe reads the feed's newest page, once every ReconcileEvery while
// the tail reads the contracts' lists: what keeps the feed's volume
// observed, so that the tail goes back to it when it fits.
func (x *tailSim) probe(now *time.Time) {
	if !x.probeAt.IsZero() && now.Sub(x.probeAt) < ReconcileEvery {
		return
	}
	if !x.take(now, ReaderTail) {
		return
	}
	x.probeAt = *now
	entries, total := x.c.Feed(*now, 0, hiro.MaxLimit)
	x.pace.ObserveFeed(total, entries, onContract, *now)
}

// fetch reads the details of swaps in batches and records their rows;
// false when the budget stopped it before every one was read.
func (x *tailSim) fetch(now *time.Time, swaps [][2]int) bool {
	for i := 0; i < len(swaps); i += x.batch {
		if !x.take(now, ReaderDetails) {
			return false
		}
		if x.pace != nil {
			x.pace.ObserveDetails(1, *now)
		}
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
// is the reconciler. It reports whether it reached the head.
func (x *tailSim) reconcile(now *time.Time, primary bool) bool {
	head := x.c.Visible(*now)
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
		Days: x.c.W.End.Sub(x.c.W.Start).Hours() / 24, Requests: x.requests, Gaps: x.gaps, Refused: x.refused,
		OnLists: x.listsTime.Hours() / 24 / max(x.c.W.End.Sub(x.c.W.Start).Hours()/24, 1e-9)}
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
