package operate

import (
	"context"
	"encoding/json"

	"github.com/pacer-dev/pacer/worker"
	"github.com/pacer-dev/pacer/workflows"
)

// Tune runs the tune update (in is its input, as the workflow parses it).
func (s *Service) Tune(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
	return s.update(ctx, ActionTune, workflows.UpdateTune, in)
}

// Reconfigure runs the reconfigure update.
func (s *Service) Reconfigure(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
	return s.update(ctx, ActionReconfigure, workflows.UpdateReconfigure, in)
}

// Stopped is what Stop did: the stopped run and its result, and whether
// Postgres keeps the stop yet (when not, workers record it at their next
// check).
type Stopped struct {
	RunID       string
	Result      *workflows.StopResult
	RecordedErr error
}

// Stop runs the stop update on sched's scheduler (in is its input) and
// keeps the stop in Postgres, where Temporal's retention cannot remove it.
// The audit entry keeps what the operator asked and when the run
// stopped, not the state (the scheduler's whole memory). It waits for the
// run to stop as long as ctx allows.
func (s *Service) Stop(ctx context.Context, sched worker.Scheduler, in json.RawMessage) (Stopped, error) {
	if s.Temporal == nil {
		return Stopped{}, ErrNoTemporal
	}
	var out Stopped
	_, err := Audited(ctx, s, ActionStop, in, func(ctx context.Context, updateID string) (any, error) {
		runID, res, err := worker.StopWithID(ctx, s.Temporal, s.workflowID(), updateID, in)
		if err != nil {
			return nil, err
		}
		sched.Stops = s.Store
		out = Stopped{RunID: runID, Result: res, RecordedErr: worker.RecordStop(ctx, sched, runID, res)}
		return map[string]any{"runId": runID, "stoppedAt": res.StoppedAt}, nil
	})
	return out, err
}

// Start starts sched's scheduler, carrying the state of its last run (a
// stopped one too). An entry is written for every start asked for; its
// outcome says whether a run was started or one was running already.
func (s *Service) Start(ctx context.Context, sched worker.Scheduler) (worker.Ensured, error) {
	if s.Temporal == nil {
		return worker.Ensured{}, ErrNoTemporal
	}
	sched.Stops = s.Store // a stop Temporal no longer holds is there
	return Audited(ctx, s, ActionStart, nil, func(ctx context.Context, _ string) (worker.Ensured, error) {
		return worker.Ensure(ctx, s.Temporal, sched, worker.Start)
	})
}

// Promoted is what Promote did.
type Promoted struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// Promote makes build the current version of deployment name.
func (s *Service) Promote(ctx context.Context, name, build string) (Promoted, error) {
	if s.Temporal == nil {
		return Promoted{}, ErrNoTemporal
	}
	to := name + "." + build
	return Audited(ctx, s, ActionPromote, map[string]string{"to": to}, func(ctx context.Context, _ string) (Promoted, error) {
		prev, err := worker.Promote(ctx, s.Temporal, name, build)
		return Promoted{From: prev, To: to}, err
	})
}
