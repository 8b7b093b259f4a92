// Package pacer holds the domain vocabulary shared by every layer: task names,
// error classes and the results tasks report. It does no I/O, so the workflow,
// the activities, the HTTP API and the CLI can all import it.
package pacer

import "time"

// Task names are fixed by the product contract: they appear in signals,
// updates, the status document and metrics.
const (
	TaskTenero  = "tenero"
	TaskSweep   = "sweep"
	TaskRollup  = "rollup"
	TaskDeliver = "deliver"
	// TaskRegistry reads the competition's registry (SPEC §12); it runs
	// only with PACER_REGISTRY_URL set.
	TaskRegistry = "registry"
	// TaskFinalize finalizes the competition's rounds (SPEC §13).
	TaskFinalize = "finalize"
	// TaskChainhook keeps pacer's hook on Hiro's Chainhooks platform
	// (SPEC §11); it runs only with PACER_CHAINHOOK_MANAGE=1.
	TaskChainhook = "chainhook"
	TaskAll       = "all"
)

// ErrorClass says what kind of trouble ended a call (internal/fault carries
// it through wrapping). Only ClassTransport is worth Temporal's activity
// retries; upstream trouble waits for the next tick.
type ErrorClass string

// The error classes (SPEC §3.3).
const (
	ClassRateLimit   ErrorClass = "rate_limit"
	ClassServerError ErrorClass = "server_error"
	ClassTimeout     ErrorClass = "timeout"
	ClassNotFound    ErrorClass = "not_found"
	ClassParseError  ErrorClass = "parse_error"
	ClassTransport   ErrorClass = "transport"
	// ClassPermanent marks an upstream answer that will not change by retrying
	// (410 Gone, 401 with a bad key): the task keeps failing until someone acts.
	ClassPermanent ErrorClass = "permanent"
)

// Run is what every task's result reports about the run itself.
type Run struct {
	StartedAt  time.Time `json:"startedAt"`
	DurationMs int64     `json:"durationMs"`
	// RateLimited says an upstream quota cut the run short; the task is then
	// deferred by RateLimitBackoffMs.
	RateLimited        bool  `json:"rateLimited"`
	RateLimitBackoffMs int64 `json:"rateLimitBackoffMs"`
	// What the upstream's headers said was left, when they said it.
	MinuteRemaining *int `json:"minuteRemaining"`
	MonthRemaining  *int `json:"monthRemaining"`
	// What the run cost the upstream, for pacing: calls made, calls refused
	// with 429, and calls that failed for the upstream's own reasons
	// (rate_limit, server_error, timeout; not item problems).
	Requests       int `json:"requests"`
	Rejected       int `json:"rejected"`
	UpstreamFailed int `json:"upstreamFailed"`
	// ErrorClass and Error are set when the run failed as a whole (quota
	// exhausted, every fetch failing, the database down), empty otherwise.
	ErrorClass ErrorClass `json:"errorClass,omitempty"`
	Error      string     `json:"error,omitempty"`
}

// Meta gives generic code the run part of a result.
func (r *Run) Meta() *Run { return r }

// Occurrence is the run key of one task run (SPEC §3.4): the task and the
// nominal time the schedule gave it. The activity that runs it records it in
// the task_runs ledger and is idempotent on it: a retried attempt, or a
// wake-up repeated after a crash, finds the occurrence done and does not run
// it again. A zero Occurrence (a run scheduled before the ledger existed)
// records nothing.
type Occurrence struct {
	Task      string    `json:"task,omitempty"`
	NominalAt time.Time `json:"nominalAt"`
	// Manual marks an operator's refresh. Its NominalAt is when it was asked
	// for; it is recorded as manual and never consumes a scheduled occurrence.
	Manual bool `json:"manual,omitempty"`
	// Coalesced is set on a `coalesce` catch-up run: the missed nominal times
	// it stands for.
	Coalesced *CoalescedRange `json:"coalesced,omitempty"`
	// Passed are the occurrences the scheduler decided not to run since the
	// task's previous run (skipped, or coalesced into this one); the run's
	// activity writes them to the ledger, so workflow code writes nothing.
	Passed []PassedOccurrence `json:"passed,omitempty"`
	// Live marks a catch-up run under `all`: it runs as of when it starts,
	// not as of its nominal time; the scheduler sets AsOf when it starts it.
	Live bool `json:"live,omitempty"`
	// AsOf is the instant the run computes for, when it is not NominalAt
	// (a Live run).
	AsOf *time.Time `json:"asOf,omitempty"`
}

// CoalescedRange is the span of missed occurrences one coalesced run covers.
type CoalescedRange struct {
	First time.Time `json:"first"`
	Last  time.Time `json:"last"`
	Count int       `json:"count"`
}

// PassedOccurrence is an occurrence that did not get its own run.
type PassedOccurrence struct {
	NominalAt time.Time `json:"nominalAt"`
	// Status is RunSkipped or RunCoalesced.
	Status string `json:"status"`
	// Reason says why a skipped occurrence did not run (Skip…).
	Reason string `json:"reason,omitempty"`
	// CoalescedInto is the nominal time of the run that covered it.
	CoalescedInto *time.Time `json:"coalescedInto,omitempty"`
	// Count > 1 makes the entry stand for Count occurrences passed alike,
	// at NominalAt, NominalAt + StepSeconds, …: a 30-day pause of a
	// minutely schedule is a handful of entries in the workflow's history,
	// not 43,200.
	Count       int   `json:"count,omitempty"`
	StepSeconds int64 `json:"stepSeconds,omitempty"`
}

// Times lists the nominal times p stands for, oldest first.
func (p PassedOccurrence) Times() []time.Time {
	n := max(p.Count, 1)
	out := make([]time.Time, n)
	for i := range out {
		out[i] = p.NominalAt.Add(time.Duration(i) * time.Duration(p.StepSeconds) * time.Second)
	}
	return out
}

// Statuses of task_runs rows (SPEC §6).
const (
	RunScheduled = "scheduled"
	RunRunning   = "running"
	RunOK        = "ok"
	RunFailed    = "failed"
	RunSkipped   = "skipped"
	RunCoalesced = "coalesced"
)

// Reasons of skipped occurrences (SPEC §3.4), and of manual runs.
const (
	SkipPaused  = "paused"
	SkipCatchup = "catchup_skip"
	SkipDSTGap  = "dst_gap"
	// SkipOperator: an operator gave up on an owed occurrence (the skip
	// update); it replaces the occurrence's failed row in the ledger.
	SkipOperator = "operator"
	ReasonManual = "manual"
)

// TeneroResult is what one run of the tenero task reports (SPEC §3).
type TeneroResult struct {
	Run
	TokensAttempted int `json:"tokensAttempted"`
	Succeeded       int `json:"succeeded"`
	Failed          int `json:"failed"`
	// Beyond the contract: how the successes split, and the tokens that were
	// never tried because a quota ran out.
	Written   int `json:"written"`
	Unchanged int `json:"unchanged"`
	Pegged    int `json:"pegged"`
	NoPrice   int `json:"noPrice"`
	Skipped   int `json:"skipped"`
	// Wanted is how many requests the whole token set needs (its tokens that
	// are not pegs), cut or not: what the next run will ask of the budget.
	Wanted int `json:"wanted,omitempty"`
	// Pace is the run's pacing for the next (SPEC §3.8).
	Pace *Pace `json:"pace,omitempty"`
}

// MinuteReserve is what a paced tenero run leaves of every minute window
// (its StopAtMinuteRemaining): it stops when its headers say the window
// is down to it, so pacing never meets the 5-minute back-off of a spent
// minute. An operator's refresh may spend the window (SPEC §3.1).
const MinuteReserve = 1

// TeneroInput is the input of the tenero activity.
type TeneroInput struct {
	// MaxTokens caps how many tokens one run refreshes (0 = the whole set);
	// the static base comes first, so a cut keeps it.
	MaxTokens int `json:"maxTokens,omitempty"`
	// StopAtMinuteRemaining ends the run normally once Tenero says this many
	// requests or fewer are left this minute (0 = run until it says 0). A
	// small reserve keeps a paced run from ever hitting the wall.
	StopAtMinuteRemaining int `json:"stopAtMinuteRemaining,omitempty"`
	// Occurrence is the run's key in the task_runs ledger.
	Occurrence Occurrence `json:"occurrence"`
	// Pace paces the run: its controller sets MaxTokens (SPEC §3.8).
	Pace *PaceInput `json:"pace,omitempty"`
}

// SweepInput is the input of the sweep activity.
type SweepInput struct {
	// MaxRequests caps the Hiro requests of the run (0 = as the shared
	// budget allows).
	MaxRequests int `json:"maxRequests,omitempty"`
	// Occurrence is the run's key in the task_runs ledger.
	Occurrence Occurrence `json:"occurrence"`
	// Pace paces the run: its controller judges it by its outcomes and
	// sets its interval (SPEC §3.8); the Hiro budget sizes it.
	Pace *PaceInput `json:"pace,omitempty"`
}

// SweepResult is what one run of the sweep task reports (SPEC §3).
type SweepResult struct {
	Run
	Scanned      int `json:"scanned"`
	Found        int `json:"found"`
	Inserted     int `json:"inserted"`
	AlreadyKnown int `json:"alreadyKnown"`
	Pending      int `json:"pending"`
	Rejected     int `json:"rejected"`
	// RejectionReasons has every reason key, zero when unused.
	RejectionReasons map[string]int `json:"rejectionReasons"`
	// Cursor is the last address of the page when the page was full (the
	// next run starts after it), null when the walk wrapped.
	Cursor *string `json:"cursor"`
	// HiroErrors counts Hiro calls that failed while the walk went on.
	HiroErrors int `json:"hiroErrors"`
	// AgentsDue is how many agents were still due when the run ended, and
	// LagSeconds how overdue the most overdue of them was (SPEC §3.2).
	AgentsDue  int     `json:"agentsDue"`
	LagSeconds float64 `json:"lagSeconds"`
	// Tiers counts the registered agents per tier: {"hot":n,"warm":n,"cold":n}.
	Tiers map[string]int `json:"tiers"`
	// NextDueAt is when the earliest agent or discovery reader is next
	// due: the workflow wakes the sweep then (never sooner than its
	// configured cadence). Null when nothing is.
	NextDueAt *time.Time `json:"nextDueAt"`
	// Discovery is PACER_DISCOVERY: "tail" or "agents" (SPEC §5.0).
	Discovery string `json:"discovery,omitempty"`
	// Readers reports, per reader ("tail", "contract:<contract_id>",
	// "agents" for the agents' visits), what this run read and where the
	// reader stands (SPEC §5.0).
	Readers map[string]ReaderReport `json:"readers,omitempty"`
	// OpenGaps is how many ranges the tail gave up on (it fell too far
	// behind) the reconciler has not filled yet.
	OpenGaps int `json:"openGaps,omitempty"`
	// Push is where Hiro's WebSocket stands (SPEC §5.0 "Push"), nil with
	// PACER_PUSH=off.
	Push *PushReport `json:"push,omitempty"`
	// StoppedBy says why the run stopped (SPEC §3.1): "done" (nothing more
	// was due), "minute" or "month" (that window of the Hiro budget was
	// spent), "blocked" (Hiro refused), "maxRequests", "deadline" (the
	// run's time cap) or "error".
	StoppedBy string `json:"stoppedBy,omitempty"`
	// Step and Reason are the run's last step as the sweep's plan decided
	// it (discovery.Plan, SPEC §5.0 "One plan"): what it did last and why.
	Step   string `json:"step,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Pace is the run's pacing for the next (SPEC §3.8).
	Pace *Pace `json:"pace,omitempty"`
}

// SweepResult.StoppedBy values other than the budget's windows.
const (
	StoppedDone        = "done"
	StoppedMaxRequests = "maxRequests"
	StoppedDeadline    = "deadline"
	StoppedError       = "error"
)

// ReaderReport is one discovery reader's part of a sweep run.
type ReaderReport struct {
	// Requests, Pages and Candidates count this run's work: Hiro requests
	// (pages and details), list pages read, and entries that were
	// allowlisted calls of registered agents.
	Requests   int `json:"requests"`
	Pages      int `json:"pages"`
	Candidates int `json:"candidates"`
	// Position is the newest entry fully read, "height:index" ("" before
	// the first read); LagSeconds how far it is behind the chain's head,
	// in seconds of block time.
	Position   string  `json:"position"`
	LagSeconds float64 `json:"lagSeconds"`
	// Gaps counts the ranges this reader gave up on, ever.
	Gaps int `json:"gaps"`
	// NextDueAt is when the reader reads next.
	NextDueAt *time.Time `json:"nextDueAt,omitempty"`
	// Source is where the reader reads: for the tail "feed", the chain's
	// contract calls, or "contracts", the allowlisted contracts' own lists
	// (while the month cannot pay the feed, or once Hiro has switched the
	// feed off); for a contract's reader and the agents' visits the list
	// endpoint, "v3" (principals) or "v1" (the deprecated address list).
	Source string `json:"source,omitempty"`
}

// PushReport is where Hiro's WebSocket stands: live (every socket had a
// block within 30 s) or not, since when, the notifications read and the
// reconnects, as its holder last wrote them.
type PushReport struct {
	Live       bool      `json:"live"`
	Since      time.Time `json:"since"`
	Messages   int64     `json:"messages"`
	Reconnects int64     `json:"reconnects"`
	// Holder is the worker holding the subscriptions ("" when none has).
	Holder    string `json:"holder,omitempty"`
	LastError string `json:"lastError,omitempty"`
}

// RegistryInput is the input of the registry activity (SPEC §12).
type RegistryInput struct {
	Occurrence Occurrence `json:"occurrence"`
}

// RegistryResult is what one read of the registry did.
type RegistryResult struct {
	Run
	// NotModified: the registry answered 304 to the last read's ETag.
	NotModified bool `json:"notModified"`
	Pages       int  `json:"pages"`
	// Agents is how many agents the registry lists; the rest count what
	// the read changed.
	Agents       int `json:"agents"`
	Added        int `json:"added"`
	Updated      int `json:"updated"`
	Restored     int `json:"restored"`
	Deregistered int `json:"deregistered"`
	Claims       int `json:"claims"`
}

// FinalizeInput is the input of the finalize activity (SPEC §13).
type FinalizeInput struct {
	Occurrence Occurrence `json:"occurrence"`
}

// FinalizeResult is what one run of the finalize task did.
type FinalizeResult struct {
	Run
	// Finalized are the ids of the rounds this run finalized.
	Finalized []string `json:"finalized"`
	// Waiting is the round the task waits for, when one does: its id,
	// why (WaitGrace or WaitCompleteThrough) and, for completeThrough,
	// how far behind the round's end it is.
	Waiting *RoundWait `json:"waiting,omitempty"`
	// NextDueAt is when the workflow should run finalize again (the
	// earliest grace end of a round not yet final, or a minute on while
	// one waits); nil when no round is left to finalize.
	NextDueAt *time.Time `json:"nextDueAt"`
}

// Why a round waits to be finalized (SPEC §13).
const (
	WaitGrace           = "grace"
	WaitCompleteThrough = "completeThrough"
)

// RoundWait says which round finalize waits for, and why.
type RoundWait struct {
	Round  string `json:"round"`
	Reason string `json:"reason"`
	// BehindSeconds is how far completeThrough is behind the round's end
	// (reason completeThrough), or how long the grace has left (grace).
	BehindSeconds int64 `json:"behindSeconds"`
}

// ChainhookInput is the input of the chainhook activity (SPEC §11).
type ChainhookInput struct {
	Occurrence Occurrence `json:"occurrence"`
}

// ChainhookResult is what one run of the chainhook task did to pacer's
// hook on Hiro's platform.
type ChainhookResult struct {
	Run
	// Action is what the run did: "created", "updated", "enabled" or
	// "none" (the hook was as it should be).
	Action string `json:"action"`
	// HookUUID and HookStatus are the hook's as the platform reports them.
	HookUUID   string `json:"hookUuid,omitempty"`
	HookStatus string `json:"hookStatus,omitempty"`
	// LagBlocks is how far the hook's last evaluated block is behind the
	// chain; Replayed counts the blocks the run asked the platform to
	// evaluate again.
	LagBlocks int64 `json:"lagBlocks"`
	Replayed  int   `json:"replayed"`
	// LastDeliveryAt is when pacer last received a delivery of the hook.
	LastDeliveryAt *time.Time `json:"lastDeliveryAt,omitempty"`
}

// RollupInput is the input of the rollup activity (SPEC §10.1).
type RollupInput struct {
	// Occurrence is the run's key; its NominalAt decides what is computed:
	// the hour that closed at or before it, and every recent day that
	// closed at or before it and is not yet complete.
	Occurrence Occurrence `json:"occurrence"`
}

// RollupResult is what one run of the rollup task reports.
type RollupResult struct {
	Run
	// Hours are the starts of the hours computed (the occurrence's, then
	// the dirty ones recomputed).
	Hours []time.Time `json:"hours"`
	// Days are the days computed, each with whether it is now complete.
	Days []RollupDay `json:"days"`
	// Rows is how many rollup rows the run wrote.
	Rows int `json:"rows"`
	// Dirty are the rollup_dirty marks (UTC hours) the run handled and
	// cleared; Corrections counts the deliveries it created to correct
	// figures already delivered.
	Dirty       []time.Time `json:"dirty"`
	Corrections int         `json:"corrections"`
	// PrunedObservations counts the price observations past their
	// retention that the run deleted.
	PrunedObservations int64 `json:"prunedObservations"`
}

// RollupDay is one daily period a rollup run computed.
type RollupDay struct {
	Start    time.Time `json:"start"`
	End      time.Time `json:"end"`
	Complete bool      `json:"complete"`
}

// DeliverInput is the input of the deliver activity (SPEC §10.3).
type DeliverInput struct {
	// Occurrence is the run's key in the task_runs ledger.
	Occurrence Occurrence `json:"occurrence"`
}

// DeliverResult is what one run of the deliver task reports.
type DeliverResult struct {
	Run
	// Emitted is how many deliveries the run created (hourly and daily).
	Emitted int `json:"emitted"`
	// Attempted counts the POSTs of the run, Retries those of them that
	// were not a delivery's first attempt.
	Attempted int `json:"attempted"`
	Retries   int `json:"retries"`
	// What became of the attempts.
	Delivered int `json:"delivered"`
	Failed    int `json:"failed"`
	// Exhausted counts deliveries the run gave up on (last ladder step, or
	// their subscriber answered 410); Disabled the subscribers it disabled.
	Exhausted int `json:"exhausted"`
	Disabled  int `json:"disabled"`
	// Capped says the run stopped at its per-run caps with work still due.
	Capped bool `json:"capped"`
	// The deliveries table when the run ended, by status (SPEC §3.2).
	Pending        int `json:"pending"`
	Retrying       int `json:"retrying"`
	ExhaustedTotal int `json:"exhaustedTotal"`
	// NextDueAt is when the workflow should run deliver again: soon (at
	// least 1 s ahead) while deliveries are due, the next retry time
	// otherwise, null when nothing is pending. New rollups make deliveries
	// due too: the workflow also runs deliver after each rollup run.
	NextDueAt *time.Time `json:"nextDueAt"`
}
