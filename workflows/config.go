package workflows

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/pacer-dev/pacer"
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

// breaker is the breaker the config asks for; runs that began before the
// breaker existed (on set false) have none, as they had none then.
func (c Config) breaker(on bool) schedule.Breaker {
	if c.BreakerThreshold < 0 || !on {
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
	for _, t := range []struct {
		task  string
		every pacer.Duration
	}{{pacer.TaskTenero, c.TeneroEvery}, {pacer.TaskSweep, c.SweepEvery}} {
		if d := time.Duration(t.every); d < time.Minute {
			runs := float64(24*time.Hour) / float64(d)
			notes = append(notes, fmt.Sprintf("%s every %s: up to %.0f runs and %.0f Temporal actions a day",
				t.task, d, runs, 2*runs))
		}
	}
	return strings.Join(notes, "; ")
}
