package workflows

import (
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/schedule"
)

// registryStartToClose bounds one read of the registry, every page.
const registryStartToClose = 5 * time.Minute

// runRegistry reads the registry once; when it registered, restored or
// changed agents, the sweep runs soon, as on a hint, so their swaps reach
// the ledger within seconds of the registry saying so.
func runRegistry(ctx workflow.Context, s *scheduler, occ pacer.Occurrence, _ bool) schedule.Outcome {
	res, o := runTask[pacer.RegistryResult](ctx, s.activityOptions("registry read", registryStartToClose),
		ActivityRegistry, pacer.RegistryInput{Occurrence: occ})
	if t := s.tasks[pacer.TaskSweep]; t != nil && res.Added+res.Updated+res.Restored+res.Claims > 0 && t.HintedAt == nil {
		at := workflow.Now(ctx)
		t.HintedAt = &at
	}
	return o
}
