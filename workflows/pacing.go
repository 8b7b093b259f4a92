package workflows

import (
	"time"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/schedule"
)

// Pacing is one paced task's pacing, carried across continue-as-new. The
// controller runs in the task's activity (SPEC §3.8): the workflow hands
// each run the state the last one returned and stores what it returns.
type Pacing struct {
	// Pace is what the task's last run returned; nil before its first.
	Pace *pacer.Pace `json:"pace,omitempty"`
	// Tune is an operator's tune or reset the next run applies.
	Tune *pacer.PaceTune `json:"tune,omitempty"`
}

// minuteReserve is left in every minute window of tenero
// (pacer.MinuteReserve); Hiro's windows are the Postgres budget's (SPEC
// §5.4).
const minuteReserve = pacer.MinuteReserve

// setupPacing gives each paced task its pacing, and points its cadence at
// the interval its last run chose (at the configured cadence, when a
// reconfigure changed it since).
func (s *scheduler) setupPacing() {
	if s.state.Pacing == nil {
		s.state.Pacing = map[string]*Pacing{}
	}
	for _, d := range s.defs {
		if !d.paced {
			continue
		}
		p := s.state.Pacing[d.name]
		if p == nil {
			p = &Pacing{}
			s.state.Pacing[d.name] = p
		}
		s.tasks[d.name].Every = s.every(d.name)
	}
}

// every is a paced task's interval: its last run's choice, never faster
// than its configured cadence.
func (s *scheduler) every(task string) pacer.Duration {
	cadence := s.cfg.every(task)
	if p := s.state.Pacing[task]; p != nil && p.Pace != nil && p.Pace.Cadence == cadence {
		if s.revision >= 3 {
			return min(max(p.Pace.Every, cadence), max(cadence, pacer.Duration(maxAhead)))
		}
		return max(p.Pace.Every, cadence)
	}
	return cadence
}

// paceInput is what the next run of task is given to pace itself.
func (s *scheduler) paceInput(task string) *pacer.PaceInput {
	p := s.state.Pacing[task]
	if p == nil {
		return nil
	}
	in := &pacer.PaceInput{Cadence: s.cfg.every(task), Tune: p.Tune}
	if p.Pace != nil {
		in.State, in.LastCadence = p.Pace.State, p.Pace.Cadence
	}
	return in
}

// paced stores what a run of t returned of its pacing (a run that
// returned none, a timeout, leaves it), and moves t's cadence.
func (s *scheduler) paced(t *schedule.Task, in *pacer.PaceInput, pace *pacer.Pace) {
	p := s.state.Pacing[t.Name]
	if p == nil || pace == nil {
		return
	}
	p.Pace = pace
	if in != nil && p.Tune == in.Tune {
		p.Tune = nil // applied (a tune sent while the run ran waits for the next)
	}
	t.Every = s.every(t.Name)
}

// stopAt is the minute reserve a tenero run keeps: none for an operator's
// refresh, a real run that may spend the current window (SPEC §3.1).
func stopAt(forced bool) int {
	if forced {
		return 0
	}
	return minuteReserve
}

// pacingStatus is a task's pacing in the status document, as its last run
// decided it.
func (s *scheduler) pacingStatus(task string) *pacer.PaceStatus {
	if p := s.state.Pacing[task]; p != nil && p.Pace != nil {
		st := p.Pace.Status
		return &st
	}
	return nil
}

// tune records an operator's tune or reset for the selected tasks' next
// runs, which apply it within their bounds; an interval applies to the
// next start at once.
func (s *scheduler) tune(in TuneInput, names []string, now time.Time) {
	for _, name := range names {
		p := s.state.Pacing[name]
		if p == nil {
			continue
		}
		batch := in.batch
		if name == pacer.TaskSweep {
			batch = 0 // the sweep has no batch (CheckTune refuses one for it alone)
		}
		p.Tune = &pacer.PaceTune{Reset: in.Reset, Batch: batch, Interval: pacer.Duration(in.interval)}
		switch t := s.tasks[name]; {
		case in.Reset:
			t.Every = s.cfg.every(name)
		case in.interval > 0:
			t.Every = max(pacer.Duration(in.interval), s.cfg.every(name))
		}
		s.logger.Info("scheduler.tuned", "task", name, "reset", in.Reset, "batch", in.batch, "interval", in.interval, "at", now)
	}
}

// pace is a task's batch and interval, as tuned or as its last run chose.
func (s *scheduler) pace(name string) Pace {
	pc := Pace{Interval: s.tasks[name].Every}
	if p := s.state.Pacing[name]; p != nil && p.Tune != nil && p.Tune.Batch > 0 {
		pc.Batch = p.Tune.Batch
	} else if st := s.pacingStatus(name); st != nil {
		pc.Batch = st.Batch
	}
	return pc
}
