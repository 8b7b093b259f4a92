// Package workflows holds SchedulerWorkflow, the single writer of pacer's
// scheduling state, and the names and shapes of its messages. It does no I/O:
// every decision that needs a clock takes workflow time.
package workflows

import (
	"time"

	"go.temporal.io/sdk/workflow"
)

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
	ActivityRegistry      = "Registry"
	// ActivityFinalize and ActivityChainhook are the methods of
	// activities.Activities that run the finalize and chainhook tasks.
	ActivityFinalize  = "Finalize"
	ActivityChainhook = "Chainhook"

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

// What a run schedules is versioned by one change ID with an integer
// revision (SPEC §3.7, docs/revisions.md), read once per run. A change to
// what a run schedules raises RevisionCurrent, branches on s.revision and
// records a history of the new revision; a revision is retired by raising
// RevisionFloor once no open run of v1 is below it (pacer deploy check),
// deleting its branches and its histories in the same commit.
const (
	ChangeID = "scheduler"
	// RevisionFloor is the oldest revision this code replays: the SDK fails
	// a history below it loudly.
	RevisionFloor workflow.Version = 1
	// RevisionCurrent is the revision new runs record. Revision 1 is the
	// scheduler of the first releases, its ten gates retired into it;
	// revision 2 adds the registry task (tasksOf); revision 3 adds the
	// finalize and chainhook tasks, and the fence's fixes (issue 41);
	// revision 4 wakes deliver once finalize finalized a round (runFinalize).
	RevisionCurrent workflow.Version = 4
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
	// onDemandRetryAfterFailure is when a deliver or finalize run that
	// failed as a whole (the database down) is tried again.
	onDemandRetryAfterFailure = time.Minute
	// A finalize run is one transaction; a chainhook run a few calls to
	// Hiro's platform and at most PACER_CHAINHOOK_REPLAY_MAX evaluations.
	finalizeStartToClose  = 2 * time.Minute
	chainhookStartToClose = 3 * time.Minute
)
