package activities

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/round"
	"github.com/pacer-dev/pacer/internal/store"
)

// Finalize finalizes the competition's rounds (SPEC §13): each round
// whose grace has passed and whose end completeThrough has reached, in
// one transaction (its price snapshot as of its end, results, ranks,
// rewards, its round.finalized deliveries and its state), idempotent
// under retries: a round already final is left as it is. The result says
// which round it waits for and why, and when it is next due
// (round.Decide).
func (a *Activities) Finalize(ctx context.Context, in pacer.FinalizeInput) (pacer.FinalizeResult, error) {
	return ledgered(ctx, a, in.Occurrence, a.finalize)
}

func (a *Activities) finalize(ctx context.Context) (pacer.FinalizeResult, error) {
	started := time.Now()
	res := pacer.FinalizeResult{Run: pacer.Run{StartedAt: started.UTC()}, Finalized: []string{}}
	log := a.Logger.With(zap.String("task", pacer.TaskFinalize))
	fail := func(err error) (pacer.FinalizeResult, error) {
		res.DurationMs = time.Since(started).Milliseconds()
		res.ErrorClass, res.Error = pacer.ClassTransport, err.Error()
		log.Warn("finalize.failed", zap.Error(err))
		return res, runError(pacer.ClassTransport, err.Error(), res)
	}
	a.lapseHolds(ctx)
	open, err := a.Store.OpenRounds(ctx)
	if err != nil {
		return fail(err)
	}
	var through *int64
	if len(open) > 0 {
		if through, err = a.Store.CompleteThrough(ctx); err != nil {
			return fail(err)
		}
	}
	plan := round.Decide(open, through, a.now())
	for _, id := range plan.Finalize {
		out, err := a.Store.FinalizeRound(ctx, id, a.computeRound)
		if err != nil {
			return fail(err)
		}
		if !out.Finalized {
			continue // another attempt finalized it first
		}
		res.Finalized = append(res.Finalized, id)
		winner := ""
		if len(out.Detail.Results) > 0 {
			winner = out.Detail.Results[0].STXAddress
		}
		log.Info("round.finalized", zap.String("round", id), zap.Int("results", len(out.Detail.Results)),
			zap.Int("rewards", len(out.Detail.Rewards)), zap.Int("prices", len(out.Detail.Prices)),
			zap.String("first", winner), zap.Int("deliveries", out.Deliveries), zap.Int64p("completeThrough", through))
	}
	res.Waiting, res.NextDueAt = plan.Waiting, plan.NextDueAt
	if w := res.Waiting; w != nil && w.Reason == pacer.WaitCompleteThrough {
		log.Info("finalize.waiting", zap.String("round", w.Round), zap.String("reason", w.Reason),
			zap.Int64("behindSeconds", w.BehindSeconds), zap.Int64p("completeThrough", through))
	}
	res.DurationMs = time.Since(started).Milliseconds()
	return res, nil
}

// computeRound turns a round's inputs into its outcome: the price
// snapshot as of its end, then its results and rewards (internal/round).
func (a *Activities) computeRound(in store.FinalizeInputs) (store.FinalizeOutcome, error) {
	prices, rows := round.Snapshot(in.Tokens(), in.Observed, a.Catalog)
	results, rewards := round.Compute(round.Inputs{Round: in.Round, Swaps: in.Swaps, Agents: in.Agents, Prices: prices, At: in.At})
	return store.FinalizeOutcome{Prices: rows, Results: results, Rewards: rewards}, nil
}
