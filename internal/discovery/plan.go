package discovery

import (
	"math"
	"slices"
	"time"

	"github.com/pacer-dev/pacer"
)

// # One plan
//
// What a sweep run does next is Plan's answer (SPEC §5.0 "One plan"): the
// readers' states, the budget's snapshot and one instant in, the next
// step and its reason out. The sweep activity carries steps out and
// reports the last one's reason; it decides nothing itself.

// Kind is what a step does.
type Kind string

// Steps.
const (
	ReadTail     Kind = "readTail"
	ReadContract Kind = "readContract"
	Visit        Kind = "visit"
	Verify       Kind = "verify"
	Wait         Kind = "wait"
	Stop         Kind = "stop"
)

// VisitBatch is the most agents one Visit step takes: their first pages
// are read together and their calls verified in one batch.
const VisitBatch = 8

// TailShare is the share of the sweep's rate the tail plans to spend when
// the budget binds: it is served first, but leaves the rest to the
// contracts' lists and the agents' visits so that neither starves.
const TailShare = 0.8

// Reader is one reader as the plan sees it.
type Reader struct {
	Name string
	// LastRead is when its last complete read ended (zero: never).
	LastRead time.Time
	// Scanning is true when a read was cut short in an earlier run: it
	// goes on at once. Held is true when it stopped short in this run
	// (Hiro failed, the budget cut it): it goes on at the next run.
	Scanning, Held bool
}

// Agents are the agents due for a visit now.
type Agents struct {
	// Hinted are due by a hint, a registration or a claim's change; the
	// rest (Due) by their history or the policy.
	Hinted, Due int
	// Next is when the next agent not due now is (zero: unknown).
	Next time.Time
}

// Budget is the sweep lane's snapshot of the shared budget (SPEC §5.4).
type Budget struct {
	// Known is false when the budget could not be read: steps go, and
	// their requests find out.
	Known bool
	// Room is what the lane may take now, the minute window's and the
	// month's (banked pace included) together; RoomAt is when it may take
	// one again when Room is 0, and Why what binds then.
	Room   int64
	RoomAt time.Time
	Why    string
	// WindowEnd is when the minute window ends.
	WindowEnd time.Time
	// Rate is the lane's sustainable requests a minute (0: unbounded).
	Rate float64
	// ReadCost is what a tail read costs, the recent reads' average (≥ 1).
	ReadCost float64
}

// Run is everything Plan decides by: a sweep run's readers, agents and
// budget at one instant.
type Run struct {
	Now time.Time
	// Tail is nil in agents mode (PACER_DISCOVERY=agents): the agents'
	// policy is then the only reader.
	Tail *Reader
	// Contracts are the allowlisted contracts' lists; ContractsAreTail is
	// true when they are where the tail reads (the feed is off or too
	// dear), then read at the tail's cadence.
	Contracts        []Reader
	ContractsAreTail bool
	TailEvery        time.Duration
	ReconcileEvery   time.Duration
	// Lists is how many allowlisted contracts' lists a whole read of the
	// contracts' readers reads (0: one for each of Contracts).
	Lists int
	// OpenGaps is true while ranges the tail gave up on are not yet
	// covered by the contracts' lists: the reconciler, the one reader
	// that finds their swaps, then reads every ReconcileEvery whatever
	// the budget.
	OpenGaps bool
	Agents   Agents
	// Pending is how many pending transactions are due for a look again
	// (at most a batch): a Verify step takes them. Pushed is how many of
	// them a push named (SPEC §5.0 "Push"): they are verified at once,
	// before any read.
	Pending, Pushed int
	// PushLive is true while Hiro's WebSocket delivers (every socket had
	// a block within the silence bound): the readers then read at
	// ReconcileEvery, the tail's interval applying again once it is not.
	PushLive bool
	// LastVisit is when the run's last Visit or Verify step ended, or
	// when the run began: while agents or pending transactions are due, a
	// reader that read since then waits for one such step before it reads
	// again, so readers whose reads outlast their interval cannot starve
	// them.
	LastVisit time.Time
	Budget    Budget
	// Linger is when the run stops reading for more; Cap when it ends
	// whatever is due. MaxWait is the longest one wait may be (the
	// activity's heartbeats). MaxRequests caps the run's requests (0:
	// none), Spent is what it sent.
	Linger, Cap        time.Time
	MaxWait            time.Duration
	MaxRequests, Spent int
}

// Step is the plan's answer.
type Step struct {
	Kind Kind
	// Reader is ReadContract's reader.
	Reader string
	// Agents is how many agents Visit takes, hinted ones first.
	Agents int
	// Until is when a Wait ends, or when the next run is due after a
	// Stop (zero: nothing is).
	Until time.Time
	// StoppedBy is a Stop's pacer.Stopped… value or the budget's window.
	StoppedBy string
	// Reason is why, as status shows it.
	Reason string
}

// TailInterval is how long after a read the tail reads again: every
// TailEvery, stretched when the budget binds so that a read's cost
// (Budget.ReadCost) fits TailShare of the lane's rate (≤ 0 or +Inf: no
// stretch).
func (s Run) TailInterval() time.Duration {
	r := s.Budget.Rate
	if r <= 0 || math.IsInf(r, 1) || math.IsNaN(r) {
		return s.TailEvery
	}
	return max(s.TailEvery, time.Duration(max(s.Budget.ReadCost, 1)/(r*TailShare)*float64(time.Minute)))
}

// Due is when the reader reads next at interval every (zero: now).
func (r Reader) Due(every time.Duration) time.Time {
	if r.Scanning || r.LastRead.IsZero() {
		return time.Time{}
	}
	return r.LastRead.Add(every)
}

// Every is the interval the plan reads the reader name at: the tail's
// (tailEvery) for the tail, or for the contracts' lists while they are
// the tail; ReconcileEvery for the reconciler's lists, or for the feed's
// probe while the lists are the tail.
func (s Run) Every(name string) time.Duration {
	switch {
	case (name == ReaderTail) != s.ContractsAreTail:
		return s.tailEvery()
	case name == ReaderTail:
		return s.ReconcileEvery // the feed's probe: one page
	}
	return s.reconcileEvery()
}

// reconcileEvery is how often the reconciler reads the contracts' lists:
// every ReconcileEvery, stretched when the budget binds so that a page of
// each list fits what the tail leaves of the lane's rate (1 - TailShare),
// unless gaps are open.
func (s Run) reconcileEvery() time.Duration {
	r := s.Budget.Rate
	if s.OpenGaps || r <= 0 || math.IsInf(r, 1) || math.IsNaN(r) {
		return s.ReconcileEvery
	}
	lists := s.Lists
	if lists <= 0 {
		lists = len(s.Contracts)
	}
	return max(s.ReconcileEvery, time.Duration(float64(max(lists, 1))/(r*(1-TailShare))*float64(time.Minute)))
}

// tailEvery is how often the tail reads: TailInterval, or, while push is
// live, its reconciling cadence (pushes bring the new calls; the tail
// only closes what a push missed).
func (s Run) tailEvery() time.Duration {
	if s.PushLive {
		return max(s.ReconcileEvery, s.TailInterval())
	}
	return s.TailInterval()
}

// room is what the lane may take now (unbounded when unknown).
func (b Budget) room() int64 {
	if !b.Known {
		return math.MaxInt32
	}
	return b.Room
}

// readNeed is the room a reader's read needs before it starts: what a
// read cost when last observed, but never more than the lane's rate, so a
// read dearer than a minute's pace still goes once the window is whole.
func (b Budget) readNeed() int64 {
	need := int64(math.Ceil(max(b.ReadCost, 1)))
	if b.Rate > 0 {
		need = min(need, max(int64(b.Rate), 1))
	}
	return need
}

// due is a reader's step and when it is due.
type due struct {
	step Step
	at   time.Time
	// read is when it last read in full (zero: never, or cut short).
	read time.Time
	// tail is true for the tail's own reads (the feed's, or the
	// contracts' lists when they are the tail).
	tail bool
}

// readers are the readers not held, each with its step and due time.
func (s Run) readers() []due {
	var out []due
	at := func(t time.Time) time.Time {
		if t.IsZero() { // never read, or cut short before: due since the run began
			return earliest(s.Now, s.Linger)
		}
		return t
	}
	last := func(r Reader) time.Time {
		if r.Scanning {
			return time.Time{}
		}
		return r.LastRead
	}
	if s.Tail != nil && !s.Tail.Held {
		why := "the tail is due"
		if s.ContractsAreTail {
			why = "the feed's probe is due (the contracts' lists are the tail)"
		}
		out = append(out, due{Step{Kind: ReadTail, Reason: why}, at(s.Tail.Due(s.Every(ReaderTail))), last(*s.Tail), !s.ContractsAreTail})
	}
	why := ": its list is due for the reconciler"
	if s.ContractsAreTail {
		why = ": its list is due as the tail"
	}
	lists := len(out)
	for _, c := range s.Contracts {
		if !c.Held {
			out = append(out, due{Step{Kind: ReadContract, Reader: c.Name, Reason: c.Name + why}, at(c.Due(s.Every(c.Name))), last(c), s.ContractsAreTail})
		}
	}
	// The lists longest due first, those never read or cut short (due
	// since the run began) before any: in the catalog's order, the first
	// lists, due again by the next run, took a trickle of room (the
	// month's pace) at every run and the others were never read or never
	// went on (the chain bench's month plan: two of five lists read once
	// in a day).
	slices.SortStableFunc(out[lists:], func(a, b due) int {
		if a.read.IsZero() != b.read.IsZero() {
			if a.read.IsZero() {
				return -1
			}
			return 1
		}
		return a.at.Compare(b.at)
	})
	return out
}

// tailMode is true when a reader reads the chain for every agent.
func (s Run) tailMode() bool { return s.Tail != nil || len(s.Contracts) > 0 }

// end is when the run stops reading for more: its linger, or its cap
// while agents wait for the budget in tail mode (the tail goes on beside
// them).
func (s Run) end() time.Time {
	if s.Cap.Before(s.Linger) || s.tailMode() && s.waiting() > 0 {
		return s.Cap
	}
	return s.Linger
}

// waiting is the work due now beside the readers: agents to visit and
// pending transactions to look at again.
func (s Run) waiting() int { return s.Agents.Hinted + s.Agents.Due + s.Pending }

// Plan is the run's next step.
func Plan(s Run) Step {
	now, end := s.Now, s.end()
	switch {
	case s.MaxRequests > 0 && s.Spent >= s.MaxRequests:
		return stop(s, pacer.StoppedMaxRequests, "the run's request cap is spent")
	case !now.Before(s.Cap):
		return stop(s, pacer.StoppedDeadline, "the run's time cap is reached")
	}
	room, agents := s.Budget.room(), s.Agents.Hinted+s.Agents.Due
	pushedNow := s.Pushed > 0 && room >= 1 && s.verifyNow()
	if pushedNow {
		return Step{Kind: Verify, Reason: "a push named transactions: they are verified at once"}
	}
	readers := s.readers()
	var tailDue, next time.Time
	for _, d := range readers {
		if d.tail {
			tailDue = earliest(tailDue, d.at)
		}
	}
	// Visits may go now: they have room beside the tail's reads due
	// before the window ends (hinted ones need only room).
	visits := agents > 0 && room >= 1 && (s.Agents.Hinted > 0 || room-s.tailReserve(tailDue) >= 1)
	verify := s.Pending > 0 && s.Pushed == 0 && room-s.tailReserve(tailDue) >= 1
	var read *Step
	readerDue, forTail := false, false
	for _, d := range readers {
		if d.at.After(end) {
			continue // the next run's
		}
		next = earliest(next, d.at)
		switch {
		case d.at.After(now):
		case (visits || verify) && !d.read.IsZero() && d.read.After(s.LastVisit):
			// It read since the last batch: the visits' (or the pending
			// transactions') turn first.
		case read == nil && !d.tail && room >= s.Budget.readNeed() && room-s.tailReserve(tailDue) < s.Budget.readNeed():
			// The reconciler's lists leave the tail the room of its reads
			// due before the window ends, as visits do: a round of many
			// contracts' pages would hold the tail back otherwise.
			forTail = true
		case read == nil:
			readerDue, read = true, &d.step
		}
	}
	need := s.Budget.readNeed()
	if read != nil && room >= need {
		return *read
	}
	if verify {
		return Step{Kind: Verify, Reason: "pending transactions are due for a look again"}
	}
	if forTail && read == nil && !visits {
		return wait(s, tailDue, "the window's rest is kept for the tail's next read")
	}
	if visits {
		n, why := min(agents, VisitBatch, int(room-1-s.tailReserve(tailDue))), "agents are due"
		if s.Agents.Hinted > 0 {
			n, why = min(s.Agents.Hinted, VisitBatch, int(room-1)), "hinted agents are due"
		}
		return Step{Kind: Visit, Agents: max(n, 1), Reason: why}
	}
	if s.Pushed > 0 && room >= 1 {
		at := s.LastVisit.Add(s.verifyGap())
		if readerDue && room < need {
			at = earliest(at, s.Budget.WindowEnd)
		}
		return wait(s, at, "pushed transactions wait for the verifications' share of the budget")
	}
	if readerDue && room >= 1 && room < need {
		// A read started now would find no room for the details of its
		// page, be held, and read the page again next time.
		return wait(s, s.Budget.WindowEnd, "the window's rest is less than a read costs")
	}
	if s.waiting() > 0 && room >= 1 {
		return wait(s, tailDue, "the window's rest is kept for the tail's next read")
	}
	if s.waiting() > 0 || readerDue {
		return wait(s, s.Budget.RoomAt, "the budget has no room: "+s.Budget.Why)
	}
	if a := s.Agents.Next; !a.After(end) {
		next = earliest(next, a)
	}
	if next.IsZero() {
		return stop(s, pacer.StoppedDone, "nothing is due before the run ends")
	}
	return wait(s, next, "waiting for what is due next")
}

// verifyNow reports whether pushed transactions are verified now: at
// once while the budget does not bind or the room pays a reader's read
// beside them; otherwise once a verifyGap after the last batch, so that
// they batch up within the share of the lane's rate the tail leaves.
func (s Run) verifyNow() bool {
	r := s.Budget.Rate
	if !s.Budget.Known || r <= 0 || math.IsInf(r, 1) || math.IsNaN(r) || s.Budget.room() >= s.Budget.readNeed()+1 {
		return true
	}
	return !s.Now.Before(s.LastVisit.Add(s.verifyGap()))
}

// verifyGap is one request at the share of the lane's rate the tail
// leaves (1 - TailShare).
func (s Run) verifyGap() time.Duration {
	r := s.Budget.Rate
	if r <= 0 || math.IsInf(r, 1) || math.IsNaN(r) {
		return 0
	}
	return time.Duration(float64(time.Minute) / (r * (1 - TailShare)))
}

// tailReserve is what the tail's reads due from due to the window's end
// will take (0 when none is due before it ends).
func (s Run) tailReserve(due time.Time) int64 {
	every := s.tailEvery()
	if due.IsZero() || !s.Budget.Known || every <= 0 || !due.Before(s.Budget.WindowEnd) {
		return 0
	}
	reads := 1 + int64(s.Budget.WindowEnd.Sub(due)/every)
	return int64(math.Ceil(max(s.Budget.ReadCost, 1))) * reads
}

// wait waits until at, or stops when at is past the run's end or one
// wait's bound. A zero or past at (room unknown) is a short wait.
func wait(s Run, at time.Time, why string) Step {
	if at.IsZero() || !at.After(s.Now) {
		at = s.Now.Add(time.Second)
	}
	if at.After(s.end()) || (s.MaxWait > 0 && at.Sub(s.Now) > s.MaxWait) {
		by := pacer.StoppedDone
		if s.Budget.Known && s.Budget.Room < 1 || s.waiting() > 0 {
			by = s.Budget.Why
		}
		return stop(s, by, why)
	}
	return Step{Kind: Wait, Until: at, Reason: why}
}

// stop ends the run; Until is when the next run is due: the earliest
// reader or agent, or when the budget has room again for work that waits
// for it, within NextRunCap.
func stop(s Run, by, why string) Step {
	if by == "" {
		by = pacer.StoppedDone
	}
	return Step{Kind: Stop, StoppedBy: by, Until: NextRun(s), Reason: why}
}

// NextRunCap is the latest a run reports the next: a hint that makes an
// agent due waits at most this long.
const NextRunCap = 5 * time.Minute

// NextRun is when the next run should start (zero: nothing is due): the
// earliest reader or agent (a reader held in this run at once), or, for
// work that waits for the budget, when it has room again; within
// NextRunCap.
func NextRun(s Run) time.Time {
	var next time.Time
	for _, d := range s.readers() {
		next = earliest(next, d.at)
	}
	held := s.Tail != nil && s.Tail.Held
	for _, c := range s.Contracts {
		held = held || c.Held
	}
	if held { // cut short in this run: it goes on at the next, as soon as it may
		next = earliest(next, s.Now)
	}
	if s.waiting() > 0 {
		next = earliest(next, s.Now)
	} else {
		next = earliest(next, s.Agents.Next)
	}
	if next.IsZero() {
		return next
	}
	if s.Budget.Known && s.Budget.Room < 1 && next.Before(s.Budget.RoomAt) {
		next = s.Budget.RoomAt // work waits for the budget, not for its time
	}
	switch cap := s.Now.Add(NextRunCap); {
	case next.Before(s.Now):
		return s.Now
	case next.After(cap):
		return cap
	}
	return next
}

// earliest is the earlier of two times, zero being none.
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || !b.IsZero() && b.Before(a) {
		return b
	}
	return a
}
