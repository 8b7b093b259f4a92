package pacing

import (
	"time"

	"github.com/pacer-dev/pacer/internal/budget"
)

// HeldByMonth names the month's pace as what sets a task's interval
// (pacer.PaceStatus.HeldBy).
const HeldByMonth = "month"

// MonthHold is how long after a run at now the next run, which will make
// cost requests, must wait so that the remaining requests of a month
// quota last to the month's end (SPEC §4.7): the remaining requests spread
// evenly over what is left of the month (budget.MonthOf, the quota's
// period for every reader), and the next run goes once that pace has paid
// for its own requests, never for a larger batch. It serves an upstream
// that says only what is left (Tenero sends no month limit): no share of
// the month is kept in reserve, since no limit says how large one should
// be.
//
// A run that costs more than is left waits for the month's end, when the
// quota is whole again: the month then ends with at most one run's
// requests unspent (the first run went before any pace had accrued).
// Zero when the run costs nothing.
func MonthHold(now time.Time, remaining int64, cost int) time.Duration {
	if cost <= 0 {
		return 0
	}
	_, end := budget.MonthOf(now)
	left := end.Sub(now)
	if remaining <= int64(cost) {
		return left
	}
	// Floats: the product of a month in nanoseconds and a batch passes
	// int64 for large batches, and this runs in the activity, not in a
	// replayed workflow.
	return min(time.Duration(float64(left)*float64(cost)/float64(remaining)), left)
}
