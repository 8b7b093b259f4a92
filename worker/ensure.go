package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/pacer-dev/pacer/internal/metrics"
	"github.com/pacer-dev/pacer/internal/page"
	"github.com/pacer-dev/pacer/internal/schedule"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/workflows"
)

// Mode says who ensures the scheduler runs, which decides what becomes of
// a scheduler stopped on purpose.
type Mode int

const (
	// KeepAlive is a worker's check: a stopped scheduler stays stopped.
	KeepAlive Mode = iota
	// Start is an operator's `pacer start`: a stopped scheduler starts too.
	Start
	// Inspect only describes: nothing is started.
	Inspect
)

// Ensured is what Ensure found and did.
type Ensured struct {
	// RunID is the scheduler's run: the one started, the one running, or
	// the stopped one left alone.
	RunID string
	// Started is true when this call started a run (or found one started
	// at the same moment by another caller).
	Started bool
	// Stopped is the stopped run's result when KeepAlive left it stopped.
	Stopped *workflows.StopResult
	// Restart is set when the new run carries the state of a closed one.
	Restart *workflows.Restart
	// Task is the open run's workflow task as its description shows it:
	// whether its tasks keep failing, and which version it is pinned to.
	Task TaskHealth
}

// TaskHealth is what a description says of an open run's workflow tasks
// and its deployment version (no history read, no billed action).
type TaskHealth struct {
	// Attempt is the pending workflow task's attempt (0: none pending).
	// Temporal retries a failed workflow task for ever, each retry one
	// attempt more and none of them written to history: past the first,
	// the run's workflow tasks are failing (a nondeterminism error, a
	// panic, a worker that cannot decode its input), and it makes no
	// progress until a worker can run it.
	Attempt int32
	// Since is when the failing task was first scheduled.
	Since *time.Time
	// Version is the deployment version the run is pinned to or ran on
	// last ("" when unversioned); Behavior its versioning behaviour.
	Version  string
	Behavior string
}

// Failing says the run's workflow tasks keep failing.
func (h TaskHealth) Failing() bool { return h.Attempt >= FailingAttempt }

// FailingAttempt is the attempt from which a pending workflow task counts
// as failing: the first retry. A transient failure (a worker stopped
// mid-task) is retried once and clears; a deterministic one never does,
// and the server retries it about every 10 s, so a keep-alive check every
// minute sees it within two.
const FailingAttempt = 2

func taskHealth(d *workflowservice.DescribeWorkflowExecutionResponse) TaskHealth {
	var h TaskHealth
	if p := d.GetPendingWorkflowTask(); p != nil {
		h.Attempt = p.GetAttempt()
		if t := p.GetOriginalScheduledTime(); t != nil {
			since := t.AsTime().UTC()
			h.Since = &since
		}
	}
	if v := d.GetWorkflowExecutionInfo().GetVersioningInfo(); v != nil {
		if dv := v.GetDeploymentVersion(); dv != nil {
			h.Version = dv.GetDeploymentName() + "." + dv.GetBuildId()
		}
		if o := v.GetVersioningOverride(); o != nil && o.GetPinned().GetVersion() != nil {
			pv := o.GetPinned().GetVersion()
			h.Version = pv.GetDeploymentName() + "." + pv.GetBuildId()
		}
		if b := v.GetBehavior(); b != enumspb.VERSIONING_BEHAVIOR_UNSPECIFIED {
			h.Behavior = strings.ToLower(strings.TrimPrefix(b.String(), "VERSIONING_BEHAVIOR_"))
		}
	}
	return h
}

// EnsureRunning starts the scheduler unless a run is open, as an operator
// does (Ensure with Start), and returns the open run's ID.
func EnsureRunning(ctx context.Context, c client.Client, s Scheduler) (string, error) {
	e, err := Ensure(ctx, c, s, Start)
	return e.RunID, err
}

// StopRecord keeps a deliberate stop where Temporal's retention cannot
// remove it (SPEC §3.5): internal/store's Store.
type StopRecord interface {
	RecordStop(ctx context.Context, workflowID string, stop store.SchedulerStop) error
	SchedulerStopped(ctx context.Context, workflowID string) (store.SchedulerStop, bool, error)
	ClearStop(ctx context.Context, workflowID string, startedAfter time.Time) error
	ClearStopOf(ctx context.Context, workflowID, runID string) error
}

// Ensure makes sure the scheduler runs (SPEC §3.5). An open run is left as
// it is. A scheduler never started (or deleted) starts with s.Config,
// unless s.Stops recorded a stop: then it stays stopped under KeepAlive,
// and Start carries the stopped state. A run stopped on purpose stays
// stopped under KeepAlive (and its stop is recorded in s.Stops); under
// Start, and for a run that closed any other way, a new run starts
// carrying the last state: the stopped run's result, or for a run that
// ended without one the input it started with (its history's first event)
// with its memo's pause and breakers laid over it. Any number of callers
// at once make one run: the server resolves the race (conflict policy
// USE_EXISTING). Describing a workflow and reading its history are not
// billed actions.
func Ensure(ctx context.Context, c client.Client, s Scheduler, mode Mode) (Ensured, error) {
	s = s.withDefaults()
	d, err := c.DescribeWorkflowExecution(ctx, s.WorkflowID, "")
	var nf *serviceerror.NotFound
	switch {
	case errors.As(err, &nf):
		return ensureMissing(ctx, c, s, mode)
	case err != nil:
		return Ensured{}, fmt.Errorf("describe scheduler %s: %w", s.WorkflowID, err)
	}
	info := d.GetWorkflowExecutionInfo()
	runID := info.GetExecution().GetRunId()
	switch info.GetStatus() {
	case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW:
		e := Ensured{RunID: runID, Task: taskHealth(d)}
		if mode != Inspect && s.Stops != nil {
			// A run started after a recorded stop ended it (pacer start,
			// or a start by hand); the stopped run itself started before.
			if err := s.Stops.ClearStop(ctx, s.WorkflowID, info.GetStartTime().AsTime()); err != nil {
				return e, err
			}
		}
		return e, nil
	}
	if mode == Inspect {
		return Ensured{RunID: runID}, nil
	}
	if info.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED {
		var res *workflows.StopResult
		if err := c.GetWorkflow(ctx, s.WorkflowID, runID).Get(ctx, &res); err != nil {
			if errors.As(err, &nf) {
				// Deleted between the description and the read (retention):
				// the scheduler is missing now, and Postgres says whether it
				// was stopped.
				return ensureMissing(ctx, c, s, mode)
			}
			return Ensured{}, fmt.Errorf("read stopped scheduler %s: %w", s.WorkflowID, err)
		}
		if res != nil && res.State != nil {
			if mode == KeepAlive && !isHandoff(res) {
				return Ensured{RunID: runID, Stopped: res}, RecordStop(ctx, s, runID, res)
			}
			return startStopped(ctx, c, s, runID, res)
		}
		if mode == KeepAlive {
			// Only a stop completes the scheduler: one whose result lost its
			// state stays stopped rather than start without it (issue 41.5).
			return Ensured{RunID: runID}, fmt.Errorf("scheduler %s run %s completed without its state in its result: left stopped; "+
				"pacer start starts it with the state that run began with", s.WorkflowID, runID)
		}
	}
	in, err := lastInput(ctx, c, s, info)
	if err != nil {
		return Ensured{}, err
	}
	return start(ctx, c, s, in)
}

// ensureMissing is Ensure when Temporal holds no run of the scheduler: a
// new namespace, or every run deleted (by retention, or by hand).
func ensureMissing(ctx context.Context, c client.Client, s Scheduler, mode Mode) (Ensured, error) {
	if s.Stops != nil {
		// Unknown is not "not stopped": a failed read starts nothing.
		res, ok, err := recordedStop(ctx, s.Stops, s.WorkflowID)
		if err != nil {
			return Ensured{}, err
		}
		if ok {
			if mode != Start {
				return Ensured{RunID: res.runID, Stopped: &res.StopResult}, nil
			}
			return startStopped(ctx, c, s, res.runID, &res.StopResult)
		}
	}
	if mode == Inspect {
		return Ensured{}, nil
	}
	return start(ctx, c, s, workflows.SchedulerInput{Config: s.Config})
}

// stopRecord is a stop kept in Postgres: the stopped run and its result.
type stopRecord struct {
	workflows.StopResult
	runID string
}

// recordedStop reads the stop recorded for the scheduler workflowID; ok is
// false when none is.
func recordedStop(ctx context.Context, stops StopRecord, workflowID string) (stopRecord, bool, error) {
	stop, ok, err := stops.SchedulerStopped(ctx, workflowID)
	if err != nil || !ok {
		return stopRecord{}, false, err
	}
	res := stopRecord{runID: stop.RunID}
	if err := json.Unmarshal(stop.Result, &res.StopResult); err != nil {
		return stopRecord{}, false, fmt.Errorf("decode the recorded stop of %s: %w", workflowID, err)
	}
	return res, true, nil
}

// stoppedMemo is the memo of a stopped scheduler whose runs are deleted,
// from the state it stopped with: its pause and breakers.
func stoppedMemo(res stopRecord) *workflows.Memo {
	if res.State == nil {
		return nil
	}
	m := &workflows.Memo{At: res.StoppedAt, PausedUntil: res.State.PausedUntil, Pauses: res.State.Pauses, Tasks: map[string]workflows.MemoTask{}}
	for _, t := range res.State.Tasks {
		m.Tasks[t.Name] = workflows.MemoTask{ConsecutiveFailures: t.ConsecutiveFailures, BreakerUntil: t.BreakerUntil, BreakerTrips: t.BreakerTrips}
	}
	return m
}

// StoppedStatus is the status document of a stopped scheduler Temporal no
// longer holds (retention deleted its runs), from the stop recorded in
// stops: the state it stopped with at now, with its stop's reason (SPEC
// §3.5). ok is false when no stop is recorded.
func StoppedStatus(ctx context.Context, stops StopRecord, workflowID string) (st workflows.Status, ok bool, err error) {
	res, ok, err := recordedStop(ctx, stops, workflowID)
	if err != nil || !ok || res.State == nil {
		return workflows.Status{}, false, err
	}
	sn := workflows.Snapshot{WorkflowID: workflowID, RunID: res.runID, At: res.StoppedAt, Config: res.Config.Over(workflows.CodeDefaults()), State: *res.State,
		Stopping: &workflows.StopInput{Reason: res.Reason}}
	return sn.Status(time.Now()), true, nil
}

// startStopped starts the scheduler again carrying the state the stopped
// run runID returned, and clears the recorded stop if it is still runID's:
// a stop of the new run recorded meanwhile stays.
func startStopped(ctx context.Context, c client.Client, s Scheduler, runID string, res *workflows.StopResult) (Ensured, error) {
	e, err := start(ctx, c, s, workflows.SchedulerInput{Config: res.Config, State: res.State,
		Restart: &workflows.Restart{After: "stopped", RunID: runID, StateFrom: res.StoppedAt}})
	if err != nil || s.Stops == nil {
		return e, err
	}
	return e, s.Stops.ClearStopOf(ctx, s.WorkflowID, runID)
}

// RecordStop records in s.Stops (when set) that run runID of the scheduler
// stopped on purpose with res; a handoff's stop is not recorded.
func RecordStop(ctx context.Context, s Scheduler, runID string, res *workflows.StopResult) error {
	if s.Stops == nil || res == nil || res.State == nil || isHandoff(res) {
		return nil
	}
	raw, err := json.Marshal(res)
	if err != nil {
		return fmt.Errorf("encode the stop of %s: %w", s.WorkflowID, err)
	}
	return s.Stops.RecordStop(ctx, s.withDefaults().WorkflowID, store.SchedulerStop{RunID: runID, StoppedAt: res.StoppedAt, Result: raw})
}

// lastInput is what a run that closed without a result carries on with:
// the input it started with, its memo's pause and breakers, and its config
// unless that config cannot run (then the worker's).
func lastInput(ctx context.Context, c client.Client, s Scheduler, info *workflowpb.WorkflowExecutionInfo) (workflows.SchedulerInput, error) {
	runID := info.GetExecution().GetRunId()
	// The first page holds the first event; the rest is never read.
	it := c.GetWorkflowHistory(ctx, s.WorkflowID, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	if !it.HasNext() {
		return workflows.SchedulerInput{}, fmt.Errorf("%s run %s has no history", s.WorkflowID, runID)
	}
	first, err := it.Next()
	if err != nil {
		return workflows.SchedulerInput{}, fmt.Errorf("read the first event of %s run %s: %w", s.WorkflowID, runID, err)
	}
	started := first.GetWorkflowExecutionStartedEventAttributes()
	if started == nil {
		return workflows.SchedulerInput{}, fmt.Errorf("the first event of %s run %s is not its start", s.WorkflowID, runID)
	}
	var in workflows.SchedulerInput
	if p := started.GetInput(); len(p.GetPayloads()) > 0 {
		if err := s.DataConverter.FromPayloads(p, &in); err != nil {
			return workflows.SchedulerInput{}, fmt.Errorf("decode the input of %s run %s: %w", s.WorkflowID, runID, err)
		}
	}
	in.Restart = &workflows.Restart{
		After:     strings.ToLower(strings.ReplaceAll(info.GetStatus().String(), "TimedOut", "timed out")),
		RunID:     runID,
		StateFrom: info.GetStartTime().AsTime().UTC(),
	}
	if in.Config.Validate() != nil {
		in.Config = s.Config
	}
	if p := info.GetMemo().GetFields()[workflows.MemoKey]; p != nil {
		var m workflows.Memo
		if err := s.DataConverter.FromPayload(p, &m); err == nil && !m.At.IsZero() {
			if in.State == nil {
				in.State = &workflows.State{} // a first run's: it began with none
			}
			applyMemo(m, in.State)
			at := m.At
			in.Restart.OperatorStateFrom = &at
		}
	}
	return in, nil
}

// applyMemo lays the memo's pause and breakers over a state that is older
// (the input of the run the memo belongs to): they are what operators set
// and must find again after a restart. A task the state does not hold yet
// (the state of a first run is empty) is added; the workflow puts the
// tasks in order when it starts.
func applyMemo(m workflows.Memo, st *workflows.State) {
	st.PausedUntil = m.PausedUntil
	st.Pauses = m.Pauses
	for _, name := range slices.Sorted(maps.Keys(m.Tasks)) {
		mt := m.Tasks[name]
		i := slices.IndexFunc(st.Tasks, func(t *schedule.Task) bool { return t != nil && t.Name == name })
		if i < 0 {
			st.Tasks = append(st.Tasks, &schedule.Task{Name: name})
			i = len(st.Tasks) - 1
		}
		t := st.Tasks[i]
		t.ConsecutiveFailures, t.BreakerUntil, t.BreakerTrips = mt.ConsecutiveFailures, mt.BreakerUntil, mt.BreakerTrips
	}
}

// start starts a run with in, or finds the one another caller just started.
func start(ctx context.Context, c client.Client, s Scheduler, in workflows.SchedulerInput) (Ensured, error) {
	// The registry's and the chainhook task's cadences follow the
	// deployment's PACER_REGISTRY_URL and PACER_CHAINHOOK_MANAGE at every
	// start, whatever the carried configuration said (SPEC §12, §11).
	in.Config.RegistryEvery, in.Config.ChainhookEvery = s.Config.RegistryEvery, s.Config.ChainhookEvery
	if in.Defaults == nil {
		// The defaults in force for the run are this build's, in its
		// input (SPEC §3.5): the run need not record them in a side effect.
		d := workflows.CodeDefaults()
		in.Defaults = &d
	}
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       s.WorkflowID,
		TaskQueue:                s.TaskQueue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		StaticSummary:            "pacer scheduler " + s.WorkflowID,
		// The Web UI shows this on the workflow page; the current state is in
		// the workflow's current details (temporal workflow metadata).
		StaticDetails: "Keeps rate-limited upstream data fresh: task tenero refreshes USD prices from Tenero, " +
			"task sweep records the competition's swaps found through Hiro, each on its own cadence. " +
			`Operate with query status; signals or updates pause {"for":"30m"}, resume, tune; signal refresh {"task":"sweep"}; ` +
			`updates refreshNow {"task":"tenero"|"sweep"|"all"}, reconfigure {"teneroEvery":"5m"}, stop {"reason":"…"}.`,
	}, workflows.WorkflowType, in)
	if err != nil {
		return Ensured{}, fmt.Errorf("start scheduler %s: %w", s.WorkflowID, err)
	}
	return Ensured{RunID: run.GetRunID(), Started: true, Restart: in.Restart}, nil
}

// Describe is what the metrics read of the scheduler: whether its latest
// run is open or was stopped on purpose, its history length and its memo.
// A description is a read, not a billed action: metrics come from it
// rather than from status queries.
func Describe(ctx context.Context, c client.Client, s Scheduler) (metrics.SchedulerView, error) {
	s = s.withDefaults()
	d, err := c.DescribeWorkflowExecution(ctx, s.WorkflowID, "")
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) && s.Stops != nil {
		// Retention deleted the stopped run: Postgres says it was stopped.
		if res, ok, rerr := recordedStop(ctx, s.Stops, s.WorkflowID); rerr != nil || ok {
			return metrics.SchedulerView{Stopped: ok, Memo: stoppedMemo(res)}, rerr
		}
	}
	if err != nil {
		return metrics.SchedulerView{}, fmt.Errorf("describe scheduler %s: %w", s.WorkflowID, err)
	}
	info := d.GetWorkflowExecutionInfo()
	h := taskHealth(d)
	v := metrics.SchedulerView{
		Running:             info.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING,
		HistoryLength:       int(info.GetHistoryLength()),
		WorkflowTaskAttempt: int(h.Attempt),
		WorkflowTaskFailing: h.Failing(),
		FailingSince:        h.Since,
		Version:             h.Version,
	}
	if info.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED {
		// Only a stop completes the scheduler; its result need not be read.
		v.Stopped = true
	}
	if p := info.GetMemo().GetFields()[workflows.MemoKey]; p != nil {
		var m workflows.Memo
		if err := s.DataConverter.FromPayload(p, &m); err != nil {
			return v, fmt.Errorf("decode the memo of scheduler %s: %w", s.WorkflowID, err)
		}
		v.Memo = &m
	}
	return v, nil
}

// PageHealth is what the operator's page shows of the scheduler's workflow
// tasks, from one description (page.Options.SchedulerHealth).
func PageHealth(ctx context.Context, c client.Client, s Scheduler) (page.SchedulerHealth, error) {
	v, err := Describe(ctx, c, s)
	if err != nil {
		return page.SchedulerHealth{}, err
	}
	return page.SchedulerHealth{Failing: v.WorkflowTaskFailing, Attempt: v.WorkflowTaskAttempt,
		Since: v.FailingSince, Version: v.Version}, nil
}
