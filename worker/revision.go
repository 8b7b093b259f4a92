package worker

import (
	"context"
	"errors"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/workflow"

	"github.com/pacer-dev/pacer/workflows"
)

// Running is the scheduler's open run and the revision of what it
// schedules (SPEC §3.7).
type Running struct {
	// Open is false when no run of the scheduler is open (stopped, or
	// none yet): nothing runs below any floor.
	Open  bool
	RunID string
	// Revision is the version its history recorded for workflows.ChangeID
	// (workflow.DefaultVersion when it recorded none: code from before
	// the change ID).
	Revision workflow.Version
}

// The SDK's version marker (GetVersion): a MarkerRecorded event named
// "Version" whose details hold the change ID and the version.
const (
	versionMarker         = "Version"
	versionMarkerChangeID = "change-id"
	versionMarkerVersion  = "version"
)

// RunningRevision reads the revision of the scheduler's open run from its
// history: the version marker of workflows.ChangeID, which a run records at
// its start. Reading a history is not a billed action.
func RunningRevision(ctx context.Context, c client.Client, s Scheduler) (Running, error) {
	s = s.withDefaults()
	d, err := c.DescribeWorkflowExecution(ctx, s.WorkflowID, "")
	var nf *serviceerror.NotFound
	switch {
	case errors.As(err, &nf):
		return Running{}, nil
	case err != nil:
		return Running{}, fmt.Errorf("describe scheduler %s: %w", s.WorkflowID, err)
	}
	info := d.GetWorkflowExecutionInfo()
	r := Running{RunID: info.GetExecution().GetRunId(), Revision: workflow.DefaultVersion}
	if info.GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return Running{RunID: r.RunID}, nil
	}
	r.Open = true
	it := c.GetWorkflowHistory(ctx, s.WorkflowID, r.RunID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			return Running{}, fmt.Errorf("read the history of %s run %s: %w", s.WorkflowID, r.RunID, err)
		}
		m := e.GetMarkerRecordedEventAttributes()
		if m.GetMarkerName() != versionMarker {
			continue
		}
		var changeID string
		if err := s.DataConverter.FromPayloads(m.GetDetails()[versionMarkerChangeID], &changeID); err != nil || changeID != workflows.ChangeID {
			continue
		}
		if err := s.DataConverter.FromPayloads(m.GetDetails()[versionMarkerVersion], &r.Revision); err != nil {
			return Running{}, fmt.Errorf("decode the %s revision of %s run %s: %w", workflows.ChangeID, s.WorkflowID, r.RunID, err)
		}
		return r, nil
	}
	return r, nil
}
