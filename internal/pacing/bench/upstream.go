package bench

import "time"

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

// answer is the upstream's reply to one request, with the headers a real
// one sends.
type answer struct {
	ok bool
	// failed is a 503: no headers, no quota spent, not a rate limit.
	failed          bool
	minuteRemaining int
	// monthRemaining is nil for an upstream without a month quota.
	monthRemaining *int
	// resetAt is when the window that refused the request ends.
	resetAt time.Time
}

// upstream keeps our budget as internal/sim's limiter does: fixed minute
// windows starting on the minute, a calendar month window, a neighbour who
// spends at the start of every minute we are active in, and refused
// requests that cost nothing.
type upstream struct {
	hidden      Hidden
	start       time.Time
	minuteStart time.Time
	minuteUsed  int
	perMinute   int
	monthStart  time.Time
	monthUsed   int
	// dryAt is the first time the month quota refused a request.
	dryAt *time.Time
	// served counts requests during server-error storms, to spread the
	// failures evenly.
	served int
}

// spent says a header shows a window spent: what makes pacer's activities
// stop a run and defer the task.
func (a answer) spent() bool {
	return a.minuteRemaining <= 0 || (a.monthRemaining != nil && *a.monthRemaining <= 0)
}

func newUpstream(h Hidden, start time.Time) *upstream {
	return &upstream{hidden: h, start: start}
}

func (u *upstream) take(now time.Time) answer {
	u.roll(now)
	if p := u.hidden.at(now.Sub(u.start)); p.Failing > 0 {
		u.served++
		if u.served*p.Failing%100 < p.Failing {
			return answer{failed: true}
		}
	}
	minuteSpent := u.minuteUsed >= u.perMinute
	monthSpent := u.hidden.PerMonth > 0 && u.monthUsed >= u.hidden.PerMonth
	a := answer{ok: !minuteSpent && !monthSpent, resetAt: u.minuteStart.Add(time.Minute)}
	switch {
	case a.ok:
		u.minuteUsed++
		u.monthUsed++
	case monthSpent:
		a.resetAt = u.monthStart.AddDate(0, 1, 0)
		if u.dryAt == nil {
			u.dryAt = &now
		}
	}
	a.minuteRemaining = u.perMinute - u.minuteUsed
	if u.hidden.PerMonth > 0 {
		left := u.hidden.PerMonth - u.monthUsed
		a.monthRemaining = &left
	}
	return a
}

func (u *upstream) roll(now time.Time) {
	now = now.UTC()
	month := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	if !month.Equal(u.monthStart) {
		u.monthStart, u.monthUsed = month, 0
	}
	minute := now.Truncate(time.Minute)
	if !minute.Equal(u.minuteStart) {
		p := u.hidden.at(minute.Sub(u.start))
		u.minuteStart, u.perMinute = minute, p.PerMinute
		u.minuteUsed = p.Noisy
		u.monthUsed += p.Noisy
		if u.hidden.PerMonth > 0 {
			u.monthUsed = min(u.monthUsed, u.hidden.PerMonth)
		}
	}
}

// monthLeft is what is left of the quota of the month we last used; -1
// without a quota.
func (u *upstream) monthLeft() int {
	if u.hidden.PerMonth == 0 {
		return -1
	}
	return u.hidden.PerMonth - u.monthUsed
}
