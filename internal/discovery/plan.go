package discovery

import (
	"math"
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
	// Scanning is true when a read was cut short: it goes on at once.
	Scanning bool
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
	// ReadCost is what a tail read cost when last observed (≥ 1).
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
	Agents           Agents
	Budget           Budget
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
// TailEvery, stretched when the budget binds so that a read's cost fits
// TailShare of the lane's rate.
func (s Run) TailInterval() time.Duration {
	return TailInterval(s.TailEvery, s.Budget.ReadCost, s.Budget.Rate)
}

// TailInterval is every, stretched so that a read costing costPerRead
// requests fits TailShare of ratePerMinute (≤ 0 or +Inf: no stretch).
func TailInterval(every time.Duration, costPerRead, ratePerMinute float64) time.Duration {
	r := ratePerMinute
	if r <= 0 || math.IsInf(r, 1) || math.IsNaN(r) {
		return every
	}
	return max(every, time.Duration(max(costPerRead, 1)/(r*TailShare)*float64(time.Minute)))
}

// Due is when the reader reads next at interval every.
func (r Reader) Due(every time.Duration) time.Time {
	if r.Scanning || r.LastRead.IsZero() {
		return time.Time{}
	}
	return r.LastRead.Add(every)
}

// ContractEvery is the contracts' lists' interval.
func (s Run) ContractEvery() time.Duration {
	if s.ContractsAreTail {
		return s.TailInterval()
	}
	return s.ReconcileEvery
}

// room is what the lane may take now (unbounded when unknown).
func (b Budget) room() int64 {
	if !b.Known {
		return math.MaxInt32
	}
	return b.Room
}

// Plan is the run's next step.
func Plan(s Run) Step {
	now := s.Now
	switch {
	case s.MaxRequests > 0 && s.Spent >= s.MaxRequests:
		return stop(s, pacer.StoppedMaxRequests, "the run's request cap is spent")
	case !now.Before(s.Cap):
		return stop(s, pacer.StoppedDeadline, "the run's time cap is reached")
	}
	room := s.Budget.room()
	tailDue, tailEvery := time.Time{}, s.TailInterval()
	if s.Tail != nil && !s.ContractsAreTail {
		tailDue = s.Tail.Due(tailEvery)
		if !tailDue.After(now) && room >= 1 {
			return Step{Kind: ReadTail, Reason: "the tail is due"}
		}
	}
	cEvery := s.ContractEvery()
	for _, c := range s.Contracts {
		if due := c.Due(cEvery); !due.After(now) && room >= 1 {
			why := "its list is due for the reconciler"
			if s.ContractsAreTail {
				why = "its list is due as the tail"
			}
			return Step{Kind: ReadContract, Reader: c.Name, Reason: c.Name + ": " + why}
		}
		if s.ContractsAreTail && (tailDue.IsZero() || c.Due(cEvery).Before(tailDue)) {
			tailDue = c.Due(cEvery)
		}
	}
	due := s.Agents.Hinted + s.Agents.Due
	if due > 0 && room >= 1 {
		n := min(due, VisitBatch, int(room-1))
		why := "agents are due"
		if s.Agents.Hinted > 0 {
			n, why = min(s.Agents.Hinted, VisitBatch, int(room-1)), "hinted agents are due"
		} else if keep := s.tailReserve(tailDue, tailEvery); room-keep < 1 {
			// The window's rest is the tail's reads before it ends.
			return wait(s, tailDue, "the window's rest is kept for the tail's next read")
		} else {
			n = min(n, int(room-keep-1))
		}
		return Step{Kind: Visit, Agents: max(n, 1), Reason: why}
	}
	next := tailDue
	for _, c := range s.Contracts {
		next = earliest(next, c.Due(cEvery))
	}
	if due > 0 || !next.IsZero() && !next.After(now) {
		// Work waits for the budget only: the lane has no room.
		return wait(s, s.Budget.RoomAt, "the budget has no room: "+s.Budget.Why)
	}
	if next = earliest(next, s.Agents.Next); next.IsZero() {
		return stop(s, pacer.StoppedDone, "nothing is due")
	}
	return wait(s, next, "waiting for what is due next")
}

// tailReserve is what the tail's reads due before the window ends will
// take (0 when the tail has not read in the run's knowledge).
func (s Run) tailReserve(due time.Time, every time.Duration) int64 {
	if due.IsZero() || !s.Budget.Known || every <= 0 || !due.Before(s.Budget.WindowEnd) {
		return 0
	}
	reads := 1 + int64(s.Budget.WindowEnd.Sub(due)/every)
	return int64(math.Ceil(max(s.Budget.ReadCost, 1))) * reads
}

// wait waits until at, or stops when at is past what the run may wait
// for: its linger (the cap while agents are due in tail mode), or one
// wait's bound. A zero or past at (unknown room) is a short wait.
func wait(s Run, at time.Time, why string) Step {
	end := s.Linger
	if s.Cap.Before(end) || s.Tail != nil && s.Agents.Hinted+s.Agents.Due > 0 {
		end = s.Cap // a backlog keeps the run reading the tail while it waits
	}
	if at.IsZero() || !at.After(s.Now) {
		at = s.Now.Add(time.Second)
	}
	if at.After(end) || (s.MaxWait > 0 && at.Sub(s.Now) > s.MaxWait) {
		by := pacer.StoppedDone
		if s.Agents.Hinted+s.Agents.Due > 0 || !s.Budget.RoomAt.IsZero() && s.Budget.room() < 1 {
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

// NextRun is when the next run should start (zero: nothing is due).
func NextRun(s Run) time.Time {
	var next time.Time
	if s.Tail != nil && !s.ContractsAreTail {
		next = s.Tail.Due(s.TailInterval())
		if next.IsZero() {
			next = s.Now
		}
	}
	for _, c := range s.Contracts {
		d := c.Due(s.ContractEvery())
		if d.IsZero() {
			d = s.Now
		}
		next = earliest(next, d)
	}
	if s.Agents.Hinted+s.Agents.Due > 0 {
		next = earliest(next, s.Now)
	} else {
		next = earliest(next, s.Agents.Next)
	}
	if next.IsZero() {
		return next
	}
	if s.Budget.Known && s.Budget.room() < 1 && next.Before(s.Budget.RoomAt) {
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
