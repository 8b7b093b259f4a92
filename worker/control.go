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
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID:   workflowID,
		UpdateName:   workflows.UpdateRefreshNow,
		Args:         []any{workflows.RefreshInput{Task: task}},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err != nil {
		return workflows.RefreshNowResult{}, fmt.Errorf("update %s on %s: %w", workflows.UpdateRefreshNow, workflowID, err)
	}
	var res workflows.RefreshNowResult
	if err := h.Get(ctx, &res); err != nil {
		return workflows.RefreshNowResult{}, fmt.Errorf("update %s: %w", workflows.UpdateRefreshNow, err)
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
