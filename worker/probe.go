package worker

import (
	"time"

	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/pacer-dev/pacer/workflows"
)

// deployCheckChange is empty in every real build. make deploy-check builds
// its build B with it set (-ldflags "-X
// github.com/pacer-dev/pacer/worker.deployCheckChange=on"), so that the
// two builds differ in a gated workflow change, as two releases do: B's
// scheduler starts each run with a 1 ms timer behind a GetVersion marker.
// A build without the change that replayed such a history would meet a
// timer its code never starts: a nondeterminism error on every workflow
// task. The check shows no build ever replays the other's runs.
var deployCheckChange string

// changeDeployCheck is the change ID of the deploy check's gated change.
const changeDeployCheck = "deploy-check-probe"

// registerScheduler registers the scheduler workflow, wrapped in the
// deploy check's change in a build that has it.
func registerScheduler(r sdkworker.WorkflowRegistry) {
	if deployCheckChange == "" {
		workflows.Register(r)
		return
	}
	r.RegisterWorkflowWithOptions(schedulerWithChange, workflow.RegisterOptions{Name: workflows.WorkflowType})
}

func schedulerWithChange(ctx workflow.Context, in workflows.SchedulerInput) (*workflows.StopResult, error) {
	if workflow.GetVersion(ctx, changeDeployCheck, workflow.DefaultVersion, 1) == 1 {
		if err := workflow.Sleep(ctx, time.Millisecond); err != nil {
			return nil, err
		}
	}
	return workflows.SchedulerWorkflow(ctx, in)
}
