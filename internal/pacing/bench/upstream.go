package bench

import (
	"net/http"
	"time"

	"github.com/pacer-dev/pacer/internal/budget"
	"github.com/pacer-dev/pacer/internal/sim"
)

// Phase is one stretch of an upstream's hidden limits, from At (since the
// scenario's start) until the next phase.
type Phase struct {
	At        time.Duration
	PerMinute int
	// Noisy is a neighbour on the same budget: each minute window starts with
	// that many requests already spent, as in internal/sim.
	Noisy int
	// Failing is the percentage of requests answered 503 (a server error
	// storm, as internal/sim's faults inject); they spend no quota. The
	// failures are spread evenly, so a run is repeatable.
	Failing int
}

// Hidden is an upstream's real limits, which no strategy is told.
type Hidden struct {
	Phases []Phase
	// PerMonth is the month quota; 0 for none.
	PerMonth int
}

// at returns the phase in force at d since the start.
func (h Hidden) at(d time.Duration) Phase {
	p := h.Phases[0]
	for _, q := range h.Phases[1:] {
		if d >= q.At {
			p = q
		}
	}
	return p
}

// answer is the upstream's reply to one request: internal/sim's, and the
// headers pacer reads of it.
type answer struct {
	sim.Answer
	// failed is a 503: no headers, no quota spent, not a rate limit.
	failed   bool
	hasMonth bool
	obs      budget.Observation
}

// spent says a header shows a window spent: what makes pacer's activities
// stop a run and defer the task.
func (a answer) spent() bool {
	return a.MinuteRemaining <= 0 || a.monthSpent()
}

func (a answer) monthSpent() bool { return a.hasMonth && a.MonthRemaining <= 0 }

// upstream is a task's upstream: internal/sim's Quota (fixed minute windows
// on the minute, a calendar month, a neighbour who spends at the start of
// every minute we are active in, refused requests that cost nothing) under
// the scenario's phases, which it advertises as the documented limit.
type upstream struct {
	hidden     Hidden
	documented int
	start      time.Time
	quota      sim.Quota
	// served counts requests during server-error storms, to spread the
	// failures evenly.
	served int
}

func newUpstream(h Hidden, documented int, start time.Time) *upstream {
	return &upstream{hidden: h, documented: documented, start: start}
}

func (u *upstream) take(now time.Time) answer {
	p := u.hidden.at(now.Sub(u.start))
	if p.Failing > 0 {
		u.served++
		if u.served*p.Failing%100 < p.Failing {
			return answer{failed: true, obs: budget.Observation{Status: http.StatusServiceUnavailable}}
		}
	}
	u.quota.Limits = sim.Limits{PerMinute: u.documented, HiddenPerMinute: p.PerMinute, NoisyPerMinute: p.Noisy,
		PerMonth: u.hidden.PerMonth}
	a := u.quota.Take(now, 1)
	return answer{Answer: a, hasMonth: u.quota.Limits.HasMonth(), obs: a.Observation(u.quota.Limits, now, 1)}
}
