package activities

import (
	"context"
	"encoding/json"
	"errors"

	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/fault"
)

// ledgered runs one occurrence of a task through the task_runs ledger
// (SPEC §3.4, §6): it records the occurrences the scheduler passed over since
// the task's last run, marks this one running, runs it, and records how it
// ended. An occurrence the ledger already has as ok is not run again: a
// retried attempt or a repeated wake-up gets the recorded result. A zero
// occurrence (a run scheduled before the ledger existed) just runs.
func ledgered[R any](ctx context.Context, a *Activities, occ pacer.Occurrence, run func(context.Context) (R, error)) (R, error) {
	var zero R
	if occ.Task == "" {
		return run(ctx)
	}
	log := a.Logger.With(zap.String("task", occ.Task), zap.Time("nominalAt", occ.NominalAt))
	added, err := a.Store.RecordPassed(ctx, occ.Task, occ.Passed)
	if err != nil {
		return zero, runError(pacer.ClassTransport, "record passed occurrences: "+err.Error(), zero)
	}
	// Counted as the rows are added, so a retried attempt or a repeated
	// wake-up does not count them again.
	a.Metrics.ObserveMissed(occ.Task, added)
	release, err := a.Store.HoldRun(ctx, occ)
	if err != nil {
		// Held by another attempt: this one retries, and the workflow keeps
		// the occurrence owed if all its attempts find it held.
		return zero, runError(pacer.ClassTransport, "hold run: "+err.Error(), zero)
	}
	defer release()
	row, done, err := a.Store.BeginRun(ctx, occ)
	if err != nil {
		return zero, runError(pacer.ClassTransport, "begin run: "+err.Error(), zero)
	}
	if done {
		var res R
		if len(row.Result) > 0 {
			if err := json.Unmarshal(row.Result, &res); err != nil {
				log.Warn("run.prior_result_unreadable", zap.Error(err))
			}
		}
		log.Info("run.already_done", zap.Timep("finishedAt", row.FinishedAt))
		return res, nil
	}
	if row.Attempts == 1 && !occ.Manual && row.StartedAt != nil {
		// The database's clock, the same for every worker.
		a.Metrics.ObserveLateness(occ.Task, row.StartedAt.Sub(occ.NominalAt))
	}

	res, runErr := run(ctx)
	status, class := pacer.RunOK, pacer.ErrorClass("")
	if runErr != nil {
		status, class = pacer.RunFailed, errorClassOf(runErr)
	}
	body, _ := json.Marshal(res) // nil when res cannot be encoded: the row keeps no result
	// Bookkeeping that fails must not fail a run that did its work: the
	// row stays "running", which is what an operator then sees.
	if err := a.Store.FinishRun(context.WithoutCancel(ctx), occ, row.Attempts, status, class, body); err != nil {
		log.Warn("run.ledger_write_failed", zap.Error(err))
	}
	return res, runErr
}

// errorClassOf reads the class an activity error leaves with.
func errorClassOf(err error) pacer.ErrorClass {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return pacer.ErrorClass(appErr.Type())
	}
	return fault.ClassOf(err)
}
