package discovery

import "context"

// Runner carries out a sweep run's steps: the sweep activity against
// Postgres and Hiro (activities/sweep.go), the chain benchmark against its
// simulated chain on a virtual clock (internal/ingest/bench). Both are
// driven by Drive, so the loop the benchmark measures is the one that
// runs.
type Runner interface {
	// State is the plan's input at this instant.
	State(ctx context.Context) (Run, error)
	// Planned hears each step the plan chose before it is carried out
	// (the run's report); true ends the run there (the runner must stop:
	// the database is gone, Hiro refuses for good, the horizon is over).
	Planned(step Step) (stop bool)
	// Execute carries out one step that is not Stop.
	Execute(ctx context.Context, step Step) error
}

// Drive is a sweep run: it asks r for the state, Plan for the next step
// and r to carry it out, until the plan stops or r does. It returns the
// last state and step (a Stop's Until is when the next run is due). Its
// error is ctx's when cancelled, else State's or Execute's.
func Drive(ctx context.Context, r Runner) (Run, Step, error) {
	for {
		if err := ctx.Err(); err != nil {
			return Run{}, Step{}, err
		}
		st, err := r.State(ctx)
		if err != nil {
			return st, Step{}, err
		}
		step := Plan(st)
		if r.Planned(step) || step.Kind == Stop {
			return st, step, nil
		}
		if err := r.Execute(ctx, step); err != nil {
			return st, step, err
		}
	}
}
