// Package pacing decides how much work each task does per run and how often,
// so that pacer spends an upstream's allowance well: as much fresh data as the
// upstream allows, no 429 storms, and never a monthly quota run dry.
//
// Three pieces, all pure and deterministic (time is always an argument, there
// is no clock, no randomness and no goroutine), so that the same code runs
// inside the workflow on workflow time, in unit tests and in the benchmark:
//
//   - Controller: the adaptive controller. It watches the upstream's success
//     rate over a rolling window and moves a task's batch and interval through
//     four zones around a dead zone.
//   - Budget: one per upstream. It follows the minute and month windows from
//     the rate-limit headers the runs report, caps a run at what is left of the
//     minute, and paces the month so that its quota lasts to the month's end.
//   - Pick: which items (tokens) a run with a given allowance refreshes.
//
// Controller and Budget are carried across continue-as-new inside the
// workflow's state, so every field is exported, JSON-tagged and survives a
// round trip. Control decisions use integer arithmetic only: floats appear
// in reported figures (success rate, confidence, projections), never in a
// branch, so a replay on another CPU architecture decides the same.
package pacing

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/tally"
)

// Zone is where the controller's success rate puts a task.
type Zone = pacer.PaceZone

const (
	// ZoneWarmup means fewer outcomes in the window than MinSamples; nothing moves.
	ZoneWarmup Zone = "warmup"
	// ZoneCooldown means success below CooldownBelow. The task runs at MinBatch and
	// the cooled interval (CooledInterval, else MaxInterval) until the
	// cooldown ends, then climbs back through the zones.
	ZoneCooldown Zone = "cooldown"
	// ZoneBackoff means success below BackoffBelow; halve the batch, interval ×1.5.
	ZoneBackoff Zone = "backoff"
	// ZoneSteady means the dead zone between BackoffBelow and GrowAbove; hold.
	ZoneSteady Zone = "steady"
	// ZoneGrow means success above GrowAbove; batch +10%, interval ×0.95.
	ZoneGrow Zone = "grow"
	// ZoneSurge means success above SurgeAbove; batch +25%, interval ×0.8.
	ZoneSurge Zone = "surge"
)

// Step sizes of the zones, in percent. They are not configurable: the seed
// design fixed them and the tests pin them.
const (
	growBatchPct       = 10  // grow: +10% batch
	growIntervalPct    = 95  // grow: interval ×0.95
	surgeBatchPct      = 25  // surge: +25% batch
	surgeIntervalPct   = 80  // surge: interval ×0.8
	backoffIntervalPct = 150 // backoff: interval ×1.5 (the batch halves)
)

// ControllerConfig bounds and tunes a Controller. Zero fields take the
// defaults of WithDefaults; the bounds have none and must be set (MinBatch
// and MaxBatch both 0: a task without a batch, paced by its interval).
type ControllerConfig struct {
	MinBatch    int            `json:"minBatch"`
	MaxBatch    int            `json:"maxBatch"`
	MinInterval pacer.Duration `json:"minInterval"`
	MaxInterval pacer.Duration `json:"maxInterval"`
	// InitialBatch and InitialInterval are where a new or reset controller
	// starts; 0 starts cautiously at MinBatch and MaxInterval.
	InitialBatch    int            `json:"initialBatch,omitempty"`
	InitialInterval pacer.Duration `json:"initialInterval,omitempty"`

	// Judge is what the success rate is measured over: JudgeMinutes (the
	// zero value, kept for runs that began with it) or JudgeRuns.
	Judge Judge `json:"judge,omitempty"`
	// JudgeMinutes: the success rate is measured over Buckets buckets of
	// Bucket each (default 5 × 1 minute). JudgeRuns: over the newest runs,
	// at most Buckets of them (default 3), as few as hold MinSamples
	// outcomes. Nothing moves below MinSamples outcomes (default 5).
	Bucket     pacer.Duration `json:"bucket,omitempty"`
	Buckets    int            `json:"buckets,omitempty"`
	MinSamples int            `json:"minSamples,omitempty"`
	// Cooldown is how long the cooldown zone holds (default 5 minutes).
	Cooldown pacer.Duration `json:"cooldown,omitempty"`
	// CooledInterval is the interval the cooldown zone sets (within the
	// bounds; never faster than the interval before it): the task probes
	// its upstream this often while cooled, so that it is back soon after
	// the upstream is. 0 is MaxInterval, as controllers before it had: a
	// task cooled by an outage then waited MaxInterval (2 hours for the
	// sweep) whether the outage lasted a minute or an hour.
	CooledInterval pacer.Duration `json:"cooledInterval,omitempty"`

	// Zone thresholds in percent of successes (defaults 20, 50, 80, 95).
	// Below CooldownBelow: cooldown; below BackoffBelow: backoff; above
	// GrowAbove: grow; above SurgeAbove: surge; in between: steady.
	CooldownBelow int `json:"cooldownBelow,omitempty"`
	BackoffBelow  int `json:"backoffBelow,omitempty"`
	GrowAbove     int `json:"growAbove,omitempty"`
	SurgeAbove    int `json:"surgeAbove,omitempty"`
}

// WithDefaults fills the zero tuning fields.
func (c ControllerConfig) WithDefaults() ControllerConfig {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	defDur := func(v *pacer.Duration, d time.Duration) {
		if *v == 0 {
			*v = pacer.Duration(d)
		}
	}
	defDur(&c.Bucket, time.Minute)
	if c.Judge == JudgeRuns {
		def(&c.Buckets, 3)
	}
	def(&c.Buckets, 5)
	def(&c.MinSamples, 5)
	defDur(&c.Cooldown, 5*time.Minute)
	def(&c.CooldownBelow, 20)
	def(&c.BackoffBelow, 50)
	def(&c.GrowAbove, 80)
	def(&c.SurgeAbove, 95)
	return c
}

// ErrBadConfig is wrapped by every configuration error.
var ErrBadConfig = errors.New("pacing: bad config")

// Validate reports the first inconsistent field of a config with defaults
// applied.
func (c ControllerConfig) Validate() error {
	switch {
	case c.MinBatch < 1 && c.MaxBatch != 0:
		// Both 0: a task without a batch (the sweep), paced by its interval.
		return fmt.Errorf("%w: minBatch must be at least 1 (or minBatch and maxBatch 0: no batch), got %d", ErrBadConfig, c.MinBatch)
	case c.MaxBatch < c.MinBatch:
		return fmt.Errorf("%w: maxBatch %d is below minBatch %d", ErrBadConfig, c.MaxBatch, c.MinBatch)
	case c.Judge != JudgeMinutes && c.Judge != JudgeRuns:
		return fmt.Errorf("%w: judge must be %q or %q, got %.40q", ErrBadConfig, JudgeMinutes, JudgeRuns, c.Judge)
	case c.MinInterval < pacer.Duration(time.Second):
		// Intervals move in whole seconds; a smaller floor could not move.
		return fmt.Errorf("%w: minInterval must be at least 1s, got %s", ErrBadConfig, c.MinInterval)
	case c.MaxInterval < c.MinInterval:
		return fmt.Errorf("%w: maxInterval %s is below minInterval %s", ErrBadConfig, c.MaxInterval, c.MinInterval)
	case c.Bucket <= 0 || c.Buckets < 1 || c.MinSamples < 1 || c.Cooldown < 0 || c.CooledInterval < 0:
		return fmt.Errorf("%w: bucket, buckets and minSamples must be positive, cooldown and cooledInterval not negative", ErrBadConfig)
	case c.Judge == JudgeMinutes && c.MaxBatch > 0 && c.MinBatch < c.MinSamples:
		// A run at the floor must carry enough outcomes to be judged on its
		// own: a task that runs every few hours at one item a run would
		// never gather MinSamples in its window, and would stay at the
		// floor for good after a cooldown.
		return fmt.Errorf("%w: minBatch %d is below minSamples %d", ErrBadConfig, c.MinBatch, c.MinSamples)
	case c.Judge == JudgeRuns && c.MaxBatch > 0 && c.MinBatch*c.Buckets < c.MinSamples:
		// Likewise for the window of runs: runs at the floor must fill it.
		return fmt.Errorf("%w: minBatch %d × buckets %d is below minSamples %d", ErrBadConfig, c.MinBatch, c.Buckets, c.MinSamples)
	case !(0 <= c.CooldownBelow && c.CooldownBelow <= c.BackoffBelow && c.BackoffBelow <= c.GrowAbove &&
		c.GrowAbove <= c.SurgeAbove && c.SurgeAbove <= 100):
		return fmt.Errorf("%w: thresholds must rise: 0 ≤ cooldownBelow %d ≤ backoffBelow %d ≤ growAbove %d ≤ surgeAbove %d ≤ 100",
			ErrBadConfig, c.CooldownBelow, c.BackoffBelow, c.GrowAbove, c.SurgeAbove)
	}
	return nil
}

// Judge names what a controller's success rate is measured over.
type Judge string

const (
	// JudgeMinutes measures it over a rolling window of minutes: the seed
	// design. One run's burst of failures fills the whole window at a slow
	// cadence, so one bad run could send a task to its slowest pace for
	// hours; it is kept only for runs that began with it (replay).
	JudgeMinutes Judge = ""
	// JudgeRuns measures it over the newest runs, judges each run once, and
	// does not over-react (SPEC §3.3): one bad run backs off one step and the
	// first good run after it restores the pace the task had before; only a
	// second bad run in a row can cool it down.
	JudgeRuns Judge = "runs"
)

// Bucket counts the outcomes observed in one bucket of time.
type Bucket struct {
	Start     time.Time `json:"start"`
	Successes int       `json:"successes"`
	Failures  int       `json:"failures"`
}

// RunOutcome counts the outcomes of one run (JudgeRuns).
type RunOutcome struct {
	At        time.Time `json:"at"`
	Successes int       `json:"successes"`
	Failures  int       `json:"failures"`
}

// Pace is a batch and an interval: where a task was before a dip.
type Pace struct {
	Batch    int            `json:"batch"`
	Interval pacer.Duration `json:"interval"`
}

// Controller is the adaptive controller of one task. Its zero value is not
// usable; build one with NewController. It is plain data (carried across
// continue-as-new): the methods are its only logic.
type Controller struct {
	Config   ControllerConfig `json:"config"`
	Batch    int              `json:"batch"`
	Interval pacer.Duration   `json:"interval"`
	Zone     Zone             `json:"zone"`
	// CooldownUntil is set while the cooldown zone holds.
	CooldownUntil *time.Time `json:"cooldownUntil,omitempty"`
	// Fresh counts outcomes (JudgeRuns: runs) observed since the last step.
	// A step needs fresh evidence, so one burst moves the controller once,
	// however often Decide is asked.
	Fresh int `json:"fresh"`
	// Buckets is the rolling window of JudgeMinutes, oldest first.
	Buckets []Bucket `json:"buckets"`

	// Runs is the window of JudgeRuns, oldest first.
	Runs []RunOutcome `json:"runs,omitempty"`
	// BadRuns counts the bad runs in a row (JudgeRuns).
	BadRuns int `json:"badRuns,omitempty"`
	// Before is the pace the task had when its dip began; good runs bring
	// it back (JudgeRuns). Cooled says the dip went as far as a cooldown,
	// from which the way back takes two good runs instead of one.
	Before *Pace `json:"before,omitempty"`
	Cooled bool  `json:"cooled,omitempty"`
}

// NewController returns a controller at the config's initial batch and
// interval.
func NewController(cfg ControllerConfig) (*Controller, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Controller{Config: cfg}
	c.Reset()
	return c, nil
}

// Reset puts the controller back where a new one starts: initial batch and
// interval, no evidence, no cooldown.
func (c *Controller) Reset() {
	cfg := c.Config
	c.Batch = clampInt(cmp.Or(cfg.InitialBatch, cfg.MinBatch), cfg.MinBatch, cfg.MaxBatch)
	c.Interval = clampDur(cmp.Or(cfg.InitialInterval, cfg.MaxInterval), cfg.MinInterval, cfg.MaxInterval)
	c.Zone = ZoneWarmup
	c.CooldownUntil = nil
	c.Fresh = 0
	c.Buckets = nil
	c.forgetRuns()
}

func (c *Controller) forgetRuns() {
	c.Runs, c.BadRuns, c.Before, c.Cooled = nil, 0, nil, false
}

// Clamp replaces the config (bounds change with a deploy or an operator)
// and moves batch and interval inside the new bounds. The evidence and any
// cooldown are kept: the upstream did not change because the bounds did,
// unless the way of judging changed, whose evidence does not carry over.
func (c *Controller) Clamp(cfg ControllerConfig) error {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return err
	}
	if cfg.Judge != c.Config.Judge {
		c.Fresh, c.Buckets = 0, nil
		c.forgetRuns()
	}
	c.Config = cfg
	c.Batch = clampInt(c.Batch, cfg.MinBatch, cfg.MaxBatch)
	c.Interval = clampDur(c.Interval, cfg.MinInterval, cfg.MaxInterval)
	if c.Before != nil {
		c.Before.Batch = clampInt(c.Before.Batch, cfg.MinBatch, cfg.MaxBatch)
		c.Before.Interval = clampDur(c.Before.Interval, cfg.MinInterval, cfg.MaxInterval)
	}
	return nil
}

// ErrBadTune is returned for a tune with a negative value.
var ErrBadTune = errors.New("pacing: batch and interval must not be negative")

// Tune sets batch and interval by hand (the tune signal), clamped to the
// bounds; 0 leaves a value as it is. An operator who tunes has looked at the
// upstream, so a cooldown ends and the evidence counts afresh from here.
func (c *Controller) Tune(batch int, interval time.Duration) error {
	if batch < 0 || interval < 0 {
		return ErrBadTune
	}
	if batch > 0 {
		c.Batch = clampInt(batch, c.Config.MinBatch, c.Config.MaxBatch)
	}
	if interval > 0 {
		c.Interval = clampDur(pacer.Duration(interval), c.Config.MinInterval, c.Config.MaxInterval)
	}
	c.CooldownUntil = nil
	c.Fresh = 0
	c.forgetRuns()
	if c.Zone == ZoneCooldown {
		c.Zone = ZoneWarmup
	}
	return nil
}

// Observe records outcomes seen at now: successes, and failures that are the
// upstream's (rate_limit, server_error, timeout). Item problems are not the
// upstream's fault; Record sorts outcomes by class. With JudgeRuns each call
// is one run.
func (c *Controller) Observe(now time.Time, successes, upstreamFailures int) {
	successes, upstreamFailures = max(successes, 0), max(upstreamFailures, 0)
	if successes+upstreamFailures == 0 {
		return
	}
	if c.Config.Judge == JudgeRuns {
		c.Runs = append(c.Runs, RunOutcome{At: now, Successes: successes, Failures: upstreamFailures})
		if n := len(c.Runs) - c.Config.Buckets; n > 0 {
			c.Runs = slices.Delete(c.Runs, 0, n)
		}
		c.Fresh++
		return
	}
	c.prune(now)
	start := now.Truncate(time.Duration(c.Config.Bucket))
	if n := len(c.Buckets); n > 0 && c.Buckets[n-1].Start.Equal(start) {
		c.Buckets[n-1].Successes += successes
		c.Buckets[n-1].Failures += upstreamFailures
	} else {
		c.Buckets = append(c.Buckets, Bucket{Start: start, Successes: successes, Failures: upstreamFailures})
	}
	c.Fresh += successes + upstreamFailures
}

// Record records one outcome by its error class: "" is a success. An item
// problem (not_found, parse_error) means the upstream answered, so it counts
// as the upstream's success; transport and permanent trouble says nothing
// about the upstream's load and is not counted.
func (c *Controller) Record(now time.Time, class pacer.ErrorClass) {
	switch {
	case class == "" || class == pacer.ClassNotFound || class == pacer.ClassParseError:
		c.Observe(now, 1, 0)
	case tally.UpstreamFailure(class):
		c.Observe(now, 0, 1)
	}
}

// Decision is what the controller says a task should do now, with the
// evidence behind it (StatusOf shapes it for the status document).
type Decision struct {
	Batch    int           `json:"batch"`
	Interval time.Duration `json:"interval"`
	Zone     Zone          `json:"zone"`
	// CooldownRemaining is zero outside the cooldown zone.
	CooldownRemaining time.Duration `json:"cooldownRemaining"`
	// SuccessRate is successes / Samples over the window (0 with no samples).
	SuccessRate float64 `json:"successRate"`
	Samples     int     `json:"samples"`
	// SuccessLow and SuccessHigh are the 95% Wilson score interval of the
	// success rate: how far the true rate may lie from a small sample's.
	SuccessLow  float64 `json:"successLow"`
	SuccessHigh float64 `json:"successHigh"`
	// Stepped says this Decide applied a zone's step (a value already at
	// its bound may not have moved).
	Stepped bool `json:"stepped"`
}

// Decide takes at most one step on fresh evidence and returns the batch and
// interval to use. Call it when a run finishes (after Observe) and before a
// run starts; calling it more often moves nothing without new outcomes.
func (c *Controller) Decide(now time.Time) Decision {
	var stepped bool
	if c.Config.Judge == JudgeRuns {
		stepped = c.stepRuns(now)
	} else {
		c.prune(now)
		stepped = c.step(now)
	}
	d := c.Snapshot(now)
	d.Stepped = stepped
	return d
}

// step applies the zone the window's success rate falls in, if there is
// fresh evidence. It reports whether it applied one.
func (c *Controller) step(now time.Time) bool {
	cfg := c.Config
	if c.CooldownUntil != nil {
		if now.Before(*c.CooldownUntil) {
			c.Zone = ZoneCooldown
			return false
		}
		// Recovery is gentle: the cooldown left the task at MinBatch and
		// MaxInterval, and from there it climbs through the normal zones on
		// evidence gathered since the cooldown began.
		c.CooldownUntil = nil
	}
	s, f := c.window()
	n := s + f
	if n < cfg.MinSamples {
		c.Zone = ZoneWarmup
		return false
	}
	zone := c.classify(s, n)
	c.Zone = zone
	if c.Fresh < cfg.MinSamples {
		return false
	}
	switch zone {
	case ZoneCooldown:
		until := now.Add(time.Duration(cfg.Cooldown))
		c.CooldownUntil = &until
		c.Batch, c.Interval = cfg.MinBatch, c.cooledInterval()
	case ZoneBackoff:
		c.Batch = shrinkBatch(c.Batch, cfg.MinBatch)
		c.Interval = scaleInterval(c.Interval, backoffIntervalPct, cfg.MinInterval, cfg.MaxInterval)
	case ZoneGrow:
		c.Batch = growBatch(c.Batch, growBatchPct, cfg.MaxBatch)
		c.Interval = scaleInterval(c.Interval, growIntervalPct, cfg.MinInterval, cfg.MaxInterval)
	case ZoneSurge:
		c.Batch = growBatch(c.Batch, surgeBatchPct, cfg.MaxBatch)
		c.Interval = scaleInterval(c.Interval, surgeIntervalPct, cfg.MinInterval, cfg.MaxInterval)
	case ZoneSteady:
		// The dead zone: neither good nor bad enough to move, which keeps
		// the controller from hunting around a limit.
		return false
	}
	c.Fresh = 0
	if zone == ZoneCooldown || zone == ZoneBackoff {
		// The failures that caused a decrease are spent: judging the new
		// setting by them would decrease again for the same reason.
		c.Buckets = nil
	}
	return true
}

// cooledInterval is the interval the cooldown zone sets
// (ControllerConfig.CooledInterval).
func (c *Controller) cooledInterval() pacer.Duration {
	cfg := c.Config
	if cfg.CooledInterval <= 0 {
		return cfg.MaxInterval
	}
	return clampDur(max(cfg.CooledInterval, c.Interval), cfg.MinInterval, cfg.MaxInterval)
}

// classify maps a window of s successes out of n to its zone, in integers.
func (c *Controller) classify(s, n int) Zone {
	cfg := c.Config
	switch pct := s * 100; {
	case pct < cfg.CooldownBelow*n:
		return ZoneCooldown
	case pct < cfg.BackoffBelow*n:
		return ZoneBackoff
	case pct > cfg.SurgeAbove*n:
		return ZoneSurge
	case pct > cfg.GrowAbove*n:
		return ZoneGrow
	default:
		return ZoneSteady
	}
}

// Snapshot reports the controller's current decision without moving it:
// what a status query may call (queries must not change workflow state).
func (c *Controller) Snapshot(now time.Time) Decision {
	s, f := c.windowAt(now)
	d := Decision{Batch: c.Batch, Interval: time.Duration(c.Interval), Zone: c.Zone, Samples: s + f}
	if c.CooldownUntil != nil && now.Before(*c.CooldownUntil) {
		d.Zone = ZoneCooldown
		d.CooldownRemaining = c.CooldownUntil.Sub(now)
	}
	if d.Samples > 0 {
		d.SuccessRate = float64(s) / float64(d.Samples)
	}
	d.SuccessLow, d.SuccessHigh = wilson(s, d.Samples)
	return d
}

// SuccessesPerMinute is the rate of successes over the window, for status.
func (c *Controller) SuccessesPerMinute(now time.Time) float64 {
	s, _ := c.windowAt(now)
	span := time.Duration(c.Config.Buckets) * time.Duration(c.Config.Bucket)
	if c.Config.Judge == JudgeRuns {
		// The window is runs: their successes over the time they span.
		span = time.Minute
		if len(c.Runs) > 0 {
			span = max(span, now.Sub(c.Runs[0].At))
		}
	}
	return float64(s) / span.Minutes()
}

// window sums the (already pruned) buckets.
func (c *Controller) window() (successes, failures int) {
	for _, b := range c.Buckets {
		successes += b.Successes
		failures += b.Failures
	}
	return successes, failures
}

// windowAt sums the buckets inside the window ending at now, without
// pruning; with JudgeRuns, the runs the next judgement would weigh.
func (c *Controller) windowAt(now time.Time) (successes, failures int) {
	if c.Config.Judge == JudgeRuns {
		return c.judged()
	}
	oldest := c.oldestBucket(now)
	for _, b := range c.Buckets {
		if !b.Start.Before(oldest) {
			successes += b.Successes
			failures += b.Failures
		}
	}
	return successes, failures
}

// oldestBucket is the start of the oldest bucket still inside the window.
func (c *Controller) oldestBucket(now time.Time) time.Time {
	b := time.Duration(c.Config.Bucket)
	return now.Truncate(b).Add(-time.Duration(c.Config.Buckets-1) * b)
}

// prune drops the buckets that slid out of the window.
func (c *Controller) prune(now time.Time) {
	oldest := c.oldestBucket(now)
	c.Buckets = slices.DeleteFunc(c.Buckets, func(b Bucket) bool { return b.Start.Before(oldest) })
	if len(c.Buckets) == 0 {
		c.Buckets = nil // keeps the JSON of an empty window stable
	}
}

// growBatch adds pct percent, rounded up so that it always moves: +10% of 3
// is still +1.
func growBatch(b, pct, hi int) int {
	return min(b+(b*pct+99)/100, hi)
}

// shrinkBatch halves, rounded down so that it always moves (until the floor).
func shrinkBatch(b, lo int) int {
	return max(b/2, lo)
}

// scaleInterval multiplies by pct percent in whole seconds and always moves
// by at least a second in the intended direction, within the bounds.
func scaleInterval(d pacer.Duration, pct int, lo, hi pacer.Duration) pacer.Duration {
	secs := int64(time.Duration(d) / time.Second)
	next := secs * int64(pct) / 100
	switch {
	case pct < 100 && next >= secs:
		next = secs - 1
	case pct > 100 && next <= secs:
		next = secs + 1
	}
	return clampDur(pacer.Duration(time.Duration(next)*time.Second), lo, hi)
}

// wilson returns the 95% Wilson score interval of s successes in n trials;
// with no trials it knows nothing: [0, 1].
func wilson(s, n int) (lo, hi float64) {
	if n == 0 {
		return 0, 1
	}
	const z = 1.96
	p, nf := float64(s)/float64(n), float64(n)
	den := 1 + z*z/nf
	mid := (p + z*z/(2*nf)) / den
	half := z * math.Sqrt(p*(1-p)/nf+z*z/(4*nf*nf)) / den
	return max(mid-half, 0), min(mid+half, 1)
}

func clampInt(v, lo, hi int) int { return min(max(v, lo), hi) }

func clampDur(v, lo, hi pacer.Duration) pacer.Duration { return min(max(v, lo), hi) }
