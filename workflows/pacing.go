package workflows

import (
	"time"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/pacing"
	"github.com/pacer-dev/pacer/internal/schedule"
)

// Upstream names key the budgets: one per upstream, shared by every task
// that calls it.
const (
	upstreamTenero = "tenero"
	upstreamHiro   = "hiro"
)

// Pacing is the adaptive state of one task, carried across continue-as-new.
type Pacing struct {
	Controller *pacing.Controller `json:"controller"`
	// LastRun is how long the last run took (for cost estimates).
	LastRun pacer.Duration `json:"lastRun"`
	// Need is how many upstream requests the next run will make, learned
	// from the last (0 = not known yet): month pacing waits for that many,
	// never for a larger batch (SPEC §4.7).
	Need int `json:"need,omitempty"`
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

func upstreamOf(task string) string {
	if task == pacer.TaskTenero {
		return upstreamTenero
	}
	return upstreamHiro
}

// budgetConfig keeps one request a minute in reserve: a paced run then stops
// just short of the wall instead of hitting it (and the 5-minute back-off
// SPEC §3 prescribes for an exhausted minute), and the agents' fast path
// always has room on Hiro.
func budgetConfig() pacing.BudgetConfig {
	return pacing.BudgetConfig{Reserve: 1, MinuteReserve: 1}
}

// setupPacing creates or clamps each task's controller and each upstream's
// budget, and points each task's cadence at its controller's interval.
func (s *scheduler) setupPacing() {
	if s.state.Pacing == nil {
		s.state.Pacing = map[string]*Pacing{}
	}
	if s.state.Budgets == nil {
		s.state.Budgets = map[string]*pacing.Budget{}
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
		up := upstreamOf(d.name)
		if s.state.Budgets[up] == nil {
			s.state.Budgets[up] = pacing.NewBudget(budgetConfig())
		}
		s.tasks[d.name].Every = s.state.Pacing[d.name].Controller.Interval
	}
}

// batch is how much the next run of task may do: the controller's batch,
// capped by what the upstream's budget allows now. An operator's refresh
// gets the controller's whole batch: the budget books the overspend and
// paces the runs after it. Zero means no limit (pacing off).
func (s *scheduler) batch(task string, now time.Time, forced bool) int {
	p := s.state.Pacing[task]
	if p == nil {
		return 0
	}
	d := p.Controller.Decide(now)
	if forced {
		return d.Batch
	}
	return max(1, s.state.Budgets[upstreamOf(task)].Cap(now, d.Batch))
}

// stopAt is the minute reserve the task's run keeps (0 with pacing off).
// An operator's refresh is a real run (SPEC §3.1): it may spend the
// current window to the last request the headers allow.
func (s *scheduler) stopAt(task string, forced bool) int {
	if forced {
		return 0
	}
	return s.state.Budgets[upstreamOf(task)].StopAt()
}

// observe feeds a finished run to the task's controller and its upstream's
// budget, then moves the task's cadence and its earliest next start.
func (s *scheduler) observe(t *schedule.Task, run *pacer.Run, successes int, now time.Time) {
	p := s.state.Pacing[t.Name]
	if p == nil {
		return
	}
	end := run.StartedAt.Add(time.Duration(run.DurationMs) * time.Millisecond)
	if run.StartedAt.IsZero() || end.After(now) {
		end = now
	}
	b := s.state.Budgets[upstreamOf(t.Name)]
	b.Record(pacing.Report{Start: run.StartedAt, End: end, Requests: run.Requests, Rejected: run.Rejected,
		MinuteRemaining: run.MinuteRemaining, MonthRemaining: run.MonthRemaining})
	if successes+run.UpstreamFailed > 0 {
		p.Controller.Observe(now, successes, run.UpstreamFailed)
	} else if run.ErrorClass != "" {
		p.Controller.Record(now, run.ErrorClass)
	}
	p.LastRun = pacer.Duration(time.Duration(run.DurationMs) * time.Millisecond)
	d := p.Controller.Decide(now)
	t.Every = pacer.Duration(d.Interval)
	want := d.Batch
	if p.Need > 0 {
		// Pacing by need: the next run makes about as many requests as the
		// last one wanted, which may be far fewer than the batch allows.
		want = min(want, p.Need)
	}
	if ready := b.ReadyAt(now, want); ready.After(now) {
		t.PacedUntil = &ready
	} else {
		t.PacedUntil = nil
	}
}

// pacingStatus is a task's pacing in the status document, read-only.
func (s *scheduler) pacingStatus(task string, now time.Time) *pacing.TaskStatus {
	p := s.state.Pacing[task]
	if p == nil {
		return nil
	}
	st := pacing.StatusOf(now, p.Controller, s.state.Budgets[upstreamOf(task)], time.Duration(p.LastRun), pacing.DefaultCost())
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

// learnTeneroNeed keeps how many requests the next tenero run will make:
// the requests its whole token set needs (pegs cost none), at most the
// batch. A result from before Wanted existed falls back on what the run
// meant to fetch; a run that did not get to its token set says nothing.
func (p *Pacing) learnTeneroNeed(res *pacer.TeneroResult) {
	switch {
	case res.Wanted > 0:
		p.Need = res.Wanted
	case res.TokensAttempted > 0:
		p.Need = max(res.TokensAttempted-res.Pegged+res.Skipped, 1)
	}
}
