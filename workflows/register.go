package workflows

import (
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// Register registers pacer's workflows under their contract names. The
// worker, the replayer and the tests all call it.
func Register(r worker.WorkflowRegistry) {
	r.RegisterWorkflowWithOptions(SchedulerWorkflow, workflow.RegisterOptions{Name: WorkflowType})
}
