// Package tally keeps the tally of a task run's result: what its budget
// and the upstream's quota headers said was left, the failures that count
// against the upstream, and the sweep's counts summed from its pieces.
// Only activities (and the competition's verifier, the pacing controller)
// run it; the workflow never does, so it stays out of the root package
// pacer, which the workflow imports and whose lines make wf-lines counts
// (SPEC §3.8).
package tally

import (
	"maps"
	"math"

	"github.com/pacer-dev/pacer"
)

// UpstreamFailure reports whether a failure of class c counts against the
// upstream's health. Item problems (an unknown token, one bad body) do not.
func UpstreamFailure(c pacer.ErrorClass) bool {
	return c == pacer.ClassRateLimit || c == pacer.ClassServerError || c == pacer.ClassTimeout
}

// Left records in r what a budget had left, as it stands: the minute's
// and the month's (nil: no month quota).
func Left(r *pacer.Run, minute int64, month *int64) {
	m := int(min(minute, math.MaxInt32))
	r.MinuteRemaining, r.MonthRemaining = &m, nil
	if month != nil {
		n := int(min(*month, math.MaxInt32))
		r.MonthRemaining = &n
	}
}

// Remaining carries a quota header's count of what is left into a
// result's MinuteRemaining or MonthRemaining, when the answer had it.
// tenero.ParseQuota already clamps counts to tenero.MaxCount, which a
// 64-bit int holds; the min only keeps a 32-bit build from wrapping.
func Remaining(into **int, n *int64) {
	if n != nil {
		v := int(min(*n, math.MaxInt))
		*into = &v
	}
}

// Count counts a failed call of r against the upstream when the failure
// was the upstream's own (UpstreamFailure), and a rate_limit as a refusal
// too.
func Count(r *pacer.Run, class pacer.ErrorClass) {
	if UpstreamFailure(class) {
		r.UpstreamFailed++
	}
	if class == pacer.ClassRateLimit {
		r.Rejected++
	}
}

// Add adds the counts of a piece of a run (an agent's visit, a reader's
// read) to the run's, r.
func Add(r *pacer.SweepResult, v pacer.SweepResult) {
	r.Scanned += v.Scanned
	r.Found += v.Found
	r.Inserted += v.Inserted
	r.AlreadyKnown += v.AlreadyKnown
	r.Pending += v.Pending
	r.Rejected += v.Rejected
	r.HiroErrors += v.HiroErrors
	r.Requests += v.Requests
	r.Run.Rejected += v.Run.Rejected
	r.UpstreamFailed += v.UpstreamFailed
	if r.RejectionReasons == nil && len(v.RejectionReasons) > 0 {
		r.RejectionReasons = map[string]int{}
	}
	for k, n := range v.RejectionReasons {
		r.RejectionReasons[k] += n
	}
}

// Clone is a copy of r that shares none of its maps.
func Clone(r pacer.SweepResult) pacer.SweepResult {
	r.RejectionReasons, r.Tiers, r.Readers = maps.Clone(r.RejectionReasons), maps.Clone(r.Tiers), maps.Clone(r.Readers)
	return r
}

// Report updates r's report of the reader name with f.
func Report(r *pacer.SweepResult, name string, f func(*pacer.ReaderReport)) {
	if r.Readers == nil {
		r.Readers = map[string]pacer.ReaderReport{}
	}
	rep := r.Readers[name]
	f(&rep)
	r.Readers[name] = rep
}

// Successes is what the pacing controller counts as r's successful work:
// agents visited and, in tail mode, the chain's pages read (a run of the
// tail visits few agents or none, and must not read as all failure when
// one detail fetch fails).
func Successes(r *pacer.SweepResult) int {
	n := r.Scanned
	for name, rr := range r.Readers {
		if name != "agents" {
			n += rr.Pages
		}
	}
	return n
}

// MaxUpstreamStreak is how many upstream failures in a row end a run: the
// upstream is struggling, and the next run comes at the task's cadence.
const MaxUpstreamStreak = 5

// Ending is a run's rule for when to stop, answer by answer, where the
// upstream's quota headers are read: the tenero activity stops by it,
// and so do the pacing benchmark's runs of pacer (internal/pacing/bench),
// so that what the benchmark measures is this rule. A spent window ends
// a run too, whatever the answer (tenero.Quota.Exhausted).
type Ending struct {
	// Reserve is what a paced run leaves of each minute window (0: none,
	// an operator's forced run).
	Reserve int64
	streak  int
}

// Failed counts a failed answer of class c and says whether it ends the
// run: a refusal or a permanent error at once, an upstream failure once
// MaxUpstreamStreak of them come in a row; streak is how many in a row.
// An item's own problem (an unknown token) neither ends nor breaks the
// streak.
func (e *Ending) Failed(c pacer.ErrorClass) (ends bool, streak int) {
	switch {
	case c == pacer.ClassRateLimit, c == pacer.ClassPermanent:
		return true, e.streak
	case UpstreamFailure(c):
		e.streak++
		return e.streak >= MaxUpstreamStreak, e.streak
	}
	return false, e.streak
}

// Succeeded ends a streak of failures.
func (e *Ending) Succeeded() { e.streak = 0 }

// Reserved says whether the run ends, normally, at the minute's reserve:
// more requests to send, and the minute's remaining (nil: unknown, never
// a reason to stop) down to the reserve.
func (e *Ending) Reserved(minuteLeft *int64, more bool) bool {
	return more && minuteLeft != nil && *minuteLeft <= e.Reserve
}
