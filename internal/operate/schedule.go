package operate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/actor"
	"github.com/pacer-dev/pacer/internal/schedule"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/worker"
	"github.com/pacer-dev/pacer/workflows"
)

// Audit actions of the changes made through Temporal.
const (
	ActionPause       = "scheduler.pause"
	ActionResume      = "scheduler.resume"
	ActionTune        = "scheduler.tune"
	ActionReconfigure = "scheduler.reconfigure"
	ActionStop        = "scheduler.stop"
	ActionStart       = "scheduler.start"
	ActionBackfill    = "scheduler.backfill"
	ActionSkip        = "scheduler.skip"
	ActionPromote     = "deploy.promote"
)

// Tasks are the scheduler's tasks, the names pause and backfill take.
var Tasks = []string{pacer.TaskTenero, pacer.TaskSweep, pacer.TaskRollup, pacer.TaskDeliver}

func (s *Service) workflowID() string {
	if s.WorkflowID != "" {
		return s.WorkflowID
	}
	return workflows.DefaultWorkflowID
}

// ErrNoTemporal is returned by the schedule actions of a service without a
// Temporal client.
var ErrNoTemporal = errors.New("no Temporal client")

// updateTimeout bounds a schedule action once it is under way: the
// caller may hang up, the action and its audit entry go on.
const updateTimeout = 30 * time.Second

// update runs one of the scheduler's updates with in, audited whatever
// happens to the caller (Audited), under the update id
// "audit-<entry id>-<actor>", which the workflow's history records. It
// goes on when the caller's context ends (a closed connection), for
// updateTimeout at most.
func (s *Service) update(ctx context.Context, action, name string, in any) (json.RawMessage, error) {
	if s.Temporal == nil {
		return nil, ErrNoTemporal
	}
	var arg any
	if in != nil {
		arg = in
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), updateTimeout)
	defer cancel()
	return Audited(ctx, s, action, in, func(ctx context.Context, updateID string) (json.RawMessage, error) {
		return worker.UpdateWithID[json.RawMessage](ctx, s.Temporal, s.workflowID(), name, updateID, arg)
	})
}

// auditWriteTimeout bounds an audit entry's write once the change is under
// way, whatever the caller's context.
const auditWriteTimeout = 10 * time.Second

// Audited runs do, an operator's change made through Temporal, audited
// before and after (issue 41.13): the entry (the actor, the action, what
// was asked, outcome "requested") is written first and nothing is done
// without it; do gets the update id that names the entry and the actor
// ("audit-<entry id>-<actor>"); the entry then gets do's result (outcome
// "done"), its refusal (outcome "refused" and the reason: the
// scheduler's handlers fail only for their input, a validator's
// rejection, before history) or its failure ("failed or unknown"). A
// refused attempt stays on record. The change being made, a failure to
// write its outcome is logged and not returned: the entry says it was
// requested. A refusal comes back as an Invalid the audit log holds
// already (Recorded).
func Audited[R any](ctx context.Context, s *Service, action string, in any, do func(ctx context.Context, updateID string) (R, error)) (R, error) {
	var zero R
	who := actor.From(ctx)
	write, cancel := context.WithTimeout(context.WithoutCancel(ctx), auditWriteTimeout)
	defer cancel()
	requested, err := json.Marshal(map[string]any{"input": in, "outcome": "requested"})
	if err != nil {
		return zero, fmt.Errorf("audit %s: %w", action, err)
	}
	id, err := s.Store.StartAudit(write, store.AuditEntry{At: s.now(), Actor: who, Action: action, Target: s.workflowID(), After: requested})
	if err != nil {
		return zero, fmt.Errorf("%s not done: %w", action, err)
	}
	res, err := do(ctx, AuditUpdateID(id, who))
	outcome := map[string]any{"input": in, "outcome": "done", "result": res}
	var app *temporal.ApplicationError
	refused := errors.As(err, &app)
	switch {
	case refused:
		outcome = map[string]any{"input": in, "outcome": "refused", "error": app.Message()}
	case err != nil:
		outcome = map[string]any{"input": in, "outcome": "failed or unknown", "error": err.Error()}
	}
	after, _ := json.Marshal(outcome)
	if ferr := s.Store.FinishAudit(write, id, after); ferr != nil {
		s.logger().Warn("operate.audit_outcome_unrecorded", zap.String("action", action), zap.Int64("audit_id", id), zap.Error(ferr))
	}
	switch {
	case refused:
		return zero, recorded{&Invalid{Msg: app.Message()}}
	case err != nil:
		return zero, err
	}
	return res, nil
}

// AuditUpdateID is the Temporal update id of the schedule action audited
// as entry id, by who.
func AuditUpdateID(id int64, who string) string {
	return fmt.Sprintf("audit-%d-%s", id, who)
}

// PauseInput pauses the scheduler, or one task of it (SPEC §3.1): exactly
// one of Until (RFC3339) and For (a Go duration).
type PauseInput struct {
	Task  string `json:"task,omitempty"`
	Until string `json:"until,omitempty"`
	For   string `json:"for,omitempty"`
}

// Pause runs the pause update and returns the scheduler's answer.
func (s *Service) Pause(ctx context.Context, in PauseInput) (json.RawMessage, error) {
	if err := validTask(in.Task, true); err != nil {
		return nil, err
	}
	if _, err := schedule.PauseUntil(s.now(), in.Until, in.For); err != nil {
		return nil, invalid("", "%v", err)
	}
	return s.update(ctx, ActionPause, workflows.UpdatePause, in)
}

// ResumeInput resumes the scheduler, or one task of it.
type ResumeInput struct {
	Task string `json:"task,omitempty"`
}

// Resume runs the resume update (with no input when no task is named, as
// the temporal CLI sends it).
func (s *Service) Resume(ctx context.Context, in ResumeInput) (json.RawMessage, error) {
	if err := validTask(in.Task, true); err != nil {
		return nil, err
	}
	var arg any
	if in.Task != "" {
		arg = in
	}
	return s.update(ctx, ActionResume, workflows.UpdateResume, arg)
}

// BackfillInput runs a task's occurrences over a past range (SPEC §3.4).
type BackfillInput struct {
	Task string    `json:"task"`
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
}

// MaxBackfillRange bounds a backfill: deliveries and observations older
// than this are gone anyway.
const MaxBackfillRange = 35 * 24 * time.Hour

// Backfill runs the backfill update.
func (s *Service) Backfill(ctx context.Context, in BackfillInput) (json.RawMessage, error) {
	if err := validTask(in.Task, false); err != nil {
		return nil, err
	}
	now := s.now()
	switch {
	case in.From.IsZero() || in.To.IsZero():
		return nil, invalid("from", "from and to are required (RFC3339)")
	case !in.From.Before(in.To):
		return nil, invalid("from", "must be before to")
	case in.To.After(now):
		return nil, invalid("to", "must not be in the future")
	case in.To.Sub(in.From) > MaxBackfillRange:
		return nil, invalid("from", "the range is longer than %s", MaxBackfillRange)
	}
	in.From, in.To = in.From.UTC(), in.To.UTC()
	return s.update(ctx, ActionBackfill, workflows.UpdateBackfill, in)
}

// SkipInput gives up on one owed occurrence of a cron task (SPEC §3.4).
type SkipInput struct {
	Task      string    `json:"task"`
	NominalAt time.Time `json:"nominalAt"`
}

// Skip runs the skip update: the scheduler no longer owes the occurrence,
// and its next run of the task writes the skip to task_runs. The skip is
// written at once too (the same statement, idempotent), so the ledger
// shows it before that run.
func (s *Service) Skip(ctx context.Context, in SkipInput) (json.RawMessage, error) {
	if err := validTask(in.Task, false); err != nil {
		return nil, err
	}
	if in.NominalAt.IsZero() {
		return nil, invalid("nominalAt", "the occurrence's nominal time is required (RFC3339)")
	}
	wire := workflows.SkipInput{Task: in.Task, NominalAt: in.NominalAt.UTC().Format(time.RFC3339Nano)}
	res, err := s.update(ctx, ActionSkip, workflows.UpdateSkip, wire)
	if err != nil {
		return res, err
	}
	skipped := []pacer.PassedOccurrence{{NominalAt: in.NominalAt.UTC(), Status: pacer.RunSkipped, Reason: pacer.SkipOperator}}
	if _, err := s.Store.RecordPassed(ctx, in.Task, skipped); err != nil {
		return res, fmt.Errorf("skipped; task_runs shows it at the task's next run (not now: %w)", err)
	}
	return res, nil
}

func validTask(task string, optional bool) error {
	if task == "" && optional {
		return nil
	}
	if !slices.Contains(Tasks, task) {
		return invalid("task", "%q: want one of %v", clip(task), Tasks)
	}
	return nil
}
