package workflows

import (
	"time"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/pacing"
	"github.com/pacer-dev/pacer/internal/schedule"
)

// Pacing is the adaptive state of one task, carried across continue-as-new.
type Pacing struct {
	Controller *pacing.Controller `json:"controller"`
	// LastRun is how long the last run took (for cost estimates).
	LastRun pacer.Duration `json:"lastRun"`
	// TailFrom is where the next cut batch resumes its rotation through the
	// traded tokens (tenero only).
	TailFrom int `json:"tailFrom,omitempty"`
}

// controllerConfig is each task's bounds: never faster than its configured
// cadence, never slower than its slowest useful pace, and a batch between a
// floor that still gives the controller enough samples and the whole set.
// The controller judges runs, not minutes; a cooldown probes the upstream
// every cooledInterval, not MaxInterval.
func (s *scheduler) controllerConfig(task string, cfg Config) pacing.ControllerConfig {
	var cc pacing.ControllerConfig
	switch task {
	case pacer.TaskTenero:
		cc = pacing.ControllerConfig{MinBatch: 5, MaxBatch: maxTeneroBatch, InitialBatch: maxTeneroBatch,
			MinInterval: cfg.every(pacer.TaskTenero), MaxInterval: max(pacer.Duration(time.Hour), cfg.every(pacer.TaskTenero)),
			InitialInterval: cfg.every(pacer.TaskTenero)}
	default:
		page := cfg.SweepPageSize
		if page <= 0 {
			page = defaultSweepPage
		}
		cc = pacing.ControllerConfig{MinBatch: min(minSweepPage, page), MaxBatch: page, InitialBatch: page,
			MinInterval: cfg.every(pacer.TaskSweep), MaxInterval: max(pacer.Duration(2*time.Hour), cfg.every(pacer.TaskSweep)),
			InitialInterval: cfg.every(pacer.TaskSweep)}
	}
	cc.Judge = pacing.JudgeRuns
	cc.CooledInterval = pacer.Duration(cooledInterval)
	return cc
}

// cooledInterval is how often a task the controller cooled down runs
// (at its smallest batch) while the cooldown lasts and until it has
// recovered: the cooldown's own length, so that a task is back within
// minutes of its upstream, not MaxInterval (2 hours for the sweep) after
// an outage of any length. The run is the probe; the circuit breaker's,
// when it is open, comes on top.
const cooledInterval = 5 * time.Minute

// maxTeneroBatch covers the whole token set: static base, pegs and the top
// 50 traded tokens.
const maxTeneroBatch = 64

// minuteReserve is left in every minute window of tenero: a paced run
// stops when its headers say the window is down to it, so pacing never
// meets the 5-minute back-off of a spent minute. An operator's refresh
// may spend the window (SPEC §3.1). Hiro's windows are the Postgres
// budget's (SPEC §5.4).
const minuteReserve = 1

// setupPacing creates or clamps each task's controller, and points each
// task's cadence at its controller's interval.
func (s *scheduler) setupPacing() {
	if s.state.Pacing == nil {
		s.state.Pacing = map[string]*Pacing{}
	}
	for _, d := range s.defs {
		if !d.paced {
			continue
		}
		cc := s.controllerConfig(d.name, s.cfg)
		p := s.state.Pacing[d.name]
		switch {
		case p == nil || p.Controller == nil:
			c, err := pacing.NewController(cc)
			if err != nil {
				s.logger.Error("pacing.config_invalid", "task", d.name, "error", err.Error())
				continue
			}
			s.state.Pacing[d.name] = &Pacing{Controller: c}
		default:
			if err := p.Controller.Clamp(cc); err != nil {
				s.logger.Error("pacing.config_invalid", "task", d.name, "error", err.Error())
			}
		}
		s.tasks[d.name].Every = s.state.Pacing[d.name].Controller.Interval
	}
}

// batch is how much the next run of task may do: the controller's batch
// (zero, no limit, for a task without one). What the upstream's quota
// allows is the activity's to find: the Postgres budget for Hiro, the
// headers for Tenero.
func (s *scheduler) batch(task string, now time.Time) int {
	p := s.state.Pacing[task]
	if p == nil {
		return 0
	}
	return p.Controller.Decide(now).Batch
}

// stopAt is the minute reserve a tenero run keeps: none for an operator's
// refresh, a real run that may spend the current window (SPEC §3.1).
func stopAt(forced bool) int {
	if forced {
		return 0
	}
	return minuteReserve
}

// observe feeds a finished run to the task's controller, then moves the
// task's cadence.
func (s *scheduler) observe(t *schedule.Task, run *pacer.Run, successes int, now time.Time) {
	p := s.state.Pacing[t.Name]
	if p == nil {
		return
	}
	if successes+run.UpstreamFailed > 0 {
		p.Controller.Observe(now, successes, run.UpstreamFailed)
	} else if run.ErrorClass != "" {
		p.Controller.Record(now, run.ErrorClass)
	}
	p.LastRun = pacer.Duration(time.Duration(run.DurationMs) * time.Millisecond)
	t.Every = pacer.Duration(p.Controller.Decide(now).Interval)
}

// pacingStatus is a task's pacing in the status document, read-only.
func (s *scheduler) pacingStatus(task string, now time.Time) *pacing.TaskStatus {
	p := s.state.Pacing[task]
	if p == nil {
		return nil
	}
	st := pacing.StatusOf(now, p.Controller, time.Duration(p.LastRun), pacing.DefaultCost())
	return &st
}

// tune applies an operator's tune or reset to the selected tasks.
func (s *scheduler) tune(in TuneInput, names []string, now time.Time) {
	for _, name := range names {
		p := s.state.Pacing[name]
		if p == nil {
			continue
		}
		if in.Reset {
			p.Controller.Reset()
		} else if err := p.Controller.Tune(in.batch, in.interval); err != nil {
			s.logger.Warn("scheduler.message_rejected", "message", SignalTune, "reason", err.Error())
			continue
		}
		d := p.Controller.Decide(now)
		s.tasks[name].Every = pacer.Duration(d.Interval)
		s.logger.Info("scheduler.tuned", "task", name, "reset", in.Reset, "batch", d.Batch, "interval", d.Interval)
	}
}
