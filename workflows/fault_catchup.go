//go:build catchup

package workflows

import (
	"go.temporal.io/sdk/workflow"

	"github.com/pacer-dev/pacer/internal/schedule"
)

// SchedulerWorkflowWithFault is SchedulerWorkflow with fault called in
// every task's fenced scheduling code: how the real-stack checks (make
// sched-check, the catchup build tag; never a real build) plant a panic in
// one task's decision.
func SchedulerWorkflowWithFault(fault func(t *schedule.Task)) func(workflow.Context, SchedulerInput) (*StopResult, error) {
	return func(ctx workflow.Context, in SchedulerInput) (*StopResult, error) {
		return schedulerWorkflow(ctx, in, runOptions{fault: fault})
	}
}
