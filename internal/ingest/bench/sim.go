package bench

import (
	"container/heap"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/budget"
	"github.com/pacer-dev/pacer/internal/discovery"
	"github.com/pacer-dev/pacer/internal/ingest"
	simulator "github.com/pacer-dev/pacer/internal/sim"
)

// Budget is a Hiro plan: the limit Hiro enforces a minute, the one pacer is
// configured with, and the month quota (0: none).
type Budget struct {
	Name       string
	Documented int64
	PerMinute  int64
	Month      int64
}

// Strategy kinds.
const (
	KindRoundRobin = "round robin"
	KindTiers      = "tiers"
	KindOptimal    = "optimal"
)

// Strategy is how the sweep is run.
type Strategy struct {
	Name string
	Kind string
	// VisitsPerDay, when set, is the optimal allocation's visit budget
	// instead of the one the Hiro budget gives: to compare with tiers at
	// a given cost.
	VisitsPerDay float64
}

// Timing of the simulation.
const (
	// requestTime is how long one Hiro request takes.
	requestTime = 100 * time.Millisecond
	// sweepEvery is PACER_SWEEP_EVERY: the workflow never starts a sweep
	// sooner than this after the last one started.
	sweepEvery = time.Minute
	// pageSize is Hiro's list page; rrNewest and rrPage are today's sweep:
	// the 25 newest transactions of 100 agents every 15 minutes.
	pageSize = 50
	rrNewest = 25
	rrPage   = 100
	rrEvery  = 15 * time.Minute
	// runCap and maxWait are the activity's.
	runCap  = 4 * time.Minute
	maxWait = 2 * time.Second
	// heartbeatThrottle is what the SDK lets through with the sweep's
	// 2-minute heartbeat timeout: one heartbeat per 0.8 × 2 min.
	heartbeatThrottle = 96 * time.Second
)

// agent is one agent's simulated state: the policy's view (ingest.Agent,
// updated by the policy's own AfterVisit) and how far its transactions have
// been processed.
type agent struct {
	ingest.Agent
	spec *AgentSpec
	// cursor: Txs[:cursor] are processed. A visit cut short leaves
	// Txs[cursor:resumeHi] to process (newest first) before cursor may
	// move to resumeTop.
	cursor              int
	resumeHi, resumeTop int
	found               []time.Time // when each swap's row appeared (zero: not yet)
	// seen are the swaps the current visit saw first (the rate's input).
	seen   []time.Time
	visits int
	maxGap time.Duration
	// rrLast is the round robin's last visit; missedFrom says that
	// Txs[:missedFrom] were passed over by it for good.
	rrLast     time.Time
	missedFrom int
	// pos is where the agent sits in each heap of the due set (-1: not).
	pos [4]int
	// critAt is when the agent turns critical (ingest.Config.Critical);
	// key and critKey are its place in the due order before and after.
	critAt       time.Time
	key, critKey orderKey
}

// orderKey is a place in the due order, as ingest.Config.Less orders: the
// wait (critical agents only), the tier's rank (tiers only), the due time
// and the address.
type orderKey struct {
	wait, rank, next int64
	addr             string
}

func (k orderKey) less(o orderKey) bool {
	switch {
	case k.wait != o.wait:
		return k.wait < o.wait
	case k.rank != o.rank:
		return k.rank < o.rank
	case k.next != o.next:
		return k.next < o.next
	}
	return k.addr < o.addr
}

// keys are a's places among agents not critical and among critical ones.
func (x *sim) keys(a ingest.Agent) (due, critical orderKey) {
	due = orderKey{next: a.NextRunAt.UnixNano(), addr: a.Address}
	if x.cfg.Policy == ingest.PolicyTiers {
		due.rank = int64(a.Tier.Rank())
	}
	critical = due
	critical.wait = a.WaitingSince().UnixNano()
	return due, critical
}

// hiroSide is pacer's budget (internal/budget, as the sweep takes from it)
// in front of Hiro's quota (internal/sim's model of it), which answers with
// the headers pacer reads.
type hiroSide struct {
	bcfg    budget.Config
	st      budget.State
	quota   simulator.Quota
	refused int64
}

func newHiroSide(b Budget) hiroSide {
	return hiroSide{bcfg: budget.Config{PerMinute: b.PerMinute},
		quota: simulator.Quota{Limits: simulator.Limits{PerMinute: int(b.Documented), PerMonth: int(b.Month)}}}
}

// send asks the budget for one request at *now, waiting at most wait for
// it, and sends it: Hiro answers and the budget observes. ok is false when
// the budget would make it wait longer (retryIn says how long) or Hiro
// refused.
func (h *hiroSide) send(now *time.Time, wait time.Duration) (ok bool, retryIn time.Duration) {
	for {
		d := h.st.Take(h.bcfg, budget.LaneSweep, 1, *now)
		if d.OK {
			break
		}
		if d.RetryIn > wait {
			return false, d.RetryIn
		}
		*now = now.Add(d.RetryIn)
	}
	a := h.quota.Take(*now, 1)
	o := a.Observation(h.quota.Limits, *now, 1)
	if !a.Allowed {
		h.refused++
	}
	*now = now.Add(requestTime)
	h.st.Observe(h.bcfg, budget.LaneSweep, o, *now)
	return a.Allowed, 0
}

// month is the month's figures of a result: whether the plan has a month
// quota, what is left of it, and when it first ran dry.
func (h *hiroSide) month() (bool, int64, *time.Time) {
	return h.quota.Limits.HasMonth(), int64(h.quota.MonthLeft()), h.quota.DryAt
}

// sim is one strategy in one world on one budget.
type sim struct {
	w   *World
	b   Budget
	s   Strategy
	cfg ingest.Config
	hiroSide
	agents   []*agent
	measure  [2]time.Time // swaps mined in [from, to) are measured
	requests int
	visits   int
	runs     int
	actions  float64
	lastRes  pacer.SweepResult

	// The due set, as the store's query orders it (ingest.Config.Less):
	// future by next_run_at, due by the policy's order, aging by when a
	// due agent turns critical, critical by its last visit.
	future, due, aging, critical *agentHeap
	alloc                        ingest.Allocation
	allocAt                      time.Time
}

// Simulate runs s in w on b and measures the swaps mined in [from, to).
func Simulate(w *World, b Budget, s Strategy, from, to time.Time) Result {
	x := &sim{w: w, b: b, s: s, cfg: ingest.DefaultConfig(), measure: [2]time.Time{from, to},
		hiroSide: newHiroSide(b)}
	if s.Kind == KindTiers {
		x.cfg.Policy = ingest.PolicyTiers
	}
	x.init()
	if s.Kind == KindRoundRobin {
		x.roundRobin()
	} else {
		x.perAgent()
	}
	return x.result()
}

// init gives every agent its state: never visited, due at the start.
func (x *sim) init() {
	for i := range x.w.Agents {
		spec := &x.w.Agents[i]
		a := &agent{spec: spec, resumeHi: -1, found: make([]time.Time, len(spec.Txs)), pos: [4]int{-1, -1, -1, -1}}
		a.Address = fmt.Sprintf("SP%06d", i)
		a.Tier = ingest.Cold
		a.NextRunAt = x.w.Start
		x.agents = append(x.agents, a)
	}
}

// take sends one request at *now, as hiroSide.send, and counts it.
func (x *sim) take(now *time.Time, wait time.Duration) (ok bool, retryIn time.Duration) {
	ok, retryIn = x.send(now, wait)
	if retryIn == 0 {
		x.requests++ // sent
	}
	return ok, retryIn
}

// roundRobin is today's sweep: every 15 minutes, the next 100 agents, the
// 25 newest transactions of each, a detail request for each swap among them
// not yet known; it waits for the budget, as the old Wait did.
func (x *sim) roundRobin() {
	next := 0
	for start := x.w.Start; start.Before(x.w.End); start = start.Add(rrEvery) {
		now := start
		for range min(rrPage, len(x.agents)) {
			a := x.agents[next]
			next = (next + 1) % len(x.agents)
			x.take(&now, math.MaxInt64)
			x.visit(a, now)
			top := a.top(now)
			for i := top - 1; i >= max(0, top-rrNewest); i-- {
				if a.spec.Txs[i].Swap && a.found[i].IsZero() {
					x.take(&now, math.MaxInt64)
					a.found[i] = now
				}
			}
			a.missedFrom = max(a.missedFrom, top-rrNewest)
		}
		x.runs++
		x.actions += runActions(now.Sub(start), true)
		if now.After(start.Add(rrEvery)) {
			// A run longer than the cadence delays the next.
			start = now.Truncate(time.Second).Add(-rrEvery)
		}
	}
}

// perAgent runs the per-agent sweep: the workflow wakes it at the result's
// NextDueAt, never sooner than sweepEvery after the last start.
func (x *sim) perAgent() {
	x.future = &agentHeap{id: 0, less: func(a, b *agent) bool {
		if c := a.NextRunAt.Compare(b.NextRunAt); c != 0 {
			return c < 0
		}
		return a.Address < b.Address
	}}
	// The policy's own order (ingest.Config.Less) among agents not
	// critical, and among critical ones, by keys computed once per agent
	// (TestKeysAreTheDueOrder holds them to Less).
	x.due = &agentHeap{id: 1, less: func(a, b *agent) bool { return a.key.less(b.key) }}
	x.critical = &agentHeap{id: 2, less: func(a, b *agent) bool { return a.critKey.less(b.critKey) }}
	x.aging = &agentHeap{id: 3, less: func(a, b *agent) bool { return a.critAt.Before(b.critAt) }}
	for _, a := range x.agents {
		x.future.push(a)
	}
	for start := x.w.Start; start.Before(x.w.End); {
		end, nextDue := x.run(start)
		x.runs++
		start = later(start.Add(sweepEvery), nextDue, end)
	}
}

// promote moves the agents due at now into the due set, and the due agents
// that have waited their staleness cap into the critical set.
func (x *sim) promote(now time.Time) {
	for a := x.future.peek(); a != nil && !a.NextRunAt.After(now); a = x.future.peek() {
		x.future.pop()
		a.key, a.critKey = x.keys(a.Agent)
		x.due.push(a)
		a.critAt = a.NextRunAt // never visited: critical at once
		if a.LastVisitAt != nil {
			a.critAt = a.LastVisitAt.Add(x.cfg.StalenessCap())
		}
		x.aging.push(a)
	}
	for a := x.aging.peek(); a != nil && x.cfg.Critical(a.Agent, now); a = x.aging.peek() {
		x.aging.pop()
		x.critical.push(a)
	}
}

// next takes the next agent to visit, in the due order, out of the due set.
func (x *sim) next() *agent {
	a := x.critical.peek()
	if a == nil {
		a = x.due.peek()
	}
	if a != nil {
		x.critical.remove(a)
		x.due.remove(a)
		x.aging.remove(a)
	}
	return a
}

// run is one sweep run from start: it returns when it ended and the
// NextDueAt it reports.
func (x *sim) run(start time.Time) (end, nextDue time.Time) {
	now := start
	if x.cfg.Policy == ingest.PolicyOptimal && (x.allocAt.IsZero() || now.Sub(x.allocAt) >= ingest.AllocationTTL) {
		x.alloc, x.allocAt = x.allocate(now), now
	}
	var budgetAt *time.Time
	visited := 0
	for now.Sub(start) < runCap {
		x.promote(now)
		a := x.next()
		if a == nil {
			break
		}
		at, stopped := x.perAgentVisit(a, &now)
		visited++
		if stopped {
			budgetAt = &at
			break
		}
	}
	x.actions += runActions(now.Sub(start), visited > 0)
	x.promote(now)
	dueLeft := x.due.len() // the critical agents are in it too
	earliest := &now
	if dueLeft == 0 {
		earliest = nil
		if a := x.future.peek(); a != nil {
			earliest = &a.NextRunAt
		}
	}
	// When the next run is due, as the sweep's plan says it.
	next := discovery.Run{Now: now, Agents: discovery.Agents{Due: dueLeft}}
	if earliest != nil && dueLeft == 0 {
		next.Agents.Next = *earliest
	}
	if budgetAt != nil && dueLeft > 0 {
		next.Budget = discovery.Budget{Known: true, RoomAt: *budgetAt} // they wait for the budget
	}
	nextDue = now.Add(discovery.NextRunCap)
	if at := discovery.NextRun(next); !at.IsZero() {
		nextDue = at
	}
	x.lastRes = pacer.SweepResult{Run: pacer.Run{StartedAt: start, DurationMs: now.Sub(start).Milliseconds()},
		Scanned: visited, AgentsDue: dueLeft, NextDueAt: &nextDue}
	return now, nextDue
}

// allocate solves the optimal policy as the activity does: every agent's
// smoothed rate, and the visits the sweep lane's rate leaves after the
// swaps' own detail requests.
func (x *sim) allocate(now time.Time) ingest.Allocation {
	rates := make([]float64, len(x.agents))
	swaps := 0.0
	for i, a := range x.agents {
		rates[i] = a.RateAt(now)
		swaps += rates[i]
	}
	if x.s.VisitsPerDay > 0 {
		return x.cfg.Allocate(rates, x.s.VisitsPerDay)
	}
	perDay := x.st.Rate(x.bcfg, budget.LaneSweep, now) * 24 * 60
	return x.cfg.Allocate(rates, ingest.VisitBudget(perDay, swaps))
}

// perAgentVisit visits a: it pages back to the agent's cursor, newest
// first, a list request per page of 50 and a detail request per swap, and
// stops when the budget says so. stopped reports a budget stop, at the time
// the budget has room again.
func (x *sim) perAgentVisit(a *agent, now *time.Time) (at time.Time, stopped bool) {
	complete := true
	if a.resumeHi >= 0 {
		if complete, at = x.pass(a, now, a.resumeHi); complete {
			a.cursor, a.resumeHi = a.resumeTop, -1
		}
	}
	if complete {
		top := a.top(*now)
		if complete, at = x.pass(a, now, top); complete {
			a.cursor = top
		} else if a.resumeHi >= 0 {
			a.resumeTop = top
		}
	}
	x.visit(a, *now)
	a.Agent = x.cfg.AfterVisit(a.Agent, ingest.Visit{At: *now, Complete: complete, Swaps: a.seen}, x.alloc)
	a.seen = a.seen[:0]
	x.future.push(a)
	return at, !complete
}

// pass processes Txs[cursor:hi] newest first; complete is false when the
// budget stopped it (resumeHi then says where it goes on).
func (x *sim) pass(a *agent, now *time.Time, hi int) (complete bool, retryAt time.Time) {
	for i, n := hi-1, 0; ; n++ {
		if n%pageSize == 0 {
			if ok, wait := x.take(now, maxWait); !ok {
				a.resumeHi = i + 1
				return false, now.Add(wait)
			}
		}
		if i < a.cursor {
			return true, time.Time{}
		}
		if a.spec.Txs[i].Swap && a.found[i].IsZero() {
			if ok, wait := x.take(now, maxWait); !ok {
				a.resumeHi = i + 1
				return false, now.Add(wait)
			}
			a.found[i] = *now
			a.seen = append(a.seen, a.spec.Txs[i].At)
		}
		i--
	}
}

// visit records a visit's time for the staleness figure.
func (x *sim) visit(a *agent, now time.Time) {
	prev := x.w.Start
	if a.visits > 0 && a.LastVisitAt != nil {
		prev = *a.LastVisitAt
	}
	if x.s.Kind == KindRoundRobin {
		if a.visits > 0 {
			prev = a.rrLast
		}
		a.rrLast = now
	}
	a.maxGap = max(a.maxGap, now.Sub(prev))
	a.visits++
	x.visits++
}

// top is how many of a's transactions are mined by now.
func (a *agent) top(now time.Time) int {
	n, _ := slices.BinarySearchFunc(a.spec.Txs, now, func(t Tx, now time.Time) int {
		if t.At.After(now) {
			return 1
		}
		return -1
	})
	return n
}

func (x *sim) tierCounts() map[string]int {
	out := map[string]int{}
	for _, a := range x.agents {
		out[string(a.Tier)]++
	}
	return out
}

// runActions prices one run in Temporal actions: its activity, the timer
// that woke it, and its heartbeats (the first at once when it visits
// anyone, then one per throttle window).
func runActions(d time.Duration, visited bool) float64 {
	n := 2.0
	if visited {
		n += 1 + float64(d/heartbeatThrottle)
	}
	return n
}

func later(ts ...time.Time) time.Time {
	out := ts[0]
	for _, t := range ts[1:] {
		if t.After(out) {
			out = t
		}
	}
	return out
}

// agentHeap is a heap of agents that knows where each agent sits, so an
// agent visited early leaves every heap it was in at once.
type agentHeap struct {
	id      int // the agent's pos slot for this heap
	less    func(a, b *agent) bool
	entries []*agent
}

func (h *agentHeap) Len() int           { return len(h.entries) }
func (h *agentHeap) Less(i, j int) bool { return h.less(h.entries[i], h.entries[j]) }
func (h *agentHeap) Swap(i, j int) {
	h.entries[i], h.entries[j] = h.entries[j], h.entries[i]
	h.entries[i].pos[h.id], h.entries[j].pos[h.id] = i, j
}
func (h *agentHeap) Push(v any) {
	a := v.(*agent)
	a.pos[h.id] = len(h.entries)
	h.entries = append(h.entries, a)
}
func (h *agentHeap) Pop() any {
	a := h.entries[len(h.entries)-1]
	h.entries = h.entries[:len(h.entries)-1]
	a.pos[h.id] = -1
	return a
}

func (h *agentHeap) push(a *agent) { heap.Push(h, a) }

func (h *agentHeap) peek() *agent {
	if len(h.entries) == 0 {
		return nil
	}
	return h.entries[0]
}

func (h *agentHeap) pop() *agent {
	if len(h.entries) == 0 {
		return nil
	}
	return heap.Pop(h).(*agent)
}

// remove takes a out of the heap if it is in it.
func (h *agentHeap) remove(a *agent) {
	if i := a.pos[h.id]; i >= 0 {
		heap.Remove(h, i)
	}
}

func (h *agentHeap) len() int { return len(h.entries) }

// carriedBytes is the size of what the workflow keeps of a sweep run: its
// result document, whatever the number of agents.
func carriedBytes(r pacer.SweepResult) int {
	r.RejectionReasons = map[string]int{}
	b, err := json.Marshal(r)
	if err != nil {
		return -1
	}
	return len(b)
}

// optCap and optMaxStaleness are the default policy's staleness bounds.
func optCap() time.Duration          { return ingest.DefaultConfig().StalenessCap() }
func optMaxStaleness() time.Duration { return ingest.DefaultConfig().MaxStaleness }
