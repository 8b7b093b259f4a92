package bench

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/pacer-dev/pacer/internal/budget"
	"github.com/pacer-dev/pacer/internal/fault"
	"github.com/pacer-dev/pacer/internal/pacing"
)

// Strategy is one way of pacing a task, built fresh for every task it runs.
type Strategy struct {
	Name  string
	build func(t Task, start time.Time) *runner
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

// runner plans a task's runs and hears how they went: every `every`
// start to start (a run that overran its cadence is followed at once, as
// an overdue cron job is), or at the interval its controller decides; with
// a budget, when the budget has room too.
type runner struct {
	start time.Time
	last  *time.Time
	every time.Duration
	// n is a run's items (0: every one), order how it chooses them and
	// spacing a fixed gap between request starts (0: the next request
	// when the previous answer is in).
	n       int
	order   order
	spacing time.Duration
	ctrl    *pacing.Controller
	d       pacing.Decision
	// budget, size and nextRunAfter are pacer's: the shared budget, which
	// takes every request and observes every answer (a run stops by the
	// activities' own rule, tally.Ending and tenero.Quota.Exhausted: on a
	// 429, when a header says a window is spent or down to its reserve,
	// after tally.MaxUpstreamStreak server errors in a row), the most
	// items a run can use (0: any number), and SPEC §3's back-off after a
	// spent quota (5 minutes for the minute, a day for the month; pacing
	// is there to never meet it).
	budget       *shared
	size         int
	nextRunAfter time.Time
}

// next is when the next run starts (not before now) and its items; false
// when there is nothing left to run before until.
func (r *runner) next(now, until time.Time) (time.Time, int, bool) {
	at := r.start
	if r.ctrl != nil {
		r.every, r.n = r.d.Interval, r.d.Batch
	}
	if r.last != nil {
		at = r.last.Add(r.every)
	}
	at = Latest(at, now)
	if r.budget == nil {
		return at, r.n, true
	}
	want := r.n
	if r.size > 0 {
		want = min(want, r.size)
	}
	at, ok := r.budget.ready(Latest(at, r.nextRunAfter), until, want)
	// A batch the month cuts is Pick's choice; the window is Take's to
	// enforce request by request (what it holds is learned again from each
	// window's first answer).
	return at, min(want, r.budget.monthRoom(at)), ok
}

func (r *runner) finished(res runResult) {
	r.last = &res.start
	if a := res.lastAnswer; r.budget != nil && a != nil {
		switch {
		case a.monthSpent():
			r.nextRunAfter = res.end.Add(fault.MonthQuotaBackoff)
		case !a.Allowed || a.spent():
			r.nextRunAfter = res.end.Add(fault.MinuteQuotaBackoff)
		}
	}
	if r.ctrl != nil {
		r.ctrl.Observe(res.end, res.ok, res.rejected+res.failed)
		r.d = r.ctrl.Decide(res.end)
	}
}

// controlled is a runner whose batch and interval cfg's controller decides.
func controlled(cfg pacing.ControllerConfig, start time.Time, o order) *runner {
	c, err := pacing.NewController(cfg)
	if err != nil {
		panic(err) // the scenarios are fixed: a bad one is a bug here
	}
	return &runner{start: start, ctrl: c, d: c.Decide(start), order: o}
}

// FixedCron is the old behaviour: every `every` (0: the task's own cadence)
// every item, or a fixed page of a crawl, at a fixed spacing that keeps to
// the documented limit; it reads no header and does not stop for a 429.
func FixedCron(every time.Duration) Strategy {
	name := "fixed cron"
	if every > 0 {
		name = fmt.Sprintf("fixed cron %s", strings.TrimSuffix(strings.TrimSuffix(every.String(), "0s"), "0m"))
	}
	return Strategy{Name: name, build: func(t Task, start time.Time) *runner {
		return &runner{start: start, every: cmp.Or(every, t.CronEvery), n: t.CronPage, spacing: time.Minute / time.Duration(t.Documented)}
	}}
}

// TokenBucket spends the documented per-minute limit evenly, every minute,
// whatever the upstream answers: a static token bucket (no burst) at the
// documented limit, run as one activity a minute.
func TokenBucket() Strategy {
	return Strategy{Name: "token bucket", build: func(t Task, start time.Time) *runner {
		return &runner{start: start, every: time.Minute, n: t.Documented, spacing: time.Minute / time.Duration(t.Documented), order: roundRobin}
	}}
}

// Seed is the seed's tiered controller as written: pacing.Controller alone.
// Batch and interval follow the success rate; it reads no header, knows no
// month, sends a batch back to back and does not stop it for a 429.
func Seed() Strategy {
	return Strategy{Name: "tiered seed", build: func(t Task, start time.Time) *runner {
		return controlled(t.Pacing, start, inOrder)
	}}
}

// Pacer is the controller and the budget together: pacing.Controller
// judging runs, as the activities run it, and internal/budget (the one
// model of an upstream's quota: minute windows learned from the headers,
// month pacing) taking every request and observing every answer, as the
// shared budget does in the service. A run starts when its interval has
// passed and the budget has room for its batch (pacing by need: as much
// as a window and the month's credit can hold, no more than the batch and
// the work), spends on the items Pick chooses, and stops when the budget
// refuses or a header says a window is spent.
func Pacer() Strategy {
	return Strategy{Name: "pacer", build: func(t Task, start time.Time) *runner {
		cfg := t.Pacing
		cfg.Judge = pacing.JudgeRuns // as the activities run it
		// The window's reserve for the fast lane is one request (the
		// activities' minute reserve) on these plans of 10–100 a minute.
		o := inOrder
		if t.Work.Kind == Prices {
			o = byPriority
		}
		r := controlled(cfg, start, o)
		r.budget, r.size = &shared{cfg: budget.Config{PerMinute: int64(t.Documented), FastReserve: 0.01}}, t.Work.Items
		return r
	}}
}

// shared is pacer's budget for one upstream, as the activities take from
// the one in Postgres: a request goes out only when Take grants it.
type shared struct {
	cfg budget.Config
	st  budget.State
}

// ready is the earliest moment from at when the budget has room for a run
// of want, or for as much as a window holds for the lane, or what it had
// after waiting a credit horizon for more; false when that is not before
// until.
func (b *shared) ready(at, until time.Time, want int) (time.Time, bool) {
	waited := time.Duration(0)
	for at.Before(until) {
		n, retryAt, _ := b.st.Room(b.cfg, budget.LaneSweep, at)
		if n == 0 {
			at = Latest(retryAt, at.Add(time.Second))
			continue
		}
		window := b.st.MinuteCapacity(b.cfg, at) - 1 // less the fast lane's reserve
		if n >= min(int64(want), window) || waited >= budget.DefaultCreditHorizon {
			return at, true
		}
		at, waited = at.Add(time.Minute), waited+time.Minute
	}
	return at, false
}

// monthRoom is what the month lets the lane take at at, whatever the
// window holds (as a fresh window at the configured rate).
func (b *shared) monthRoom(at time.Time) int {
	probe := b.st
	probe.Left, probe.WindowCapacity, probe.Capacity, probe.SweepUsed, probe.FastUsed = nil, nil, nil, 0, 0
	n, _, _ := probe.Room(b.cfg, budget.LaneSweep, at)
	return int(n)
}

// Latest is the latest of ts.
func Latest(ts ...time.Time) time.Time {
	return slices.MaxFunc(ts, time.Time.Compare)
}
