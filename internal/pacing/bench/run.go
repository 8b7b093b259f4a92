package bench

import (
	"time"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/budget"
	"github.com/pacer-dev/pacer/internal/pacing"
	"github.com/pacer-dev/pacer/internal/tally"
	"github.com/pacer-dev/pacer/internal/tenero"
)

// runResult is what one run did.
type runResult struct {
	start, end             time.Time
	requests, ok, rejected int
	// failed counts server errors (503).
	failed int
	// lastAnswer is the last response's headers (nil: none came).
	lastAnswer *Answer
}

// taskSim is one task under one strategy: the upstream, the work, and the
// tallies the metrics are computed from.
type taskSim struct {
	task       Task
	start, end time.Time
	up         *Upstream

	// okPerMinute and rejectedPerMinute are indexed by whole minutes since
	// the start, by when the request reached the upstream.
	okPerMinute, rejectedPerMinute []int
	runs                           []runResult

	// Crawl and walk progress.
	done       int
	finishedAt *time.Time
	cursor     int
	// Prices: every token's refresh times.
	refreshedAt [][]time.Time
	// onPick, when set, hears every choice byPriority makes (StarterPicks).
	onPick func(at time.Time, checked []*time.Time, n int, picked []int)
}

func newTaskSim(t Task, start time.Time, horizon time.Duration) *taskSim {
	minutes := int(horizon / time.Minute)
	s := &taskSim{
		task: t, start: start, end: start.Add(horizon), up: NewUpstream(t.Hidden, t.Documented, start),
		okPerMinute: make([]int, minutes), rejectedPerMinute: make([]int, minutes),
	}
	if t.Work.Kind == Prices {
		s.refreshedAt = make([][]time.Time, t.Work.Items)
	}
	return s
}

// simulate runs the strategy until the horizon or the end of the work.
func (s *taskSim) simulate(st *runner) {
	now := s.start
	for s.finishedAt == nil {
		at, n, ok := st.next(now, s.end)
		if !ok || !at.Before(s.end) {
			return
		}
		r := s.execute(at, st, n)
		s.runs = append(s.runs, r)
		st.finished(r)
		now = r.end
	}
}

// items chooses the run's items: indexes into the work's list, or -1 for an
// anonymous crawl item.
func (s *taskSim) items(at time.Time, o order, n int) []int {
	w := s.task.Work
	if n <= 0 || (w.Kind != Crawl && n > w.Items) {
		n = w.Items
	}
	if w.Kind == Crawl && w.Items > 0 {
		n = min(n, w.Items-s.done)
	}
	if w.Kind == Prices && o == byPriority {
		// The activity's own choice: the static base, then the tail by
		// staleness × weight from each token's last successful check.
		checked := make([]*time.Time, w.Items)
		for i, r := range s.refreshedAt {
			if len(r) > 0 {
				checked[i] = &r[len(r)-1]
			}
		}
		picked := pacing.PickTokens(at, checked, w.Static, n)
		if s.onPick != nil {
			s.onPick(at, checked, n, picked)
		}
		return picked
	}
	out := make([]int, n)
	for i := range out {
		switch {
		case w.Kind == Crawl:
			out[i] = -1
		case w.Kind == Walk || o == roundRobin:
			out[i] = (s.cursor + i) % w.Items
		default:
			out[i] = i
		}
	}
	return out
}

// latency is how long every request takes, to every upstream.
const latency = 300 * time.Millisecond

// execute sends the run's n requests one after another.
func (s *taskSim) execute(at time.Time, p *runner, n int) runResult {
	r := runResult{start: at, end: at}
	items := s.items(at, p.order, n)
	t := at
	// pacer's runs stop by the activities' own rule (tally.Ending, with
	// the reserve the scheduler gives a paced run).
	ending := tally.Ending{Reserve: pacer.MinuteReserve}
	for i, item := range items {
		if p.spacing > 0 {
			t = Latest(t, at.Add(time.Duration(i)*p.spacing))
		}
		if !t.Before(s.end) {
			break // the horizon cuts a run short: the next month is not ours to count
		}
		if p.budget != nil && !p.budget.st.Take(p.budget.cfg, budget.LaneSweep, 1, t).OK {
			break // the budget stops the run, as it stops an activity
		}
		a, sent := s.up.Take(t), t
		t = t.Add(latency)
		r.requests++
		if p.budget != nil {
			p.budget.st.Observe(p.budget.cfg, budget.LaneSweep, a.Obs, t)
		}
		if a.Failed {
			r.failed++
			if ends, _ := ending.Failed(pacer.ClassServerError); p.budget != nil && ends {
				break
			}
			continue
		}
		r.lastAnswer = &a
		minute := int(sent.Sub(s.start) / time.Minute)
		inHorizon := minute >= 0 && minute < len(s.okPerMinute)
		if a.Allowed {
			r.ok++
			if inHorizon {
				s.okPerMinute[minute]++
			}
			s.succeeded(item, t)
		} else {
			r.rejected++
			if inHorizon {
				s.rejectedPerMinute[minute]++
			}
		}
		if s.finishedAt != nil {
			break
		}
		if p.budget == nil {
			continue
		}
		if !a.Allowed {
			if ends, _ := ending.Failed(pacer.ClassRateLimit); ends {
				break
			}
		} else {
			ending.Succeeded()
		}
		// What the headers said, as the activity reads them.
		q := tenero.Quota{MinuteRemaining: a.Obs.Remaining, MonthRemaining: a.Obs.MonthRemaining}
		if _, spent := q.Exhausted(); spent || ending.Reserved(q.MinuteRemaining, i < len(items)-1) {
			break
		}
	}
	r.end = t
	if w := s.task.Work; w.Kind == Walk {
		s.cursor = (s.cursor + r.ok) % w.Items
	} else if w.Kind == Prices && p.order == roundRobin {
		s.cursor = (s.cursor + r.requests) % w.Items
	}
	return r
}

// succeeded records one item done at t.
func (s *taskSim) succeeded(item int, t time.Time) {
	switch s.task.Work.Kind {
	case Crawl:
		s.done++
		if s.task.Work.Items > 0 && s.done == s.task.Work.Items {
			s.finishedAt = &t
		}
	case Prices:
		s.refreshedAt[item] = append(s.refreshedAt[item], t)
	}
}
