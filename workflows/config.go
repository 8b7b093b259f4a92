package workflows

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/cron"
	"github.com/pacer-dev/pacer/internal/schedule"
)

// Config is how the scheduler runs its tasks. It is carried across
// continue-as-new and restarts, and changed only by the reconfigure update.
// Zero fields take their defaults.
type Config struct {
	TeneroEvery pacer.Duration `json:"teneroEvery,omitempty"`
	SweepEvery  pacer.Duration `json:"sweepEvery,omitempty"`
	// MaxHistoryEvents is the history length at which a run continues as new
	// even if the server has not suggested it yet.
	MaxHistoryEvents int `json:"maxHistoryEvents,omitempty"`
	// BreakerThreshold is how many failed runs in a row open a task's circuit
	// breaker (0 = the default, -1 = off); an open breaker probes once per
	// BreakerCooldown until a run succeeds, resume or a refresh closes it.
	BreakerThreshold int            `json:"breakerThreshold,omitempty"`
	BreakerCooldown  pacer.Duration `json:"breakerCooldown,omitempty"`
	// HeartbeatTimeout is how long a task's activity may go without a
	// heartbeat before Temporal retries it elsewhere (0 = 2 minutes). The
	// activities heartbeat at most once per 0.8 × it, on progress only.
	HeartbeatTimeout pacer.Duration `json:"heartbeatTimeout,omitempty"`
	// Schedules are the task schedules configured (SPEC §3.4,
	// PACER_SCHEDULES): tenero and sweep take {"every":…} (it wins over
	// TeneroEvery/SweepEvery), rollup an interval or a cron spec (default
	// cron.Default), deliver none (it runs while deliveries are due).
	Schedules cron.Schedules `json:"schedules,omitempty"`
	// RegistryEvery is PACER_REGISTRY_EVERY when PACER_REGISTRY_URL is
	// set: how often the registry task reads it (SPEC §12); 0 = no
	// registry task.
	RegistryEvery pacer.Duration `json:"registryEvery,omitempty"`
	// ChainhookEvery is PACER_CHAINHOOK_EVERY when PACER_CHAINHOOK_MANAGE=1:
	// how often the chainhook task keeps pacer's hook on Hiro's platform
	// (SPEC §11); 0 = no chainhook task.
	ChainhookEvery pacer.Duration `json:"chainhookEvery,omitempty"`
}

// Bounds of a valid Config.
const (
	// MinEvery is the shortest cadence: the controller moves intervals in
	// whole seconds. Below a minute pacer logs what a cadence costs.
	MinEvery = time.Second
	// MaxEvery bounds a cadence, like a pause, so that a typo cannot stop a
	// task for years.
	MaxEvery = 366 * 24 * time.Hour
	// minHistoryEvents keeps continue-as-new from churning: a run's first
	// workflow task alone writes about a dozen events.
	minHistoryEvents = 30
	// maxHistoryEvents keeps the start hold (holdStarts, at twice it) well
	// inside the server's limit (limit.historyCount.error, 51,200 events
	// by default: a run past it is terminated).
	maxHistoryEvents = 20_000
)

// ErrInvalidConfig is wrapped by every Config validation error.
var ErrInvalidConfig = errors.New("invalid scheduler config")

// Validate reports every field that would not make a working scheduler,
// with its value and the range it must lie in. It is checked before a
// start, by the reconfigure update's validator, and by the workflow itself,
// which fails with this error rather than panic on a config it cannot run.
func (c Config) Validate() error {
	var errs []error
	every := func(name string, d pacer.Duration) {
		if d != 0 && (time.Duration(d) < MinEvery || time.Duration(d) > MaxEvery) {
			errs = append(errs, fmt.Errorf("%s %s: want 0 (the default) or %s to %s", name, d, MinEvery, MaxEvery))
		}
	}
	every("teneroEvery", c.TeneroEvery)
	every("sweepEvery", c.SweepEvery)
	every("breakerCooldown", c.BreakerCooldown)
	every("registryEvery", c.RegistryEvery)
	every("chainhookEvery", c.ChainhookEvery)
	if h := time.Duration(c.HeartbeatTimeout); h != 0 && (h < MinEvery || h > time.Hour) {
		errs = append(errs, fmt.Errorf("heartbeatTimeout %s: want 0 (the default, %s) or %s to 1h", h, DefaultHeartbeatTimeout, MinEvery))
	}
	if c.MaxHistoryEvents != 0 && (c.MaxHistoryEvents < minHistoryEvents || c.MaxHistoryEvents > maxHistoryEvents) {
		errs = append(errs, fmt.Errorf("maxHistoryEvents %d: want 0 (the default, %d) or %d to %d",
			c.MaxHistoryEvents, DefaultMaxHistoryEvents, minHistoryEvents, maxHistoryEvents))
	}
	errs = append(errs, c.validateSchedules()...)
	if c.BreakerThreshold < -1 {
		errs = append(errs, fmt.Errorf("breakerThreshold %d: want -1 (off), 0 (the default, %d) or more",
			c.BreakerThreshold, DefaultBreakerThreshold))
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrInvalidConfig, errors.Join(errs...))
}

// validateSchedules checks each configured schedule against its task: the
// name, the kind of schedule the task can follow, and that it compiles.
func (c Config) validateSchedules() []error {
	var errs []error
	for _, task := range c.Schedules.Tasks() {
		spec := c.Schedules[task]
		switch {
		case task == pacer.TaskDeliver:
			errs = append(errs, fmt.Errorf("schedules.deliver: deliver has no schedule: it runs while deliveries are due"))
		case task != pacer.TaskTenero && task != pacer.TaskSweep && task != pacer.TaskRollup:
			errs = append(errs, fmt.Errorf("schedules: unknown task %.40q (want %s, %s or %s)", task,
				pacer.TaskTenero, pacer.TaskSweep, pacer.TaskRollup))
		case spec.IsCron() && task != pacer.TaskRollup:
			errs = append(errs, fmt.Errorf(`schedules.%s: %s is paced to its upstream's budget, which moves its interval: give it {"every":"<duration>"}, not a cron spec`, task, task))
		case !spec.IsCron() && (spec.Every < MinEvery || spec.Every > MaxEvery):
			errs = append(errs, fmt.Errorf("schedules.%s: every %s: want %s to %s", task, spec.Every, MinEvery, MaxEvery))
		case spec.IsCron():
			if _, err := cron.New(spec); err != nil {
				errs = append(errs, fmt.Errorf("schedules.%s: %w", task, err))
			}
		}
	}
	return errs
}

// schedule is the schedule a task follows in a resolved config (over its
// defaults): the configured one, else the cadence fields for tenero and
// sweep. ok is false for a task without one (deliver).
func (c Config) schedule(task string) (cron.Spec, bool) {
	if spec, ok := c.Schedules[task]; ok {
		return spec, true
	}
	switch task {
	case pacer.TaskTenero:
		return cron.Spec{Every: time.Duration(c.TeneroEvery)}, true
	case pacer.TaskSweep:
		return cron.Spec{Every: time.Duration(c.SweepEvery)}, true
	case pacer.TaskRegistry:
		return cron.Spec{Every: time.Duration(c.RegistryEvery)}, c.RegistryEvery > 0
	case pacer.TaskChainhook:
		return cron.Spec{Every: time.Duration(c.ChainhookEvery)}, c.ChainhookEvery > 0
	}
	return cron.Spec{}, false
}

// every is a task's interval (0 for a cron or unscheduled task).
func (c Config) every(task string) pacer.Duration {
	spec, _ := c.schedule(task)
	return pacer.Duration(spec.Every)
}

// CodeDefaults are the defaults of this build, for every field and for
// rollup's schedule. A run does not read them: it is given the defaults in
// force in its input (SchedulerInput.Defaults), so a release that changes
// one reaches a running scheduler at its next continue-as-new, never in the
// middle of a replayed history (SPEC §3.5).
func CodeDefaults() Config {
	c := Config{
		TeneroEvery:      pacer.Duration(DefaultTeneroEvery),
		SweepEvery:       pacer.Duration(DefaultSweepEvery),
		MaxHistoryEvents: DefaultMaxHistoryEvents,
		BreakerThreshold: DefaultBreakerThreshold,
		BreakerCooldown:  pacer.Duration(DefaultBreakerCooldown),
		HeartbeatTimeout: pacer.Duration(DefaultHeartbeatTimeout),
		Schedules:        cron.Schedules{},
	}
	if spec, ok := cron.Default(pacer.TaskRollup); ok {
		c.Schedules[pacer.TaskRollup] = spec
	}
	return c
}

// Over is c with every field it leaves zero (and every schedule it does
// not set) taken from d.
func (c Config) Over(d Config) Config {
	c.TeneroEvery = cmp.Or(c.TeneroEvery, d.TeneroEvery)
	c.SweepEvery = cmp.Or(c.SweepEvery, d.SweepEvery)
	c.MaxHistoryEvents = cmp.Or(c.MaxHistoryEvents, d.MaxHistoryEvents)
	c.BreakerThreshold = cmp.Or(c.BreakerThreshold, d.BreakerThreshold)
	c.BreakerCooldown = cmp.Or(c.BreakerCooldown, d.BreakerCooldown)
	c.HeartbeatTimeout = cmp.Or(c.HeartbeatTimeout, d.HeartbeatTimeout)
	if len(d.Schedules) > 0 {
		merged := maps.Clone(d.Schedules)
		maps.Copy(merged, c.Schedules)
		c.Schedules = merged
	}
	return c
}

// breaker is the breaker the config asks for.
func (c Config) breaker() schedule.Breaker {
	if c.BreakerThreshold < 0 {
		return schedule.Breaker{}
	}
	return schedule.Breaker{Threshold: c.BreakerThreshold, Cooldown: time.Duration(c.BreakerCooldown)}
}
