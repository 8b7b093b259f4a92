package worker

import (
	"context"
	"fmt"

	"go.temporal.io/sdk/client"

	"github.com/pacer-dev/pacer/workflows"
)

// Status runs the status query against the scheduler.
func Status(ctx context.Context, c client.Client, workflowID string) (workflows.Status, error) {
	v, err := c.QueryWorkflow(ctx, workflowID, "", workflows.QueryStatus)
	if err != nil {
		return workflows.Status{}, fmt.Errorf("query %s on %s: %w", workflows.QueryStatus, workflowID, err)
	}
	var st workflows.Status
	if err := v.Get(&st); err != nil {
		return workflows.Status{}, fmt.Errorf("decode status: %w", err)
	}
	return st, nil
}

// RefreshNow runs the refreshNow update and waits for its result.
func RefreshNow(ctx context.Context, c client.Client, workflowID, task string) (workflows.RefreshNowResult, error) {
	return Update[workflows.RefreshNowResult](ctx, c, workflowID, workflows.UpdateRefreshNow, workflows.RefreshInput{Task: task})
}

// Update runs one of the scheduler's updates (arg nil for none) and waits
// for its result. A validator's rejection comes back as the error, before
// anything is written to the workflow's history.
func Update[R any](ctx context.Context, c client.Client, workflowID, name string, arg any) (R, error) {
	return UpdateWithID[R](ctx, c, workflowID, name, "", arg)
}

// UpdateWithID is Update under an update id of the caller's (empty: one
// of Temporal's), which the workflow's history records with the update:
// the admin actions name their audit entry and actor in it.
func UpdateWithID[R any](ctx context.Context, c client.Client, workflowID, name, updateID string, arg any) (R, error) {
	var res R
	opts := client.UpdateWorkflowOptions{UpdateID: updateID, WorkflowID: workflowID, UpdateName: name, WaitForStage: client.WorkflowUpdateStageCompleted}
	if arg != nil {
		opts.Args = []any{arg}
	}
	h, err := c.UpdateWorkflow(ctx, opts)
	if err != nil {
		return res, fmt.Errorf("update %s on %s: %w", name, workflowID, err)
	}
	if err := h.Get(ctx, &res); err != nil {
		return res, fmt.Errorf("update %s: %w", name, err)
	}
	return res, nil
}

// Signal sends one of the scheduler's signals; arg may be nil.
func Signal(ctx context.Context, c client.Client, workflowID, name string, arg any) error {
	if err := c.SignalWorkflow(ctx, workflowID, "", name, arg); err != nil {
		return fmt.Errorf("signal %s to %s: %w", name, workflowID, err)
	}
	return nil
}

// Stop runs the stop update (arg its input) and returns the stopped run
// and its result. Record the stop with RecordStop.
func Stop(ctx context.Context, c client.Client, workflowID string, arg any) (runID string, res *workflows.StopResult, err error) {
	return StopWithID(ctx, c, workflowID, "", arg)
}

// StopWithID is Stop under an update id of the caller's (UpdateWithID).
func StopWithID(ctx context.Context, c client.Client, workflowID, updateID string, arg any) (runID string, res *workflows.StopResult, err error) {
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{UpdateID: updateID, WorkflowID: workflowID, UpdateName: workflows.UpdateStop,
		Args: []any{arg}, WaitForStage: client.WorkflowUpdateStageCompleted})
	if err == nil {
		err = h.Get(ctx, &res)
	}
	if err != nil {
		return "", nil, fmt.Errorf("update %s on %s: %w", workflows.UpdateStop, workflowID, err)
	}
	return h.RunID(), res, nil
}
