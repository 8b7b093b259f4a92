// Package workflows holds SchedulerWorkflow, the single writer of pacer's
// scheduling state, and the names and shapes of its messages. It does no I/O:
// every decision that needs a clock takes workflow time.
package workflows

import "time"

// Names fixed by the product contract: operators type them into the temporal
// CLI and outside tests depend on them.
const (
	WorkflowType      = "SchedulerWorkflow"
	DefaultWorkflowID = "v1"
	DefaultTaskQueue  = "pacer"

	QueryStatus           = "status"
	SignalPause           = "pause"
	SignalResume          = "resume"
	SignalRefresh         = "refresh"
	SignalTune            = "tune"
	UpdateRefreshNow      = "refreshNow"
	ActivityRefreshTenero = "RefreshTenero"
	ActivitySweep         = "Sweep"
)

// Defaults for Config fields left zero.
const (
	DefaultTeneroEvery = 5 * time.Minute
	DefaultSweepEvery  = 15 * time.Minute
	// DefaultMaxHistoryEvents is where a run continues as new even if the
	// server has not suggested it yet (it does at 4,096 events): a short history
	// keeps worker restarts and replays cheap.
	DefaultMaxHistoryEvents = 2000
	// The circuit breaker opens after 12 failed runs in a row (an hour of
	// tenero at its default cadence) and then probes hourly.
	DefaultBreakerThreshold = 12
	DefaultBreakerCooldown  = time.Hour
)

// Change IDs for workflow.GetVersion: each gates a change that would make
// histories recorded before it replay differently.
const (
	// changeSweepTask adds the sweep task. Runs started before it go on with
	// tenero alone and pick sweep up at their next continue-as-new.
	changeSweepTask = "add-sweep-task"
	// changeAdaptivePacing turns on the adaptive controller and the
	// upstream budgets: batch sizes and cadences follow the upstream.
	changeAdaptivePacing = "adaptive-pacing"
)
