package bench

import (
	"cmp"
	"container/heap"
	"slices"
	"strconv"
	"time"

	"github.com/pacer-dev/pacer/internal/budget"
	"github.com/pacer-dev/pacer/internal/discovery"
	"github.com/pacer-dev/pacer/internal/hiro"
	"github.com/pacer-dev/pacer/internal/ingest"
	simulator "github.com/pacer-dev/pacer/internal/sim"
	"github.com/pacer-dev/pacer/internal/store"
)

// agent is one agent's state in the agents mode: its agent_ingest row, as
// the sweep keeps it (the policy's view, ingest.Agent, updated by the
// policy's own AfterVisit; the cursor, and where a visit cut short goes
// on: Scan, Walked).
type agent struct {
	store.AgentIngest
	i    int
	spec *AgentSpec
	// pos is where the agent sits in each heap of the due set, from 1
	// (0: not in it).
	pos [3]int
}

// initAgents gives every agent its state (never visited, due at the
// start) and the due set its heaps, in the policy's own order
// (ingest.Config.Less, which the store's query follows) among agents not
// critical (as at the dawn of time) and as if all were critical (as at its
// end); an agent's place changes only when it is visited, out of them.
func (x *sim) initAgents() {
	x.future = &agentHeap{id: 0, less: func(a, b *agent) bool {
		return cmp.Or(a.NextRunAt.Compare(b.NextRunAt), cmp.Compare(a.Address, b.Address)) < 0
	}}
	x.due = &agentHeap{id: 1, less: func(a, b *agent) bool { return x.cfg.Less(a.Agent, b.Agent, time.Time{}) }}
	x.waiting = &agentHeap{id: 2, less: func(a, b *agent) bool { return x.cfg.Less(a.Agent, b.Agent, endOfTime) }}
	for i := range x.w.Agents {
		a := &agent{i: i, spec: &x.w.Agents[i]}
		a.Address, a.Tier, a.NextRunAt = AgentAddress(i), ingest.Cold, x.w.Start
		x.agents = append(x.agents, a)
		x.future.push(a)
	}
}

// promote moves the agents due at now into the due set.
func (x *sim) promote(now time.Time) {
	for a := x.future.peek(); a != nil && !a.NextRunAt.After(now); a = x.future.peek() {
		x.future.remove(a)
		x.due.push(a)
		x.waiting.push(a)
	}
	x.dueAt = now
}

// endOfTime is when every agent is critical.
var endOfTime = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)

// next takes the next agent to visit, in the due order, out of the due
// set (nil: none is due). The longest-waiting agent, when critical, is
// the first critical one. When it is not, no agent once visited is
// critical, and the first in the policy's order is the first critical
// one too if any is (never visited, they come first there, in the same
// order).
func (x *sim) next() *agent {
	a := x.due.peek()
	if w := x.waiting.peek(); w != nil && x.cfg.Critical(w.Agent, x.dueAt) {
		a = w
	}
	if a != nil {
		x.due.remove(a)
		x.waiting.remove(a)
	}
	return a
}

// visit is one agent's visit: its scan, the first page (read and verified
// with the rest of its batch) and the block times of the swaps it saw
// first (the rate's input).
type visit struct {
	a     *agent
	scan  *discovery.Scan
	first *page
	swaps []time.Time
}

// page is a page of a visit: its candidates (the agent's swaps among the
// entries the scan handed out) and the block times of those not looked at
// before.
type page struct {
	refs  []agentTxRef
	swaps []time.Time
}

// visitBatch is the plan's Visit step, as the sweep's: the next n agents
// in the due order, their first pages read and the swaps on all of them
// verified together, then each visit walking on alone. An agent whose
// first page the budget stopped is left as it was (nothing changed).
func (x *sim) visitBatch(now *time.Time, n int) {
	defer func() { x.lastVisit = *now }()
	var vs []*visit
	var all []agentTxRef
	for range n {
		a := x.next()
		if a == nil {
			break
		}
		v := &visit{a: a, scan: x.newScan(a)}
		if v.first = x.read(v, now); v.first != nil {
			all = append(all, v.first.refs...)
		}
		vs = append(vs, v)
	}
	x.fetch(now, all, true)
	for _, v := range vs {
		if v.first != nil {
			x.carry(v, now)
		}
		x.visited = append(x.visited, v.a)
	}
}

// newScan is a's visit's walk of its list as the sweep's
// (activities/visit.go): on from where a visit cut short stopped, else
// from the newest entry, down to the competition's start (the world's).
func (x *sim) newScan(a *agent) *discovery.Scan {
	from, st := a.Scan()
	return discovery.NewVisit(from, st, x.w.Start)
}

// carry carries a visit on from its first page: a visit cut short before
// goes on from where it stopped and, with that range done, a fresh pass
// reads what arrived meanwhile. The policy then learns how it went.
func (x *sim) carry(v *visit, now *time.Time) {
	resumed := v.a.VisitFrom != ""
	complete := x.pass(v, now)
	if complete && resumed {
		v.scan = x.newScan(v.a)
		complete = x.pass(v, now)
	}
	v.a.Agent = x.cfg.AfterVisit(v.a.Agent, ingest.Visit{At: *now, Complete: complete, Swaps: v.swaps}, x.alloc)
}

// pass walks the visit's scan, each page committed once every swap on it
// has its row, and records where it stands in the agent's row (Walked).
func (x *sim) pass(v *visit, now *time.Time) bool {
	for !v.scan.Done() {
		p := v.first
		if v.first = nil; p == nil {
			if p = x.read(v, now); p == nil {
				break
			}
			x.fetch(now, p.refs, true)
		}
		if slices.ContainsFunc(p.refs, x.unfound) {
			break // not settled: the page is read again
		}
		v.swaps = append(v.swaps, p.swaps...)
		v.scan.Commit()
	}
	v.a.Walked(v.scan)
	return v.scan.Done()
}

// read reads the visit's next page and picks its candidates; nil when the
// budget stopped the request.
func (x *sim) read(v *visit, now *time.Time) *page {
	if !x.take(now, ReaderVisits) {
		return nil
	}
	entries, next := x.list(v.a, *now, v.scan.NextToken())
	p := &page{}
	for _, e := range v.scan.AddList(entries, next).Fresh {
		j, _ := strconv.Atoi(e.TxID)
		if v.a.spec.Txs[j].Swap {
			p.refs = append(p.refs, agentTxRef{int32(v.a.i), int32(j)})
			if !v.scan.Again(e) {
				p.swaps = append(p.swaps, time.Unix(e.BlockTime, 0))
			}
		}
	}
	return p
}

// list is the page of a's list at token as Hiro answers it at now: the
// transactions mined by then, newest first, a page of hiro.MaxLimit; a
// token is the index in Txs of the page's first entry ("": the newest),
// and an entry's txid its index.
func (x *sim) list(a *agent, now time.Time, token string) (entries []hiro.Entry, next string) {
	i, err := strconv.Atoi(token)
	if err != nil {
		i, _ = slices.BinarySearchFunc(a.spec.Txs, now, func(t Tx, now time.Time) int {
			return cmp.Or(simulator.BlockOf(t.At).Compare(now), -1) // mined by now
		})
		i--
	}
	for ; i >= 0 && len(entries) < hiro.MaxLimit; i-- {
		at := simulator.BlockOf(a.spec.Txs[i].At)
		entries = append(entries, hiro.Entry{TxID: strconv.Itoa(i), TxStatus: hiro.StatusSuccess, Canonical: true,
			BlockHeight: chainHeight0 + int64(at.Sub(x.w.Start)/simulator.BlockPeriod), TxIndex: int64(i), BlockTime: at.Unix()})
	}
	if i >= 0 {
		next = strconv.Itoa(i)
	}
	return entries, next
}

// lane is what the optimal policy is solved for, as the activity reads
// it: every agent's smoothed rate, the sweep lane's rate and what it took.
func (x *sim) lane(now time.Time) (ingest.Lane, error) {
	rates := make([]float64, len(x.agents))
	for i, a := range x.agents {
		rates[i] = a.RateAt(now)
	}
	return ingest.Lane{Rates: rates, Rate: x.st.Rate(x.bcfg, budget.LaneSweep, now) * 24 * 60, Taken: x.st.SweepTaken}, nil
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
	h.entries[i].pos[h.id], h.entries[j].pos[h.id] = i+1, j+1
}
func (h *agentHeap) Push(v any) {
	a := v.(*agent)
	h.entries = append(h.entries, a)
	a.pos[h.id] = len(h.entries)
}
func (h *agentHeap) Pop() any {
	a := h.entries[len(h.entries)-1]
	h.entries = h.entries[:len(h.entries)-1]
	a.pos[h.id] = 0
	return a
}

func (h *agentHeap) push(a *agent) { heap.Push(h, a) }

func (h *agentHeap) peek() *agent {
	if len(h.entries) == 0 {
		return nil
	}
	return h.entries[0]
}

// remove takes a out of the heap if it is in it.
func (h *agentHeap) remove(a *agent) {
	if i := a.pos[h.id]; i > 0 {
		heap.Remove(h, i-1)
	}
}
