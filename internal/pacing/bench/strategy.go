package bench

import (
	"cmp"
	"fmt"
	"time"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/pacing"
)

// Strategy is one way of pacing a task, built fresh for every task it runs.
type Strategy struct {
	Name string
	// Baseline marks the fixed cron the others are compared with.
	Baseline bool
	build    func(t Task, start time.Time) strategy
}

// strategy plans runs and hears how they went.
type strategy interface {
	// next is when the next run starts (not before now) and what it does;
	// false when the strategy has nothing left to run before until.
	next(now, until time.Time) (time.Time, plan, bool)
	finished(r runResult)
}

// order is how a run chooses its items.
type order int

const (
	// inOrder takes the first items of the list (what MaxTokens does today).
	inOrder order = iota
	// roundRobin goes on where the last run stopped.
	roundRobin
	// byPriority asks pacing.PickTokens, as the tenero activity does: the
	// static base, then the stalest traded tokens by weight.
	byPriority
)

// plan is one run's work.
type plan struct {
	n int
	// spacing is a fixed gap between request starts; 0 sends the next
	// request when the previous answer is in.
	spacing time.Duration
	// stopOnQuota ends the run on a 429, when a header says a window is
	// spent or down to stopAtRemaining, and stopAfterFailures after that many
	// server errors in a row, as pacer's activities do.
	stopOnQuota       bool
	stopAtRemaining   int
	stopAfterFailures int
	order             order
}

// FixedCron is the old behaviour: every `every` (0: the task's own cadence)
// every item, or a fixed page of a crawl, at a fixed spacing that keeps to
// the documented limit; it reads no header and does not stop for a 429.
func FixedCron(every time.Duration) Strategy {
	name := "fixed cron"
	if every > 0 {
		name = fmt.Sprintf("fixed cron %s", shortDuration(every))
	}
	return Strategy{Name: name, Baseline: true, build: func(t Task, start time.Time) strategy {
		return &periodic{start: start, every: cmp.Or(every, t.CronEvery),
			plan: plan{n: t.CronPage, spacing: time.Minute / time.Duration(t.Documented), order: inOrder}}
	}}
}

// TokenBucket spends the documented per-minute limit evenly, every minute,
// whatever the upstream answers: a static token bucket (no burst) at the
// documented limit, run as one activity a minute.
func TokenBucket() Strategy {
	return Strategy{Name: "token bucket", build: func(t Task, start time.Time) strategy {
		return &periodic{start: start, every: time.Minute,
			plan: plan{n: t.Documented, spacing: time.Minute / time.Duration(t.Documented), order: roundRobin}}
	}}
}

// periodic runs the same plan every `every`, start to start.
type periodic struct {
	start time.Time
	last  *time.Time
	every time.Duration
	plan  plan
}

func (p *periodic) next(now, _ time.Time) (time.Time, plan, bool) {
	at := p.start
	if p.last != nil {
		at = p.last.Add(p.every)
	}
	// A run that overran its cadence is followed at once, as an overdue
	// cron job is.
	return latest(at, now), p.plan, true
}

func (p *periodic) finished(r runResult) { p.last = &r.start }

// Seed is the seed's tiered controller as written: pacing.Controller alone.
// Batch and interval follow the success rate; it reads no header, knows no
// month, sends a batch back to back and does not stop it for a 429.
func Seed() Strategy {
	return Strategy{Name: "tiered seed", build: func(t Task, start time.Time) strategy {
		c, err := pacing.NewController(t.Pacing)
		if err != nil {
			panic(err) // the scenarios are fixed: a bad one is a bug here
		}
		return &seed{start: start, ctrl: c, d: c.Decide(start)}
	}}
}

type seed struct {
	start time.Time
	last  *time.Time
	ctrl  *pacing.Controller
	d     pacing.Decision
}

func (s *seed) next(now, _ time.Time) (time.Time, plan, bool) {
	at := s.start
	if s.last != nil {
		at = s.last.Add(s.d.Interval)
	}
	return latest(at, now), plan{n: s.d.Batch, order: inOrder}, true
}

func (s *seed) finished(r runResult) {
	s.last = &r.start
	s.ctrl.Observe(r.end, r.ok, r.rejected+r.failed)
	s.d = s.ctrl.Decide(r.end)
}

// Pacer is the controller and the budget together, as the workflow is to
// run them: a run starts when both its interval has passed and the budget
// is ready for it, spends at most the budget's allowance on the items Pick
// chooses, and stops when a header says a window is spent.
func Pacer() Strategy {
	return Strategy{Name: "pacer", build: func(t Task, start time.Time) strategy {
		cfg := t.Pacing
		cfg.Judge = pacing.JudgeRuns // as the workflow runs it
		c, err := pacing.NewController(cfg)
		if err != nil {
			panic(err)
		}
		order := inOrder
		if t.Work.Kind == Prices {
			order = byPriority
		}
		return &pacerStrategy{
			start: start, ctrl: c, d: c.Decide(start), order: order, size: t.Work.Items,
			budget: NewBudget(BudgetConfig{MinuteLimit: t.Documented, MinuteReserve: 1, Reserve: 1}),
		}
	}}
}

type pacerStrategy struct {
	start time.Time
	last  *time.Time
	// nextRunAfter is SPEC §3's back-off after a spent quota: 5 minutes for
	// the minute, a day for the month. Pacing is there to never meet it.
	nextRunAfter time.Time
	ctrl         *pacing.Controller
	budget       *Budget
	d            pacing.Decision
	order        order
	// size is how many items one run can use at most (0: any number).
	size int
}

func (p *pacerStrategy) next(now, until time.Time) (time.Time, plan, bool) {
	want := p.d.Batch
	if p.size > 0 {
		want = min(want, p.size)
	}
	at := p.start
	if p.last != nil {
		at = p.last.Add(p.d.Interval)
	}
	// Pacing by need (SPEC §4.7): the run waits for the requests it will
	// make, which its batch and the work bound, never more.
	at = latest(latest(at, now), latest(p.nextRunAfter, p.budget.ReadyAt(now, want)))
	n := p.budget.Cap(at, want)
	for n == 0 {
		// Not even one request is allowed: wait for the budget's next one.
		next := p.budget.ReadyAt(at, 1)
		if !next.After(at) {
			next = at.Add(time.Second)
		}
		if at = next; !at.Before(until) {
			return at, plan{}, false
		}
		n = p.budget.Cap(at, want)
	}
	return at, plan{n: n, order: p.order, stopOnQuota: true, stopAtRemaining: p.budget.StopAt(), stopAfterFailures: 5}, true
}

func (p *pacerStrategy) finished(r runResult) {
	p.last = &r.start
	rep := Report{Start: r.start, End: r.end, Requests: r.requests, Rejected: r.rejected}
	if r.answered {
		left := r.lastAnswer.minuteRemaining
		rep.MinuteRemaining, rep.MonthRemaining = &left, r.lastAnswer.monthRemaining
		if !r.lastAnswer.ok {
			// A 429 carries Retry-After: the end of the window that refused.
			rep.ResetAt = &r.lastAnswer.resetAt
		}
		switch a := r.lastAnswer; {
		case a.monthRemaining != nil && *a.monthRemaining <= 0:
			p.nextRunAfter = r.end.Add(pacer.MonthQuotaBackoff)
		case !a.ok || a.spent():
			p.nextRunAfter = r.end.Add(pacer.MinuteQuotaBackoff)
		}
	}
	p.budget.Record(rep)
	p.ctrl.Observe(r.end, r.ok, r.rejected+r.failed)
	p.d = p.ctrl.Decide(r.end)
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// shortDuration prints 5m0s as 5m and 1h0m0s as 1h.
func shortDuration(d time.Duration) string {
	switch {
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return d.String()
}
