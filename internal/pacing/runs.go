package pacing

import (
	"time"

	"github.com/pacer-dev/pacer"
)

// stepRuns is step for JudgeRuns: it judges the newest run once, with the
// runs before it when it alone holds too few outcomes, and moves as SPEC
// §3.3 asks of a controller that does not over-react:
//
//   - a bad run (success below BackoffBelow) is one step back: half the
//     batch and, for the first bad run of a dip only, the interval ×1.5;
//     the pace before the dip is remembered;
//   - a second very bad run in a row (below CooldownBelow) cools the task
//     down: MinBatch and the cooled interval (CooledInterval, else
//     MaxInterval) for Cooldown;
//   - a good run (above GrowAbove) after a dip brings the remembered pace
//     back: at once after back-offs, half-way and then all the way after a
//     cooldown. One bad run thus costs at most two runs of reduced pace;
//   - otherwise the zones step as with JudgeMinutes (grow, surge, the dead
//     zone in between).
//
// It reports whether it moved.
func (c *Controller) stepRuns(now time.Time) bool {
	cfg := c.Config
	cooling := c.CooldownUntil != nil && now.Before(*c.CooldownUntil)
	if !cooling {
		c.CooldownUntil = nil
	}
	if c.Fresh == 0 {
		if cooling {
			c.Zone = ZoneCooldown
		}
		return false
	}
	s, f := c.judged()
	n := s + f
	if n < cfg.MinSamples && len(c.Runs) < cfg.Buckets {
		// Too little to judge yet; the next run adds to it.
		if !cooling {
			c.Zone = ZoneWarmup
		}
		return false
	}
	c.Fresh = 0
	zone := c.classify(s, n)
	c.Zone = zone
	switch zone {
	case ZoneCooldown, ZoneBackoff:
		c.BadRuns++
		if c.Before == nil {
			c.Before = &Pace{Batch: c.Batch, Interval: c.Interval}
		}
		if zone == ZoneCooldown && c.BadRuns >= 2 {
			until := now.Add(time.Duration(cfg.Cooldown))
			c.CooldownUntil = &until
			c.Batch, c.Interval, c.Cooled = cfg.MinBatch, c.cooledInterval(), true
		} else {
			c.Zone = ZoneBackoff
			c.Batch = shrinkBatch(c.Batch, cfg.MinBatch)
			if c.BadRuns == 1 && !c.Cooled {
				c.Interval = scaleInterval(c.Interval, backoffIntervalPct, cfg.MinInterval, cfg.MaxInterval)
			}
		}
		// The failures that caused a decrease are spent: the new pace is
		// judged by the runs after it.
		c.Runs = nil
		return true
	case ZoneSteady:
		// The dead zone: neither good nor bad enough to move, which keeps
		// the controller from hunting around a limit.
		c.BadRuns = 0
		return false
	}
	c.BadRuns = 0
	if c.Before != nil {
		c.CooldownUntil = nil
		if c.Cooled {
			// Half-way first: the upstream was down, not just slow.
			c.Cooled = false
			c.Batch = (c.Batch + c.Before.Batch + 1) / 2
			c.Interval = (c.Interval + c.Before.Interval) / 2
			c.Interval -= c.Interval % pacer.Duration(time.Second)
			return true
		}
		c.Batch, c.Interval, c.Before = c.Before.Batch, c.Before.Interval, nil
		return true
	}
	if zone == ZoneSurge {
		c.Batch = growBatch(c.Batch, surgeBatchPct, cfg.MaxBatch)
		c.Interval = scaleInterval(c.Interval, surgeIntervalPct, cfg.MinInterval, cfg.MaxInterval)
	} else {
		c.Batch = growBatch(c.Batch, growBatchPct, cfg.MaxBatch)
		c.Interval = scaleInterval(c.Interval, growIntervalPct, cfg.MinInterval, cfg.MaxInterval)
	}
	return true
}

// judged sums the runs the next judgement weighs: the newest run, and the
// ones before it while they hold fewer than MinSamples outcomes.
func (c *Controller) judged() (successes, failures int) {
	for i := len(c.Runs) - 1; i >= 0; i-- {
		successes += c.Runs[i].Successes
		failures += c.Runs[i].Failures
		if successes+failures >= c.Config.MinSamples {
			break
		}
	}
	return successes, failures
}
