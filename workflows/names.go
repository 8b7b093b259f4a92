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

	QueryStatus      = "status"
	SignalPause      = "pause"
	SignalResume     = "resume"
	SignalRefresh    = "refresh"
	SignalTune       = "tune"
	UpdateRefreshNow = "refreshNow"
	// SignalHint says an agent has a new transaction (the fast path
	// inserted its swap, or a chainhook delivery named it): the sweep runs
	// soon whatever pacing it is under (SPEC §5.3). Payload {"agent":"SP…"}
	// (optional). Senders debounce per agent before signalling.
	SignalHint = "hint"
	// UpdateBackfill runs a task's occurrences over a past range, each as of
	// its own nominal time (SPEC §3.4). Payload {"task":…,"from":RFC3339,"to":RFC3339}.
	UpdateBackfill = "backfill"
	// UpdateSkip gives up on one owed occurrence of a cron task (SPEC
	// §3.4): {"task":…,"nominalAt":RFC3339}.
	UpdateSkip            = "skip"
	ActivityRefreshTenero = "RefreshTenero"
	ActivitySweep         = "Sweep"
	ActivityRollup        = "Rollup"
	ActivityDeliver       = "Deliver"

	// pause, resume and tune are updates too, under the signals' names:
	// Temporal keeps signal and update names apart, so the temporal CLI's
	// `workflow signal --name pause` and `workflow update execute --name
	// pause` both work, and the update's caller sees a rejection at once.
	UpdatePause       = SignalPause
	UpdateResume      = SignalResume
	UpdateTune        = SignalTune
	UpdateStop        = "stop"
	UpdateReconfigure = "reconfigure"

	// MemoKey is the memo field holding the scheduler's Memo.
	MemoKey = "pacer"
)

// Defaults for Config fields left zero.
const (
	DefaultTeneroEvery = 5 * time.Minute
	// DefaultSweepEvery is how often the sweep looks for due agents; each
	// run visits only the agents that are due (SPEC §5).
	DefaultSweepEvery = time.Minute
	// DefaultMaxHistoryEvents is where a run continues as new even if the
	// server has not suggested it yet (it does at 4,096 events): a short history
	// keeps worker restarts and replays cheap.
	DefaultMaxHistoryEvents = 2000
	// The circuit breaker opens after 12 failed runs in a row (an hour of
	// tenero at its default cadence) and then probes hourly.
	DefaultBreakerThreshold = 12
	DefaultBreakerCooldown  = time.Hour
	// DefaultHeartbeatTimeout lets a sweep page or a slow token take a while
	// without a heartbeat, each of which is billed; a killed worker's run
	// moves to another worker within it.
	DefaultHeartbeatTimeout = 2 * time.Minute
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
	// changeBreaker turns on the circuit breaker. It was deployed without a
	// gate at first; a run that began before it would have replayed its
	// long failure streaks as runs the breaker now skips. Runs without the
	// marker go on without a breaker until their next continue-as-new.
	changeBreaker = "circuit-breaker"
	// changeKeepState is the scheduler that keeps what it learned (issue
	// 10). Each piece changes which commands a run issues, and they shipped
	// together, so one change ID gates them all:
	//   - every activity input carries its run key (pacer.Occurrence);
	//   - a run waits for the requests it will make, not a whole batch;
	//   - the controller judges runs, not minutes;
	//   - the sweep is due when its earliest agent is (its result says when);
	//   - the one timer counts the next due time of running tasks, so a
	//     run's end rarely moves it, and the run continues as new at the
	//     first idle moment instead of draining;
	//   - the memo carries what metrics and a restart need (pause, breakers,
	//     pacing), upserted when it changes.
	changeKeepState = "keep-state"
	// changeRollupTasks adds the rollup and deliver tasks and cron
	// schedules (issues 11 and 12): rollup runs on its cron schedule with
	// catch-up (internal/cron), each occurrence its own run key; deliver
	// is dormant until a rollup run or its own result makes it due. Runs
	// without the marker go on with tenero and sweep until their next
	// continue-as-new.
	changeRollupTasks = "rollup-deliver-tasks"
	// changeOneDecision is the scheduler core of issue 19: one pure
	// decision (schedule.View.Decide) says when each task runs and why,
	// and the loop, the timer and the status ask it alone. With it:
	//   - the timer predicts a running task's next start only when its
	//     cadence alone decides it, never fires while starts are held, and
	//     aligns a task's wake-up with another's that comes soon after;
	//   - pause windows (per task or global) live in the carried state and
	//     the memo; occurrences due while paused are passed as paused;
	//   - a failed cron occurrence stays owed and is retried on a back-off;
	//   - resume clears back-offs; reconfiguring a cron spec starts the new
	//     one at that moment; hints wake the sweep; backfill runs a past range;
	//   - the config carries only what the operator set (defaults resolve
	//     at use).
	changeOneDecision = "one-decision"
	// changeOperatorSkip adds the skip update: an operator gives up on an
	// owed occurrence, which leaves the task's queue and rides on its next
	// run to the ledger as skipped (reason operator).
	changeOperatorSkip = "operator-skip"
	// changeWakeTimers keeps a timer armed for a wake-up that still stands
	// when an earlier one is wanted (a sweep's end set its next run before
	// tenero's): the earlier wake-up gets a timer of its own, instead of
	// the standing one being cancelled and armed again after it, which
	// cost a timer that started no run.
	changeWakeTimers = "wake-timers"
	// changeEndWakes arms a running task's next wake-up when its run ends
	// instead of predicting it at its start: with a timer per standing
	// wake-up (changeWakeTimers) nothing is gained by predicting, and a
	// prediction its run's end moves (the sweep's end aligning tenero onto
	// its own next run) was a timer started for nothing.
	changeEndWakes = "end-wakes"
	// changeCooledProbe: a task its controller cooled down (an upstream
	// failing nearly every request) runs every cooledInterval at its
	// smallest batch, each run a probe, instead of every MaxInterval: the
	// sweep was back two hours after a Hiro outage of any length.
	changeCooledProbe = "cooled-probe"
)

// The back-off of an owed cron occurrence: its run failed, and it is
// retried after 30 s, doubling per failure in a row, at most 15 minutes
// (the breaker then takes over after its threshold).
const (
	owedRetryFirst = 30 * time.Second
	owedRetryMax   = 15 * time.Minute
)

// Timeouts of the rollup and deliver runs. A rollup run recomputes an hour
// and the open days (seconds); a deliver run stops picking new work after a
// minute and waits for its attempts in flight (10 s each), heartbeating
// every few seconds.
const (
	rollupStartToClose  = 5 * time.Minute
	deliverStartToClose = 3 * time.Minute
	// The heartbeat timeouts say how soon a run whose worker died is
	// retried elsewhere. A rollup run takes seconds and heartbeats only to
	// say it is alive (none in a run shorter than 8 s); a deliver run
	// heartbeats its progress. (Activity options are not part of what
	// replay compares: no gate.)
	rollupHeartbeatTimeout  = 10 * time.Second
	deliverHeartbeatTimeout = 30 * time.Second
	// deliverRetryAfterFailure is when a deliver run that failed as a whole
	// (the database down) is tried again.
	deliverRetryAfterFailure = time.Minute
)
