package activities

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/pacing"
)

// Pacing runs in the paced tasks' activities (SPEC §3.8): a run takes its
// controller's state from its input, decides its batch, and returns the
// new state with the interval to the next run. The workflow only carries
// the state, so tuning the controller changes no history.

// Bounds of the controllers.
const (
	// maxTeneroBatch covers the whole token set: static base, pegs and
	// the top 50 traded tokens.
	maxTeneroBatch = 64
	// cooledInterval is how often a task the controller cooled down runs
	// (at its smallest batch) while the cooldown lasts: a task is back
	// within minutes of its upstream, not MaxInterval after an outage.
	cooledInterval = 5 * time.Minute
)

// controllerConfig is a task's bounds: never faster than its configured
// cadence, never slower than its slowest useful pace, and tenero's batch
// between a floor that still gives the controller samples and the whole
// set. The sweep has no batch: its plan sizes each step.
func controllerConfig(task string, in *pacer.PaceInput) pacing.ControllerConfig {
	cadence := in.Cadence
	cc := pacing.ControllerConfig{MinInterval: cadence, InitialInterval: cadence,
		Judge: pacing.JudgeRuns, CooledInterval: pacer.Duration(cooledInterval)}
	if task == pacer.TaskTenero {
		cc.MinBatch, cc.MaxBatch, cc.InitialBatch = 5, maxTeneroBatch, maxTeneroBatch
		cc.MaxInterval = max(pacer.Duration(time.Hour), cadence)
		return cc
	}
	cc.MaxInterval = max(pacer.Duration(2*time.Hour), cadence)
	return cc
}

// startPace restores a run's controller within its bounds, applies an
// operator's tune, and decides the run's batch. A nil input paces nothing.
func startPace(task string, in *pacer.PaceInput, now time.Time) (*pacing.Controller, int) {
	if in == nil {
		return nil, 0
	}
	cc := controllerConfig(task, in)
	c := new(pacing.Controller)
	if len(in.State) == 0 || json.Unmarshal(in.State, c) != nil || c.Clamp(cc) != nil {
		var err error
		if c, err = pacing.NewController(cc); err != nil {
			return nil, 0
		}
	} else if in.LastCadence != in.Cadence {
		_ = c.Tune(0, time.Duration(in.Cadence)) // reconfigured: start at the new cadence
	}
	if t := in.Tune; t != nil {
		if t.Reset {
			c.Reset()
		} else {
			_ = c.Tune(t.Batch, time.Duration(t.Interval))
		}
	}
	return c, c.Decide(now).Batch
}

// endPace feeds a finished run to its controller and returns the pace the
// workflow carries to the next run.
func endPace(c *pacing.Controller, in *pacer.PaceInput, run pacer.Run, err error, successes int, now time.Time) *pacer.Pace {
	return endPaceHeld(c, in, run, err, successes, now, nil)
}

// endPaceHeld is endPace for a task whose next run of a batch must also
// wait hold(batch) for what the controller does not see (the month's
// pace): the interval is the longer of the two.
func endPaceHeld(c *pacing.Controller, in *pacer.PaceInput, run pacer.Run, err error, successes int, now time.Time,
	hold func(batch int) (time.Duration, string)) *pacer.Pace {
	if c == nil {
		return nil
	}
	switch {
	case successes+run.UpstreamFailed > 0:
		c.Observe(now, successes, run.UpstreamFailed)
	case err != nil:
		c.Record(now, errorClassOf(err))
	}
	raw, jerr := json.Marshal(c)
	if jerr != nil {
		return nil
	}
	d := c.Decide(now)
	every, wait, by := d.Interval, time.Duration(0), ""
	if hold != nil {
		wait, by = hold(d.Batch)
		every = max(every, wait)
	}
	return &pacer.Pace{State: raw, Cadence: in.Cadence, Every: pacer.Duration(every),
		Status: pacing.StatusHeld(now, c, wait, by, time.Duration(run.DurationMs)*time.Millisecond, pacing.DefaultCost())}
}

// withResult is err carrying res as its details, so that the workflow
// reads a failed run's result (its pace among it) as it reads a good one's.
func withResult(err error, res any) error {
	var appErr *temporal.ApplicationError
	if err == nil || !errors.As(err, &appErr) {
		return err
	}
	return temporal.NewApplicationErrorWithOptions(appErr.Message(), appErr.Type(),
		temporal.ApplicationErrorOptions{NonRetryable: appErr.NonRetryable(), Details: []any{res}})
}

// paced runs a paced task's activity body: its batch from the controller,
// then the controller fed with what the run did.
func paced[R any](ctx context.Context, a *Activities, task string, in *pacer.PaceInput,
	run func(ctx context.Context, batch int) (R, error), meta func(*R) (*pacer.Run, int, **pacer.Pace)) (R, error) {
	return pacedHeld(ctx, a, task, in, run, meta, nil)
}

// pacedHeld is paced for a task whose next run also waits for what the
// controller does not see: hold says how long after this run, whose
// result is r, the next run of a batch waits (endPaceHeld).
func pacedHeld[R any](ctx context.Context, a *Activities, task string, in *pacer.PaceInput,
	run func(ctx context.Context, batch int) (R, error), meta func(*R) (*pacer.Run, int, **pacer.Pace),
	hold func(r *R, now time.Time, batch int) (time.Duration, string)) (R, error) {
	c, batch := startPace(task, in, a.now())
	res, err := run(ctx, batch)
	if c == nil {
		return res, err
	}
	if err != nil {
		var appErr *temporal.ApplicationError
		if errors.As(err, &appErr) && appErr.HasDetails() {
			_ = appErr.Details(&res) // the run's own report of a failure
		}
	}
	r, successes, pace := meta(&res)
	now := a.now()
	var next func(int) (time.Duration, string)
	if hold != nil {
		next = func(batch int) (time.Duration, string) { return hold(&res, now, batch) }
	}
	*pace = endPaceHeld(c, in, *r, err, successes, now, next)
	return res, withResult(err, res)
}
