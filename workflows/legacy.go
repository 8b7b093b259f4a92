package workflows

import (
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/pacer-dev/pacer/internal/schedule"
)

// loopLegacy is the loop of runs that began before changeKeepState, kept
// as it was so that they replay: when the run wants to continue as new it
// drains (no scheduled starts), and its timer ignores running tasks. It
// ends only by continuing as new or by cancellation.
func (s *scheduler) loopLegacy(ctx workflow.Context) error {
	draining := false
	for {
		if err := ctx.Err(); err != nil {
			return err // cancelled by an operator
		}
		now := workflow.Now(ctx)
		s.expirePause(now)
		s.startRuns(ctx, now, draining)
		if !draining && s.continueAsNewWanted(ctx) {
			draining = true
			s.logger.Info("scheduler.continue_as_new_wanted", "historyLength", workflow.GetInfo(ctx).GetCurrentHistoryLength())
		}
		if draining && s.idle() {
			done, err := s.handOver(ctx)
			if err != nil {
				return err
			}
			if done {
				return s.continueAsNew(ctx)
			}
			continue
		}
		s.waitLegacy(ctx, now, draining)
	}
}

// waitLegacy is wait as it was before changeKeepState.
func (s *scheduler) waitLegacy(ctx workflow.Context, now time.Time, draining bool) {
	sel := workflow.NewSelector(ctx)
	for _, sig := range s.signals() {
		sel.AddReceive(sig.ch, func(c workflow.ReceiveChannel, _ bool) { s.receive(ctx, sig) })
	}
	sel.AddReceive(s.wake, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil) })
	if wake, ok := schedule.NextWake(now, s.state.PausedUntil, s.state.Tasks); ok && !draining {
		s.armTimer(ctx, now, wake, false)
	}
	if s.timer != nil {
		sel.AddFuture(s.timer, func(workflow.Future) { s.timer, s.cancelTimer = nil, nil })
	}
	s.setDetails(ctx)
	sel.Select(ctx)
}
