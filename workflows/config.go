package workflows

import (
	"errors"
	"fmt"
	"strings"
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
	// SweepPageSize is how many agents one sweep run walks (0 = 100).
	SweepPageSize int `json:"sweepPageSize,omitempty"`
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
}

// Bounds of a valid Config.
const (
	// MinEvery is the shortest cadence: the controller moves intervals in
	// whole seconds. Below a minute pacer logs what a cadence costs.
	MinEvery = time.Second
	// MaxEvery bounds a cadence, like a pause, so that a typo cannot stop a
	// task for years.
	MaxEvery = 366 * 24 * time.Hour
	// minSweepPage is the smallest sweep page the pacing controller can
	// judge: a run at the floor must carry its minimum of outcomes.
	minSweepPage = 5
	// minHistoryEvents keeps continue-as-new from churning: a run's first
	// workflow task alone writes about a dozen events.
	minHistoryEvents = 30
	// maxHistoryEvents stays well inside the server's 51,200-event limit.
	maxHistoryEvents = 40_000
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
	if h := time.Duration(c.HeartbeatTimeout); h != 0 && (h < MinEvery || h > time.Hour) {
		errs = append(errs, fmt.Errorf("heartbeatTimeout %s: want 0 (the default, %s) or %s to 1h", h, DefaultHeartbeatTimeout, MinEvery))
	}
	if c.SweepPageSize != 0 && c.SweepPageSize < minSweepPage {
		errs = append(errs, fmt.Errorf("sweepPageSize %d: want 0 (the default, %d) or at least %d, the fewest outcomes pacing judges a run by",
			c.SweepPageSize, defaultSweepPage, minSweepPage))
	}
	if c.SweepPageSize < 0 {
		errs = append(errs, fmt.Errorf("sweepPageSize %d: must not be negative", c.SweepPageSize))
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

const defaultSweepPage = 100

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

// schedule is the schedule a task follows: the configured one, else the
// task's default (rollup's cron.Default; the cadence fields for tenero and
// sweep). ok is false for a task without one (deliver).
func (c Config) schedule(task string) (cron.Spec, bool) {
	if spec, ok := c.Schedules[task]; ok {
		return spec, true
	}
	d := c.withDefaults()
	switch task {
	case pacer.TaskTenero:
		return cron.Spec{Every: time.Duration(d.TeneroEvery)}, true
	case pacer.TaskSweep:
		return cron.Spec{Every: time.Duration(d.SweepEvery)}, true
	case pacer.TaskRegistry:
		return cron.Spec{Every: time.Duration(c.RegistryEvery)}, c.RegistryEvery > 0
	}
	return cron.Default(task)
}

// every is a task's interval (0 for a cron or unscheduled task).
func (c Config) every(task string) pacer.Duration {
	spec, _ := c.schedule(task)
	return pacer.Duration(spec.Every)
}

func (c Config) withDefaults() Config {
	if c.TeneroEvery <= 0 {
		c.TeneroEvery = pacer.Duration(DefaultTeneroEvery)
	}
	if c.SweepEvery <= 0 {
		c.SweepEvery = pacer.Duration(DefaultSweepEvery)
	}
	if c.MaxHistoryEvents <= 0 {
		c.MaxHistoryEvents = DefaultMaxHistoryEvents
	}
	if c.BreakerThreshold == 0 {
		c.BreakerThreshold = DefaultBreakerThreshold
	}
	if c.BreakerCooldown <= 0 {
		c.BreakerCooldown = pacer.Duration(DefaultBreakerCooldown)
	}
	if c.HeartbeatTimeout <= 0 {
		c.HeartbeatTimeout = pacer.Duration(DefaultHeartbeatTimeout)
	}
	return c
}

// maxHistoryEvents is the configured length, else the default: resolved
// at use, so that a default changed by a release reaches a running
// scheduler whose operator did not set it (SPEC §3.5).
func (c Config) maxHistoryEvents() int { return c.withDefaults().MaxHistoryEvents }

// heartbeatTimeout is the configured timeout, else the default.
func (c Config) heartbeatTimeout() time.Duration {
	return time.Duration(c.withDefaults().HeartbeatTimeout)
}

// operatorSet is c without the values that equal today's defaults. A
// config carried from a run before changeOneDecision holds every default
// as it was then, with nothing to tell what the operator set: a value that
// equals today's default is dropped, so tomorrow's default reaches it.
func (c Config) operatorSet() Config {
	d := Config{}.withDefaults()
	if c.TeneroEvery == d.TeneroEvery {
		c.TeneroEvery = 0
	}
	if c.SweepEvery == d.SweepEvery {
		c.SweepEvery = 0
	}
	if c.MaxHistoryEvents == d.MaxHistoryEvents {
		c.MaxHistoryEvents = 0
	}
	if c.BreakerThreshold == d.BreakerThreshold {
		c.BreakerThreshold = 0
	}
	if c.BreakerCooldown == d.BreakerCooldown {
		c.BreakerCooldown = 0
	}
	if c.HeartbeatTimeout == d.HeartbeatTimeout {
		c.HeartbeatTimeout = 0
	}
	return c
}

// breaker is the breaker the config asks for.
func (c Config) breaker() schedule.Breaker {
	c = c.withDefaults()
	if c.BreakerThreshold < 0 {
		return schedule.Breaker{}
	}
	return schedule.Breaker{Threshold: c.BreakerThreshold, Cooldown: time.Duration(c.BreakerCooldown)}
}

// CostNote says what the cadences under a minute cost in Temporal actions a
// day (a timer and an activity a run, at the least); empty when none is that
// short. pacer logs it: short cadences are legitimate (staging, adaptive
// tasks) but every run is billed on Temporal Cloud.
func (c Config) CostNote() string {
	c = c.withDefaults()
	var notes []string
	for _, task := range []string{pacer.TaskTenero, pacer.TaskSweep, pacer.TaskRollup} {
		if d := time.Duration(c.every(task)); d > 0 && d < time.Minute {
			runs := float64(24*time.Hour) / float64(d)
			notes = append(notes, fmt.Sprintf("%s every %s: up to %.0f runs and %.0f Temporal actions a day",
				task, d, runs, 2*runs))
		}
	}
	return strings.Join(notes, "; ")
}
