package operate

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/round"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/workflows"
)

// RoundInput is a round as an operator gives it (SPEC §13): Grace and the
// floors are optional (nil: PACER_ROUND_GRACE, 50 USD, 3 trades).
type RoundInput struct {
	ID                  string         `json:"id"`
	StartsAt            time.Time      `json:"startsAt"`
	EndsAt              time.Time      `json:"endsAt"`
	Grace               *time.Duration `json:"-"`
	MinVolumeUSD        *float64       `json:"minVolumeUsd"`
	MinPricedTradeCount *int           `json:"minPricedTradeCount"`
}

// PutRound adds a round or changes one not yet final, audited; a
// finalized round is refused (ErrConflict) and left as it is. It then
// wakes the finalize task (the refresh signal), best effort: the task
// runs on its own cadence anyway.
func (s *Service) PutRound(ctx context.Context, in RoundInput) (store.Round, bool, error) {
	spec := store.RoundSpec{ID: in.ID, StartsAt: in.StartsAt.UTC(), EndsAt: in.EndsAt.UTC(),
		MinVolumeUSD: round.DefaultMinVolumeUSD, MinPricedTradeCount: round.DefaultMinPricedTrades}
	grace := s.RoundGrace
	if grace == 0 {
		grace = round.DefaultGrace
	}
	if in.Grace != nil {
		if grace = *in.Grace; grace < 0 {
			return store.Round{}, false, invalid("grace", "%s is negative", grace)
		}
	}
	spec.GraceEndsAt = spec.EndsAt.Add(grace)
	if in.MinVolumeUSD != nil {
		spec.MinVolumeUSD = *in.MinVolumeUSD
	}
	if in.MinPricedTradeCount != nil {
		spec.MinPricedTradeCount = *in.MinPricedTradeCount
	}
	if err := round.Check(spec); err != nil {
		var bad *round.InvalidError
		if errors.As(err, &bad) {
			return store.Round{}, false, &Invalid{Field: bad.Field, Msg: bad.Msg}
		}
		return store.Round{}, false, err
	}
	if err := s.startFree(ctx, spec); err != nil {
		return store.Round{}, false, err
	}
	r, created, err := s.Store.PutRound(ctx, spec, s.change(ctx, store.ActionRoundPut))
	if errors.Is(err, store.ErrRoundFinal) {
		return r, false, fmt.Errorf("%w: round %s is finalized and never changes", ErrConflict, spec.ID)
	}
	if err != nil {
		return r, false, err
	}
	s.wakeFinalize(ctx)
	return r, created, nil
}

// startFree refuses a round starting when another does: a round's
// deliveries are keyed by its start, as a rollup's by its period.
func (s *Service) startFree(ctx context.Context, spec store.RoundSpec) error {
	rounds, err := s.Store.Rounds(ctx)
	if err != nil {
		return err
	}
	for _, r := range rounds {
		if r.ID != spec.ID && r.StartsAt.Equal(spec.StartsAt) {
			return invalid("starts", "round %s starts at %s too: two rounds never start together", r.ID,
				spec.StartsAt.Format(time.RFC3339))
		}
	}
	return nil
}

// wakeFinalize asks the scheduler to run finalize now. Best effort: a
// round added while Temporal is away is seen at the task's next run.
func (s *Service) wakeFinalize(ctx context.Context) {
	if s.Temporal == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	err := s.Temporal.SignalWorkflow(ctx, s.workflowID(), "", workflows.SignalRefresh, workflows.RefreshInput{Task: pacer.TaskFinalize})
	if err != nil {
		s.logger().Warn("round.wake_finalize_failed", zap.Error(err))
	}
}
