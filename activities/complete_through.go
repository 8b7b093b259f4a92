package activities

import (
	"context"

	"go.uber.org/zap"

	"github.com/pacer-dev/pacer/internal/metrics"
	"github.com/pacer-dev/pacer/internal/store"
)

// lapseHolds ends the holds on completeThrough older than store.HoldBound
// (completeThrough already ignores them) with a log line each and a
// metric: a transaction a reader saw in a block that Hiro still cannot
// settle after that long is an upstream's problem to look into, not a
// reason to stop completeThrough, and with it the rounds (SPEC §7, §13).
// A failure to look is logged: the next run looks again.
func (a *Activities) lapseHolds(ctx context.Context) { lapseHolds(ctx, a.Store, a.Logger, a.Metrics) }

func lapseHolds(ctx context.Context, st SweepStore, log *zap.Logger, m *metrics.Metrics) {
	lapsed, err := st.LapseHolds(ctx, store.HoldBound)
	if err != nil {
		log.Warn("complete_through.lapse_failed", zap.Error(err))
		return
	}
	for _, h := range lapsed {
		log.Warn("complete_through.hold_lapsed", zap.String("txid", h.TxID), zap.String("sender", h.Sender),
			zap.Int64("blockTime", h.BlockTime), zap.Time("heldAt", h.HeldAt), zap.Duration("bound", store.HoldBound))
	}
	m.ObserveHoldsLapsed(len(lapsed))
}

// publishCompleteThrough moves the published completeThrough on as far as
// the readers allow (store.CompleteThrough keeps the largest value given
// out). The public API reads only what is published (its pool is
// read-only, issue 41.12), so the sweep publishes at the end of every
// run. A failure is logged: the next run publishes again.
func publishCompleteThrough(ctx context.Context, st SweepStore, log *zap.Logger) {
	if _, err := st.CompleteThrough(ctx); err != nil {
		log.Warn("complete_through.publish_failed", zap.Error(err))
	}
}
