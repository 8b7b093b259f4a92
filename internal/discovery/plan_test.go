package discovery_test

import (
	"fmt"
	"math"
	"math/rand"
	"reflect"
	"slices"
	"testing"
	"testing/quick"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/discovery"
)

// genRun is a generated sweep run state: every field drawn over ranges
// that cover the edges (no budget, an unknown budget, a run at its cap, a
// tail never read, readers cut short, hinted and history agents).
type genRun struct{ discovery.Run }

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func (genRun) Generate(r *rand.Rand, _ int) reflect.Value {
	secs := func(max int) time.Duration { return time.Duration(r.Intn(max)) * time.Second }
	now := t0.Add(secs(3600))
	reader := func(name string) discovery.Reader {
		rd := discovery.Reader{Name: name}
		switch r.Intn(5) {
		case 0: // never read
		case 1:
			rd.Scanning, rd.LastRead = true, now.Add(-secs(60))
		case 2:
			rd.Held, rd.LastRead = true, now.Add(-secs(60))
		default:
			rd.LastRead = now.Add(-secs(1200))
		}
		return rd
	}
	s := discovery.Run{Now: now, TailEvery: time.Duration(1+r.Intn(30)) * time.Second,
		ReconcileEvery: time.Duration(1+r.Intn(20)) * time.Minute, MaxWait: secs(120)}
	if r.Intn(4) > 0 {
		tail := reader(discovery.ReaderTail)
		s.Tail = &tail
		for i := range r.Intn(4) {
			s.Contracts = append(s.Contracts, reader(discovery.ContractReader(fmt.Sprint("SP.c", i))))
		}
		s.ContractsAreTail = len(s.Contracts) > 0 && r.Intn(3) == 0
	}
	if r.Intn(3) > 0 {
		s.Agents.Hinted = r.Intn(3) * r.Intn(5)
		s.Agents.Due = r.Intn(3) * r.Intn(40)
	}
	if r.Intn(2) == 0 {
		s.Agents.Next = now.Add(secs(600))
	}
	if r.Intn(3) == 0 {
		s.Pending = 1 + r.Intn(20)
		s.Pushed = r.Intn(2) * r.Intn(s.Pending+1)
	}
	s.PushLive = r.Intn(3) == 0
	s.LastVisit = now.Add(-secs(600)) // the run's start or its last visit
	b := &s.Budget
	b.Known = r.Intn(6) > 0
	b.WindowEnd = now.Add(time.Second + secs(60))
	b.Room = int64(r.Intn(3) * r.Intn(40))
	if b.Room == 0 {
		b.Why = []string{"minute", "month", "blocked"}[r.Intn(3)]
		b.RoomAt = b.WindowEnd
		if b.Why != "minute" {
			b.RoomAt = now.Add(time.Second + secs(3000))
		}
	}
	b.Rate = []float64{0, 2, 10, 30, 450}[r.Intn(5)]
	b.ReadCost = float64(1 + r.Intn(4)*r.Intn(6))
	s.Linger = now.Add(secs(90) - 20*time.Second)
	s.Cap = s.Linger.Add(secs(240) - 30*time.Second)
	if r.Intn(4) == 0 {
		s.MaxRequests = 1 + r.Intn(50)
		s.Spent = r.Intn(60)
	}
	return reflect.ValueOf(genRun{s})
}

// The oracle: the rules of SPEC §5.0/§5.4 restated on their own, not by
// the plan's helpers.

func capped(s discovery.Run) bool {
	return s.MaxRequests > 0 && s.Spent >= s.MaxRequests || !s.Now.Before(s.Cap)
}

func hasRoom(s discovery.Run) bool { return !s.Budget.Known || s.Budget.Room >= 1 }

// readRoom reports whether the lane has room for a reader's read: what a
// read last cost, or the lane's whole rate a minute when that is less.
func readRoom(s discovery.Run) bool {
	need := math.Ceil(max(s.Budget.ReadCost, 1))
	if s.Budget.Rate > 0 {
		need = min(need, max(math.Floor(s.Budget.Rate), 1))
	}
	return !s.Budget.Known || float64(s.Budget.Room) >= need
}

// readerDueNow reports whether a reader is due now in this run.
func readerDueNow(s discovery.Run) bool {
	next, any := readersNext(s)
	return any && !next.After(s.Now)
}

// tailEvery is the tail's interval: TailEvery, or the time a read's cost
// takes at 80% of the lane's rate when that is longer; while push is
// live, ReconcileEvery when that is longer still.
func tailEvery(s discovery.Run) time.Duration {
	d := s.TailEvery
	if s.Budget.Rate > 0 {
		cost := max(s.Budget.ReadCost, 1)
		if need := time.Duration(float64(time.Minute) * cost / (0.8 * s.Budget.Rate)); need > d {
			d = need
		}
	}
	if s.PushLive && s.ReconcileEvery > d {
		d = s.ReconcileEvery
	}
	return d
}

// dueAt is when a reader reads next: now when never read or cut short
// before, an interval after its last read; never in this run when held.
func dueAt(s discovery.Run, rd discovery.Reader, every time.Duration) (time.Time, bool) {
	switch {
	case rd.Held:
		return time.Time{}, false
	case rd.Scanning || rd.LastRead.IsZero():
		if s.Linger.Before(s.Now) {
			return s.Linger, true // overdue since the run began: read in this run
		}
		return s.Now, true
	}
	return rd.LastRead.Add(every), true
}

// runEnd is how long the run reads: its linger, its cap when agents wait
// in tail mode.
func runEnd(s discovery.Run) time.Time {
	if (s.Tail != nil || len(s.Contracts) > 0) && s.Agents.Hinted+s.Agents.Due+s.Pending > 0 || s.Cap.Before(s.Linger) {
		return s.Cap
	}
	return s.Linger
}

// dueNow reports whether a reader due at at is due now in this run.
func dueNow(s discovery.Run, at time.Time, ok bool) bool {
	return ok && !at.After(s.Now) && !at.After(runEnd(s))
}

func tailDueNow(s discovery.Run) bool {
	if s.Tail == nil || s.ContractsAreTail {
		return false
	}
	at, ok := dueAt(s, *s.Tail, tailEvery(s))
	return dueNow(s, at, ok)
}

// tailReserve is what the tail's reads due before the window ends cost:
// each its ReadCost (at least 1), the first at its due time, then one an
// interval.
func tailReserve(s discovery.Run) int64 {
	if s.Tail == nil || s.ContractsAreTail {
		return 0
	}
	at, ok := dueAt(s, *s.Tail, tailEvery(s))
	if !ok || !at.Before(s.Budget.WindowEnd) {
		return 0
	}
	return int64(math.Ceil(max(s.Budget.ReadCost, 1))) * (1 + int64(s.Budget.WindowEnd.Sub(at)/tailEvery(s)))
}

func contractEvery(s discovery.Run) time.Duration {
	if s.ContractsAreTail {
		return tailEvery(s)
	}
	// A page of every list each round, in the 20% of the rate the tail
	// leaves.
	lists := s.Lists
	if lists <= 0 {
		lists = max(len(s.Contracts), 1)
	}
	if s.Budget.Rate > 0 {
		if need := time.Duration(float64(time.Minute) * float64(lists) / (0.2 * s.Budget.Rate)); need > s.ReconcileEvery {
			return need
		}
	}
	return s.ReconcileEvery
}

// readersNext is the earliest time a reader is due within the run (any
// false: none is).
func readersNext(s discovery.Run) (next time.Time, any bool) {
	consider := func(at time.Time, ok bool) {
		if ok && !at.After(runEnd(s)) && (!any || at.Before(next)) {
			next, any = at, true
		}
	}
	switch {
	case s.Tail != nil && s.ContractsAreTail:
		consider(dueAt(s, *s.Tail, s.ReconcileEvery)) // the feed's probe
	case s.Tail != nil:
		consider(dueAt(s, *s.Tail, tailEvery(s)))
	}
	for _, c := range s.Contracts {
		consider(dueAt(s, c, contractEvery(s)))
	}
	return next, any
}

func workDueNow(s discovery.Run) bool {
	next, any := readersNext(s)
	return s.Agents.Hinted+s.Agents.Due+s.Pending > 0 || any && !next.After(s.Now)
}

// pushedWait reports whether pushed transactions wait for the
// verifications' share of a binding budget, and until when: the room
// cannot pay a read beside them, and the last batch was less than one
// request at 20% of the lane's rate ago.
func pushedWait(s discovery.Run) (time.Time, bool) {
	r := s.Budget.Rate
	if s.Pushed == 0 || !s.Budget.Known || r <= 0 || s.Budget.Room < 1 {
		return time.Time{}, false
	}
	need := math.Ceil(max(s.Budget.ReadCost, 1))
	need = min(need, max(math.Floor(r), 1))
	at := s.LastVisit.Add(time.Duration(float64(time.Minute) / (0.2 * r)))
	return at, float64(s.Budget.Room) < need+1 && s.Now.Before(at)
}

func progress(k discovery.Kind) bool {
	return k == discovery.ReadTail || k == discovery.ReadContract || k == discovery.Visit || k == discovery.Verify
}

func check(t *testing.T, name string, prop func(genRun) bool) {
	t.Helper()
	t.Run(name, func(t *testing.T) {
		t.Parallel()
		require.NoError(t, quick.Check(prop, &quick.Config{MaxCount: 20000, Rand: rand.New(rand.NewSource(26))}))
	})
}

func TestPlanProperties(t *testing.T) {
	t.Parallel()
	// What status reports as a reader's next read is the interval the
	// plan reads it at: the feed's probe's while the lists are the tail.
	check(t, "a reader's interval is the plan's", func(g genRun) bool {
		s := g.Run
		tail := tailEvery(s)
		if s.ContractsAreTail {
			tail = s.ReconcileEvery
		}
		near := func(a, b time.Duration) bool { return (a - b).Abs() < time.Microsecond } // float rounding
		return near(s.Every(discovery.ReaderTail), tail) && near(s.Every("contract:SP1.x"), contractEvery(s))
	})
	check(t, "the tail is never held back by visits", func(g genRun) bool {
		s := g.Run
		if capped(s) || !tailDueNow(s) || !readRoom(s) {
			return true
		}
		if s.Pushed > 0 { // a push's transactions first, then the tail
			if discovery.Plan(s).Kind != discovery.Verify {
				return false
			}
			s.Pending, s.Pushed, s.LastVisit = 0, 0, s.Now
		}
		if !s.Tail.LastRead.After(s.LastVisit) || s.Tail.Scanning {
			return discovery.Plan(s).Kind == discovery.ReadTail
		}
		// It read since the last visit batch: the other readers due, a
		// look at the pending and at most one batch go first, then the tail.
		tail, contracts := *s.Tail, slices.Clone(s.Contracts)
		s.Tail, s.Contracts = &tail, contracts
		batches := 0
		for range len(contracts) + 3 {
			st := discovery.Plan(s)
			switch st.Kind {
			case discovery.ReadTail:
				return batches <= 1
			case discovery.Visit:
				batches++
				s.LastVisit = s.Now
				s.Agents.Hinted, s.Agents.Due = max(0, s.Agents.Hinted-st.Agents), max(0, s.Agents.Due-st.Agents)
			case discovery.Verify: // one request, from the room beyond the tail's reserve
				s.Pending, s.Pushed, s.LastVisit = 0, 0, s.Now
			case discovery.ReadContract:
				for i := range contracts {
					if contracts[i].Name == st.Reader {
						contracts[i].LastRead, contracts[i].Scanning = s.Now, false
					}
				}
			default:
				return !tailDueNow(s)
			}
			if batches > 1 {
				return false
			}
		}
		return false
	})
	check(t, "pending looks and history visits leave the tail's reads in the window", func(g genRun) bool {
		s := g.Run
		st := discovery.Plan(s)
		// A push's transactions are verified at once, from the whole room:
		// they are the fast path, and the tail only reconciles behind them.
		if !s.Budget.Known || st.Kind != discovery.Verify && (st.Kind != discovery.Visit || s.Agents.Hinted > 0) ||
			st.Kind == discovery.Verify && s.Pushed > 0 {
			return true
		}
		return s.Budget.Room-tailReserve(s) >= int64(max(st.Agents, 1))
	})
	check(t, "pushed transactions are verified at once but for the verifications' share", func(g genRun) bool {
		s := g.Run
		if capped(s) || s.Pushed == 0 || !hasRoom(s) {
			return true
		}
		_, waits := pushedWait(s)
		return (discovery.Plan(s).Kind == discovery.Verify) != waits
	})
	check(t, "no step exceeds its lane's room", func(g genRun) bool {
		s := g.Run
		st := discovery.Plan(s)
		if !progress(st.Kind) {
			return true
		}
		if capped(s) || !hasRoom(s) {
			return false
		}
		if st.Kind == discovery.Verify {
			return s.Pending > 0
		}
		if st.Kind == discovery.Visit {
			due := s.Agents.Hinted + s.Agents.Due
			return st.Agents >= 1 && st.Agents <= due && (!s.Budget.Known || int64(st.Agents) <= s.Budget.Room)
		}
		return readRoom(s) // a read starts only with room for what it costs
	})
	check(t, "a run with budget and work makes progress", func(g genRun) bool {
		s := g.Run
		if capped(s) || !hasRoom(s) || !workDueNow(s) {
			return true
		}
		st := discovery.Plan(s)
		if progress(st.Kind) {
			return true
		}
		// Pushed transactions wait for the verifications' share of a
		// binding budget, no longer.
		if at, ok := pushedWait(s); ok && (st.Kind == discovery.Stop || !st.Until.After(at)) {
			return true
		}
		// A due reader whose read the window's rest cannot pay waits for
		// the window to roll (hinted agents still go).
		if !readRoom(s) && readerDueNow(s) && s.Agents.Hinted == 0 {
			return st.Kind == discovery.Stop || !st.Until.After(s.Budget.WindowEnd)
		}
		// Contracts' lists due (the reconciler's, not the tail's) leave
		// the window's rest to the tail's reads due before it ends too:
		// then the plan waits for the tail's next read.
		if s.Tail != nil && !s.ContractsAreTail && s.Agents.Hinted == 0 && readRoom(s) {
			if tail, ok := dueAt(s, *s.Tail, tailEvery(s)); ok && tail.After(s.Now) && tail.Before(s.Budget.WindowEnd) &&
				(st.Kind == discovery.Stop || st.Kind == discovery.Wait && st.Until.Equal(tail)) {
				return true
			}
		}
		// The other exception: history visits and pending looks leave the
		// window's rest to the tail's read due before the window ends;
		// hinted agents and due readers never wait for it.
		next, _ := readersNext(s)
		return s.Agents.Hinted == 0 && s.Agents.Due+s.Pending > 0 && s.Budget.Known && next.After(s.Now) &&
			next.Before(s.Budget.WindowEnd) && (st.Kind == discovery.Stop || st.Until.Equal(next))
	})
	check(t, "a wait is never in the past nor beyond the next due time", func(g genRun) bool {
		s := g.Run
		st := discovery.Plan(s)
		if st.Kind != discovery.Wait {
			return true
		}
		if !st.Until.After(s.Now) || s.MaxWait > 0 && st.Until.Sub(s.Now) > s.MaxWait || st.Until.After(runEnd(s)) {
			return false
		}
		// The soonest anything can go: a reader's or the agents' due time
		// (now, when due), or when the budget has room again.
		bound, any := readersNext(s)
		if a := s.Agents.Next; !a.IsZero() && !a.After(runEnd(s)) && (!any || a.Before(bound)) {
			bound, any = a, true
		}
		tail, tailAny := readersNext(discovery.Run{Now: s.Now, Tail: s.Tail, TailEvery: s.TailEvery, Budget: s.Budget,
			Agents: s.Agents, Linger: s.Linger, Cap: s.Cap})
		switch {
		case s.Agents.Hinted == 0 && s.Agents.Due+s.Pending > 0 && hasRoom(s) && s.Tail != nil && !s.ContractsAreTail &&
			tailAny && tail.Before(s.Budget.WindowEnd):
			bound = tail // the window's rest kept for the tail's read
		case s.Agents.Hinted == 0 && readRoom(s) && readerDueNow(s) && s.Tail != nil && !s.ContractsAreTail &&
			tailAny && tail.After(s.Now) && tail.Before(s.Budget.WindowEnd):
			bound = tail // the reconciler's lists leave the window's rest to the tail's read
		case s.Agents.Hinted+s.Agents.Due+s.Pending > 0 || !any:
			bound = s.Now
		}
		if at, ok := pushedWait(s); ok && at.After(bound) {
			bound = at // the verifications' share of a binding budget
		}
		if hasRoom(s) && !readRoom(s) && readerDueNow(s) && s.Agents.Hinted == 0 && s.Budget.WindowEnd.After(bound) {
			bound = s.Budget.WindowEnd // a read the window's rest cannot pay
		}
		if !hasRoom(s) && s.Budget.RoomAt.After(bound) {
			bound = s.Budget.RoomAt
		}
		if !bound.After(s.Now) {
			bound = s.Now.Add(time.Second) // a due reader without room: a short look again
		}
		return !st.Until.After(bound)
	})
	check(t, "every step has a reason, a stop says why", func(g genRun) bool {
		st := discovery.Plan(g.Run)
		return st.Reason != "" && (st.Kind != discovery.Stop || st.StoppedBy != "")
	})
	check(t, "a stop's next run is neither past nor beyond the cap", func(g genRun) bool {
		s := g.Run
		st := discovery.Plan(s)
		if st.Kind != discovery.Stop || st.Until.IsZero() {
			return true
		}
		return !st.Until.Before(s.Now) && !st.Until.After(s.Now.Add(discovery.NextRunCap))
	})
	check(t, "agents mode reads nothing but the agents", func(g genRun) bool {
		s := g.Run
		s.Tail, s.Contracts, s.ContractsAreTail = nil, nil, false
		k := discovery.Plan(s).Kind
		return k != discovery.ReadTail && k != discovery.ReadContract
	})
}

// TestPlanRun drives the plan through a run in virtual time against a
// budget of a window's requests, with a backlog of history visits that
// could spend every window: the tail still reads every interval.
func TestPlanRun(t *testing.T) {
	t.Parallel()
	for _, perWindow := range []int64{6, 30, 450} {
		t.Run(fmt.Sprint(perWindow), func(t *testing.T) {
			t.Parallel()
			now := t0
			tail := discovery.Reader{Name: discovery.ReaderTail}
			used, windowEnd := int64(0), now.Add(time.Minute)
			var reads []time.Time
			s := discovery.Run{Tail: &tail, TailEvery: 10 * time.Second, ReconcileEvery: time.Hour,
				Agents: discovery.Agents{Due: 1000}, Linger: now.Add(10 * time.Minute), Cap: now.Add(10 * time.Minute)}
			for steps := 0; steps < 10000; steps++ {
				if !now.Before(windowEnd) {
					used, windowEnd = 0, windowEnd.Add(time.Minute)
				}
				s.Now = now
				s.Budget = discovery.Budget{Known: true, Room: perWindow - used, WindowEnd: windowEnd,
					Rate: float64(perWindow), ReadCost: 2, Why: "minute", RoomAt: windowEnd}
				st := discovery.Plan(s)
				switch st.Kind {
				case discovery.ReadTail:
					used += 2
					now = now.Add(time.Second)
					tail.LastRead = now
					reads = append(reads, now)
				case discovery.Visit:
					used += int64(st.Agents)
					now = now.Add(time.Second)
					s.LastVisit = now
				case discovery.Wait:
					require.True(t, st.Until.After(now), st.Reason)
					now = st.Until
				case discovery.Stop:
					steps = 10000
				}
				require.LessOrEqual(t, used, perWindow, "a step went past the window's room")
			}
			require.NotEmpty(t, reads)
			every := s.TailInterval()
			for i := 1; i < len(reads); i++ {
				require.LessOrEqual(t, reads[i].Sub(reads[i-1]), every+2*time.Second, // a read and one batch
					"the tail waited for visits: read %d after %s (every %s)", i, reads[i].Sub(reads[i-1]), every)
			}
		})
	}
}

func TestNextRun(t *testing.T) {
	t.Parallel()
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	tests := []struct {
		name       string
		giveAgents discovery.Agents
		giveBudget discovery.Budget
		want       time.Time
	}{
		{"nothing due", discovery.Agents{}, discovery.Budget{}, time.Time{}},
		{"the earliest agent", discovery.Agents{Next: at(2 * time.Minute)}, discovery.Budget{}, at(2 * time.Minute)},
		{"agents due: now", discovery.Agents{Due: 3}, discovery.Budget{Known: true, Room: 5}, at(0)},
		{"far ahead: a hint waits 5 minutes at most", discovery.Agents{Next: at(time.Hour)}, discovery.Budget{}, at(discovery.NextRunCap)},
		{"waiting for the window: its reset", discovery.Agents{Due: 3}, discovery.Budget{Known: true, RoomAt: at(30 * time.Second)}, at(30 * time.Second)},
		{"waiting for the month's credit: one request's worth, no minimum run", discovery.Agents{Due: 3},
			discovery.Budget{Known: true, RoomAt: at(17 * time.Second)}, at(17 * time.Second)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, discovery.NextRun(discovery.Run{Now: t0, Agents: tt.giveAgents, Budget: tt.giveBudget}))
		})
	}
}

// TestNextRunResumesAHeldReader: a read the budget cut short goes on at
// the next run, which is due when the budget has room again, not when
// the reader's interval or NextRunCap would have it (the chain bench's
// month plan waited 5 minutes for it).
func TestNextRunResumesAHeldReader(t *testing.T) {
	t.Parallel()
	room := discovery.Budget{Known: true, RoomAt: t0.Add(17 * time.Second)}
	held := discovery.Reader{Name: "contract:a", LastRead: t0.Add(-time.Minute), Scanning: true, Held: true}
	probe := discovery.Reader{Name: discovery.ReaderTail, LastRead: t0}
	s := discovery.Run{Now: t0, Tail: &probe, Contracts: []discovery.Reader{held}, ContractsAreTail: true,
		TailEvery: 10 * time.Second, ReconcileEvery: 15 * time.Minute, Budget: room}
	require.Equal(t, t0.Add(17*time.Second), discovery.NextRun(s))
}

// TestPlanPush: while push is live (SPEC §5.0 "Push") the tail reads at
// the reconciling cadence, and the tail's interval again once it is not;
// transactions a push named are verified before any read that is due.
func TestPlanPush(t *testing.T) {
	t.Parallel()
	tail := discovery.Reader{Name: discovery.ReaderTail, LastRead: t0.Add(-30 * time.Second)}
	s := discovery.Run{Now: t0, Tail: &tail, TailEvery: 10 * time.Second, ReconcileEvery: 15 * time.Minute,
		LastVisit: t0, Linger: t0.Add(time.Minute), Cap: t0.Add(4 * time.Minute),
		Budget: discovery.Budget{Known: true, Room: 40, WindowEnd: t0.Add(30 * time.Second), Rate: 450, ReadCost: 1}}
	require.Equal(t, discovery.ReadTail, discovery.Plan(s).Kind, "push down: the tail is 20 s overdue")

	s.PushLive = true
	step := discovery.Plan(s)
	require.Equal(t, discovery.Stop, step.Kind, "push live: nothing is due before the run ends")
	require.Equal(t, t0.Add(discovery.NextRunCap), step.Until, "the tail is due 15 m after its read: the next run at NextRunCap")
	require.Equal(t, 15*time.Minute, s.Every(discovery.ReaderTail))

	s.PushLive, s.Pending, s.Pushed = false, 3, 2
	require.Equal(t, discovery.Verify, discovery.Plan(s).Kind, "pushed transactions before the overdue tail")
	s.Budget.Room = 0
	s.Budget.RoomAt, s.Budget.Why = t0.Add(10*time.Second), "minute"
	require.NotEqual(t, discovery.Verify, discovery.Plan(s).Kind, "no room: no verify")

	// The month's pace (3.45 a minute) and pushes faster than it: with
	// room for one request and not for a read beside it, the pushed
	// transactions batch up, a batch at most every request at 20% of
	// the pace (87 s), so that the readers' reads find their room.
	s.PushLive, s.Budget.Room, s.Budget.Rate, s.Budget.ReadCost = true, 1, 3.45, 40
	s.LastVisit = t0.Add(-10 * time.Second)
	step = discovery.Plan(s)
	require.Equal(t, discovery.Wait, step.Kind, step.Reason)
	rate := 3.45
	require.Equal(t, s.LastVisit.Add(time.Duration(float64(time.Minute)/(0.2*rate))), step.Until)
	s.LastVisit = t0.Add(-90 * time.Second)
	require.Equal(t, discovery.Verify, discovery.Plan(s).Kind, "a share's gap since the last batch")
	s.LastVisit, s.Budget.Room = t0.Add(-10*time.Second), 4
	require.Equal(t, discovery.Verify, discovery.Plan(s).Kind, "room for a read beside them: at once")
}

// TestPlanReadsTheListsLongestDueFirst: with room for one read, the plan
// reads the contracts' list never read (or cut short) first, then the
// one due longest, whatever the catalog's order: the first lists, due
// again by every run, must not take a trickle of room from the rest.
func TestPlanReadsTheListsLongestDueFirst(t *testing.T) {
	t.Parallel()
	now := t0
	read := func(name string, ago time.Duration) discovery.Reader {
		return discovery.Reader{Name: discovery.ContractReader(name), LastRead: now.Add(-ago)}
	}
	probe := discovery.Reader{Name: discovery.ReaderTail, LastRead: now}
	s := discovery.Run{Now: now, Tail: &probe, ContractsAreTail: true, TailEvery: 10 * time.Second,
		ReconcileEvery: 5 * time.Minute, Linger: now.Add(time.Minute), Cap: now.Add(4 * time.Minute),
		Budget: discovery.Budget{Known: true, Room: 1, Rate: 1000, ReadCost: 1, WindowEnd: now.Add(time.Minute)}}
	s.Contracts = []discovery.Reader{read("SP.a", time.Hour), read("SP.b", 2*time.Hour), {Name: discovery.ContractReader("SP.c")}}
	require.Equal(t, discovery.ContractReader("SP.c"), discovery.Plan(s).Reader, "the list never read")
	s.Contracts[2] = read("SP.c", time.Hour+time.Minute)
	require.Equal(t, discovery.ContractReader("SP.b"), discovery.Plan(s).Reader, "the list due longest")
	s.Contracts[0].Scanning = true
	require.Equal(t, discovery.ContractReader("SP.a"), discovery.Plan(s).Reader, "the list cut short")
}
