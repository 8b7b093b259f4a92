package cron

import (
	"slices"
	"time"

	"github.com/pacer-dev/pacer"
)

// OnTime is how long after its due time an occurrence still counts as on
// time: a timer that fires a little late, a worker restart that takes a
// few seconds, do not make it "missed". Only the latest due occurrence can
// be on time.
const OnTime = 30 * time.Second

// Horizon is how far back a late wake-up looks. It is the task_runs
// ledger's retention: an occurrence older than that would be deleted as
// soon as it was recorded, so it is neither run nor listed, and Plan
// reports the stretch it left out instead.
const Horizon = 35 * 24 * time.Hour

// Window is a stretch of time [From, Until).
type Window struct {
	From  time.Time `json:"from"`
	Until time.Time `json:"until"`
}

// Holds reports whether t lies in w.
func (w Window) Holds(t time.Time) bool { return !t.Before(w.From) && t.Before(w.Until) }

// Counts are a task's occurrence tallies since its schedule began, for the
// status document.
type Counts struct {
	// Missed counts occurrences that came due while the scheduler could
	// not run them on time (workers or Temporal down, a pause, the task
	// still busy), whatever their policy then did with them.
	Missed int64 `json:"missed"`
	// Skipped counts occurrences passed without a run (paused,
	// catchup_skip, dst_gap); Coalesced those folded into a coalesced run.
	Skipped   int64 `json:"skipped"`
	Coalesced int64 `json:"coalesced"`
}

// State is what the scheduler keeps per cron task between wake-ups, and
// carries across continue-as-new (every field survives a JSON round trip).
type State struct {
	// Last is the nominal time of the newest occurrence decided (run,
	// queued or passed); zero before the first Plan.
	Last time.Time `json:"last"`
	// Queue holds the runs Plan decided and the task has not started yet,
	// oldest first: Take hands them out one at a time.
	Queue []pacer.Occurrence `json:"queue,omitempty"`
	// Pending holds passed occurrences no run has carried to the ledger
	// yet; the next run decided carries them.
	Pending []pacer.PassedOccurrence `json:"pending,omitempty"`
	Counts  Counts                   `json:"counts"`
}

// Take hands out the oldest queued run (the scheduler's decision holds
// it while the task is paused).
func (st *State) Take() (pacer.Occurrence, bool) {
	if len(st.Queue) == 0 {
		return pacer.Occurrence{}, false
	}
	occ := st.Queue[0]
	st.Queue = slices.Delete(slices.Clone(st.Queue), 0, 1)
	return occ, true
}

func (st State) clone() State {
	st.Queue = slices.Clone(st.Queue)
	st.Pending = slices.Clone(st.Pending)
	return st
}

// Report says what one Plan decided, for logs.
type Report struct {
	Queued    int `json:"queued"`
	Missed    int `json:"missed"`
	Skipped   int `json:"skipped"`
	Coalesced int `json:"coalesced"`
	// Unrecorded is the stretch of a very late wake-up older than
	// Horizon, whose occurrences were neither run nor listed.
	Unrecorded *Window `json:"unrecorded,omitempty"`
}

// Plan decides every occurrence of the task that is due at now and not
// decided yet (after st.Last), oldest first, and returns the new state:
// runs to start in Queue, passed occurrences attached to the run after
// them (Occurrence.Passed) or kept in Pending.
//
// An occurrence is due once its due time (nominal time plus jitter) has
// come; the latest due one is on time if now is within OnTime of its due
// time, and runs. Every other due occurrence was missed, and the catch-up
// policy decides its fate:
//
//   - skip: none runs; each is skipped (catchup_skip, or paused when a
//     pause was in force at its due time);
//   - latest: the latest missed runs, the others are skipped;
//   - all, backfill: the most recent MaxCatchup run, oldest first, the
//     older ones are skipped;
//   - coalesce: the latest missed runs for all of them, its Occurrence
//     carrying their first and last nominal times and count; the others
//     are passed as coalesced into it.
//
// Under GapSkip, an occurrence whose wall-clock time did not exist is
// passed as skipped (dst_gap) once its instant has come. So every nominal
// time after st.Last up to now ends up exactly once as a run or passed.
//
// Plan changes nothing while the task is paused at now (paused, from the
// scheduler's pause windows; nil for never), or while runs it decided
// earlier are still queued: call it when the task is idle and its queue
// is empty, so a task that overruns its schedule has its missed
// occurrences decided by its policy instead of queued without end. Every
// occurrence due while paused is passed as paused, whatever the policy,
// and `all` catch-up runs are Live (as of when they start). The first
// Plan of a task (zero st.Last) only starts the schedule at now.
func (s *Schedule) Plan(task string, st State, now time.Time, paused func(time.Time) bool) (State, Report) {
	if paused == nil {
		paused = func(time.Time) bool { return false }
	}
	st = st.clone()
	var rep Report
	if paused(now) || len(st.Queue) > 0 {
		return st, rep
	}
	if st.Last.IsZero() {
		st.Last = now
		return st, rep
	}
	from := st.Last
	if floor := now.Add(-Horizon); from.Before(floor) {
		rep.Unrecorded = &Window{From: from, Until: floor}
		from = floor
	}
	due := s.due(task, from, now)
	if len(due) == 0 {
		return st, rep
	}
	events := s.decide(task, due, now, &rep, paused)
	pending := st.Pending
	for _, e := range events {
		if e.run == nil {
			pending = append(pending, e.passed)
			continue
		}
		e.run.Passed = Compact(pending)
		pending = nil
		st.Queue = append(st.Queue, *e.run)
	}
	st.Pending = Compact(pending)
	st.Last = due[len(due)-1].At
	st.Counts.Missed += int64(rep.Missed)
	st.Counts.Skipped += int64(rep.Skipped)
	st.Counts.Coalesced += int64(rep.Coalesced)
	rep.Queued = len(st.Queue)
	return st, rep
}

// due lists the fires after `from` that are due at now, in nominal-time
// order, stopping at the first that is not: jitter never lets a later
// occurrence overtake an earlier one.
func (s *Schedule) due(task string, from, now time.Time) []Fire {
	var due []Fire
	it := s.iterAfter(from)
	for {
		f, ok := it.next()
		if !ok {
			return due
		}
		if s.DueAt(task, f).After(now) {
			return due
		}
		if f.At.After(from) {
			due = append(due, f)
		}
	}
}

// event is one decided occurrence: a run, or passed.
type event struct {
	run    *pacer.Occurrence
	passed pacer.PassedOccurrence
}

// decide applies the catch-up policy to the due fires.
func (s *Schedule) decide(task string, due []Fire, now time.Time, rep *Report, paused func(time.Time) bool) []event {
	var runnable []int // indexes into due of the fires that may run
	for i, f := range due {
		if !f.Skip && !paused(s.DueAt(task, f)) {
			runnable = append(runnable, i)
		}
	}
	missed := runnable
	var onTime = -1
	if n := len(runnable); n > 0 {
		latest := runnable[n-1]
		if now.Before(s.DueAt(task, due[latest]).Add(OnTime)) {
			onTime, missed = latest, runnable[:n-1]
		}
	}
	rep.Missed = len(missed)

	// What happens to each missed fire: run (with or without a coalesced
	// range), or passed with a status.
	run := make(map[int]*pacer.CoalescedRange, len(missed))
	var into *time.Time
	switch m := len(missed); {
	case m == 0:
	case s.spec.Catchup == CatchupLatest:
		run[missed[m-1]] = nil
	case s.spec.Catchup == CatchupAll || s.spec.Catchup == CatchupBackfill:
		for _, i := range missed[max(0, m-s.spec.MaxCatchup):] {
			run[i] = nil
		}
	case s.spec.Catchup == CatchupCoalesce:
		last := due[missed[m-1]].At
		run[missed[m-1]] = &pacer.CoalescedRange{First: due[missed[0]].At, Last: last, Count: m}
		into = &last
	}
	if onTime >= 0 {
		run[onTime] = nil
	}

	events := make([]event, 0, len(due))
	for i, f := range due {
		if coalesced, ok := run[i]; ok {
			occ := &pacer.Occurrence{Task: task, NominalAt: f.At, Coalesced: coalesced}
			// `all` runs each missed occurrence as of now, `backfill` as
			// of its own nominal time (SPEC §3.4); the on-time one is both.
			occ.Live = s.spec.Catchup == CatchupAll && i != onTime
			events = append(events, event{run: occ})
			continue
		}
		p := pacer.PassedOccurrence{NominalAt: f.At, Status: pacer.RunSkipped}
		switch {
		case f.Skip:
			p.Reason = pacer.SkipDSTGap
			rep.Skipped++
		case paused(s.DueAt(task, f)):
			p.Reason = pacer.SkipPaused
			rep.Skipped++
		case into != nil:
			p.Status, p.CoalescedInto = pacer.RunCoalesced, into
			rep.Coalesced++
		default:
			p.Reason = pacer.SkipCatchup
			rep.Skipped++
		}
		events = append(events, event{passed: p})
	}
	return events
}

// Wake is when the scheduler should next look at the task: at once when
// runs are queued, else at the due time of its next occurrence that runs
// (the decision moves either past a pause). ok is false when the schedule
// fires no more.
func (s *Schedule) Wake(task string, st State, now time.Time) (time.Time, bool) {
	if len(st.Queue) > 0 {
		return now, true
	}
	after := st.Last
	if after.IsZero() {
		after = now
	}
	it := s.iterAfter(after)
	for {
		f, ok := it.next()
		if !ok {
			return time.Time{}, false
		}
		if f.At.After(after) && !f.Skip {
			return s.DueAt(task, f), true
		}
	}
}

// Compact folds runs of passed occurrences that differ only by a constant
// step in nominal time into one entry each (PassedOccurrence.Count and
// StepSeconds); Times expands them again.
func Compact(passed []pacer.PassedOccurrence) []pacer.PassedOccurrence {
	var out []pacer.PassedOccurrence
	for _, p := range passed {
		for _, at := range p.Times() {
			single := p
			single.NominalAt, single.Count, single.StepSeconds = at, 0, 0
			if n := len(out); n > 0 && extends(&out[n-1], single) {
				continue
			}
			out = append(out, single)
		}
	}
	return out
}

// extends appends p to span when p is alike and one step after its last
// occurrence, and reports whether it did.
func extends(span *pacer.PassedOccurrence, p pacer.PassedOccurrence) bool {
	if span.Status != p.Status || span.Reason != p.Reason || !sameTime(span.CoalescedInto, p.CoalescedInto) {
		return false
	}
	last := span.NominalAt.Add(time.Duration(max(span.Count-1, 0)) * time.Duration(span.StepSeconds) * time.Second)
	gap := p.NominalAt.Sub(last)
	if gap <= 0 || gap%time.Second != 0 {
		return false
	}
	switch {
	case span.Count <= 1:
		span.Count, span.StepSeconds = 2, int64(gap/time.Second)
	case int64(gap/time.Second) == span.StepSeconds:
		span.Count++
	default:
		return false
	}
	return true
}

func sameTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}
