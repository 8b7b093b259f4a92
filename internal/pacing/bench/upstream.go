package bench

import (
	"fmt"
	"net/http"
	"time"

	"github.com/pacer-dev/pacer/internal/budget"
	"github.com/pacer-dev/pacer/internal/hiro"
	"github.com/pacer-dev/pacer/internal/sim"
	"github.com/pacer-dev/pacer/internal/store"
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
	// Shape and Burst are the minute limit's shape (internal/sim's:
	// fixed windows, sliding ones, a token bucket), the same in every
	// phase.
	Shape sim.Shape
	Burst int
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

// Answer is the upstream's reply to one request: internal/sim's, and the
// headers pacer reads of it.
type Answer struct {
	sim.Answer
	// Failed is a 503: no headers, no quota spent, not a rate limit.
	Failed bool
	Obs    budget.Observation
}

// spent says a header shows a window spent: what makes pacer's activities
// stop a run and defer the task.
func (a Answer) spent() bool {
	return a.MinuteRemaining <= 0 || a.monthSpent()
}

func (a Answer) monthSpent() bool { return a.Obs.MonthRemaining != nil && a.MonthRemaining <= 0 }

// Upstream is the benchmarks' one model of an upstream (this package's
// tasks', and Hiro in internal/ingest/bench): internal/sim's Quota (fixed minute windows
// on the minute, a calendar month, a neighbour who spends at the start of
// every minute we are active in, refused requests that cost nothing) under
// the scenario's phases, which it advertises as the documented limit.
type Upstream struct {
	hidden     Hidden
	documented int
	start      time.Time
	Quota      sim.Quota
	// served counts requests during server-error storms, to spread the
	// failures evenly.
	served int
}

// NewUpstream is an upstream that documents documented a minute and
// enforces h from start.
func NewUpstream(h Hidden, documented int, start time.Time) *Upstream {
	return &Upstream{hidden: h, documented: documented, start: start}
}

// Take sends one request at now.
func (u *Upstream) Take(now time.Time) Answer {
	p := u.hidden.at(now.Sub(u.start))
	if p.Failing > 0 {
		u.served++
		if u.served*p.Failing%100 < p.Failing {
			return Answer{Failed: true, Obs: budget.Observation{Status: http.StatusServiceUnavailable}}
		}
	}
	u.Quota.Limits = sim.Limits{PerMinute: u.documented, HiddenPerMinute: p.PerMinute, NoisyPerMinute: p.Noisy,
		PerMonth: u.hidden.PerMonth, Shape: u.hidden.Shape, Burst: u.hidden.Burst}
	a := u.Quota.Take(now, 1)
	return Answer{Answer: a, Obs: observe(a, u.Quota.Limits, now)}
}

// observe is what the service's budget reads of the answer a: the headers
// the simulator's Hiro sends with it, read by the service's own parsing
// (hiro.ParseQuota, then store.QuotaObservation), not a copy of them.
func observe(a sim.Answer, l sim.Limits, now time.Time) budget.Observation {
	h := http.Header{}
	a.WriteHiroHeaders(h, l, now, 1)
	q := hiro.ParseQuota(h)
	q.StatusCode = http.StatusOK
	if !a.Allowed {
		q.StatusCode = http.StatusTooManyRequests
	}
	q.SentAt = now
	return store.QuotaObservation(q)
}

// Month is a month quota at a run's end: whether there is one, what is
// left, and when it first refused (nil: never).
type Month struct {
	HasMonth  bool
	MonthLeft int
	DryAfter  *time.Duration
}

// Month is the upstream's month quota now.
func (u *Upstream) Month() Month {
	m := Month{HasMonth: u.Quota.Limits.HasMonth(), MonthLeft: u.Quota.MonthLeft()}
	if dry := u.Quota.DryAt; dry != nil {
		d := dry.Sub(u.start)
		m.DryAfter = &d
	}
	return m
}

// Cell is the month as a table shows it.
func (m Month) Cell() string {
	switch {
	case !m.HasMonth:
		return "—"
	case m.DryAfter != nil:
		return fmt.Sprintf("%d (dry after %s)", m.MonthLeft, Human(*m.DryAfter))
	}
	return fmt.Sprintf("%d", m.MonthLeft)
}
