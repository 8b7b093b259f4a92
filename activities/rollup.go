package activities

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/catalog"
	"github.com/pacer-dev/pacer/internal/rollup"
	"github.com/pacer-dev/pacer/internal/store"
)

// DayLookback is how many days back a rollup run recomputes days that are
// not complete yet. A day that is still incomplete after a week (an agent
// the sweep cannot list, a token Tenero stopped answering for) stays as it
// is, and undelivered; the rollup.day_incomplete log line names it.
const DayLookback = 7

// Rollup computes the rollups of SPEC §10.1 for the occurrence's nominal
// time T: the hour that closed at or before T, and every day of the last
// DayLookback that closed at or before T and is not complete yet. Each
// period is recomputed from scratch, so a repeated or backfilled run writes
// the same rows. Then it recomputes the periods marked dirty (swaps that
// changed after their rollups: a chainhook rollback, a re-apply), and
// whenever a recomputed period's figures differ from a delivery already
// made for it, creates a correction (store.RecomputeDirty). It also prunes
// price observations past their retention.
func (a *Activities) Rollup(ctx context.Context, in pacer.RollupInput) (pacer.RollupResult, error) {
	// A liveness heartbeat: a run whose worker died is retried within the
	// workflow's short heartbeat timeout for rollup, not after minutes. A
	// run shorter than 0.8 × that sends none.
	defer keepHeartbeating(ctx, func() any { return time.Now().Unix() })()
	return ledgered(ctx, a, in.Occurrence, func(ctx context.Context) (pacer.RollupResult, error) {
		return a.rollup(ctx, in)
	})
}

func (a *Activities) rollup(ctx context.Context, in pacer.RollupInput) (res pacer.RollupResult, err error) {
	started := time.Now()
	defer func() { a.Metrics.ObserveRollup(time.Since(started), res, err) }()
	res = pacer.RollupResult{Run: pacer.Run{StartedAt: started.UTC()}, Hours: []time.Time{}, Days: []pacer.RollupDay{},
		Dirty: []time.Time{}}
	log := a.Logger.With(zap.String("task", pacer.TaskRollup))
	// As of its own nominal time (backfill, on time), or of when it
	// started (an `all` catch-up run, SPEC §3.4: AsOf).
	at := in.Occurrence.NominalAt
	if in.Occurrence.AsOf != nil {
		at = *in.Occurrence.AsOf
	}
	if at.IsZero() {
		at = a.now()
	}
	fail := func(err error) (pacer.RollupResult, error) {
		res.DurationMs = time.Since(started).Milliseconds()
		res.ErrorClass, res.Error = pacer.ClassTransport, err.Error()
		log.Error("rollup.failed", zap.Error(err))
		return res, runError(pacer.ClassTransport, err.Error(), res)
	}

	traded, err := a.Store.TradedTokens(ctx, catalog.MaxTraded)
	if err != nil {
		return fail(err)
	}
	spec := store.RollupSpec{
		Tracked:       a.Catalog.TokenSet(traded),
		KnownDecimals: a.Catalog.KnownDecimals(),
	}
	compute := func(p rollup.Period) (store.RollupOutcome, error) {
		spec.Period, spec.ComputedAt = p, a.now()
		out, err := a.Store.ComputeRollup(ctx, spec)
		res.Rows += out.Rows
		res.Corrections += out.Corrections
		return out, err
	}

	hours, days := covered(in.Occurrence, at)
	for _, hour := range hours {
		if _, err := compute(hour); err != nil {
			return fail(err)
		}
		res.Hours = append(res.Hours, hour.Start)
	}
	hour := hours[len(hours)-1]

	for _, day := range rollup.DaysBefore(at, a.dayZone(), days) {
		_, complete, err := a.Store.RollupState(ctx, rollup.Day, day.Start)
		if err != nil {
			return fail(err)
		}
		if complete {
			continue // complete days are final: recomputing them is never needed
		}
		out, err := compute(day)
		if err != nil {
			return fail(err)
		}
		res.Days = append(res.Days, pacer.RollupDay{Start: day.Start, End: day.End, Complete: out.Complete})
		if !out.Complete && at.Sub(day.End) > 24*time.Hour {
			log.Warn("rollup.day_incomplete", zap.Time("dayStart", day.Start), zap.Duration("endedAgo", at.Sub(day.End)))
		}
	}

	spec.ComputedAt = a.now()
	dirty, err := a.Store.RecomputeDirty(ctx, spec, a.dayZone())
	if err != nil {
		return fail(err)
	}
	res.Dirty = dirty.Marks
	res.Rows += dirty.Rows
	res.Corrections += dirty.Corrections
	for _, p := range dirty.Periods {
		if p.Kind == rollup.Hour {
			res.Hours = append(res.Hours, p.Start)
		} else {
			res.Days = append(res.Days, pacer.RollupDay{Start: p.Start, End: p.End, Complete: p.Complete})
		}
	}
	if len(dirty.Marks) > 0 {
		log.Info("rollup.dirty_recomputed", zap.Times("marks", dirty.Marks), zap.Int("periods", len(dirty.Periods)),
			zap.Int("corrections", dirty.Corrections))
	}

	if res.PrunedObservations, err = a.Store.PruneObservations(ctx, a.now().Add(-store.ObservationRetention)); err != nil {
		// Pruning can wait for the next hour; the rollups are written.
		log.Warn("rollup.prune_failed", zap.Error(err))
	}
	// The tables public input writes are bounded here too (SPEC §5.6).
	if byTable, err := a.Store.PrunePublicInput(ctx, a.now()); err != nil {
		log.Warn("rollup.prune_public_failed", zap.Error(err))
	} else {
		for table, n := range byTable {
			if n > 0 {
				log.Info("rollup.pruned", zap.String("table", table), zap.Int64("rows", n))
			}
		}
	}
	res.DurationMs = time.Since(started).Milliseconds()
	log.Info("rollup.completed", zap.Time("nominalAt", at), zap.Time("hour", hour.Start),
		zap.Int("days", len(res.Days)), zap.Int("rows", res.Rows), zap.Int("dirty", len(res.Dirty)),
		zap.Int("corrections", res.Corrections), zap.Int64("pruned", res.PrunedObservations),
		zap.Int64("durationMs", res.DurationMs))
	return res, nil
}

// covered is what a run computes. Its hours, oldest first: the hour that
// closed at or before at, and for a coalesced run every hour its missed
// occurrences stood for (SPEC §3.4: each its own rows and deliveries). How
// many days back it looks: DayLookback, or the days a coalesced run stands
// for when they reach further.
func covered(occ pacer.Occurrence, at time.Time) (hours []rollup.Period, days int) {
	last := rollup.HourBefore(at)
	first := last
	days = DayLookback
	if c := occ.Coalesced; c != nil && c.First.Before(at) {
		first = rollup.HourBefore(c.First)
		days = max(days, int(at.Sub(c.First)/(24*time.Hour))+2)
	}
	for h := first; !h.Start.After(last.Start); h = rollup.HourBefore(h.End.Add(time.Hour)) {
		hours = append(hours, h)
	}
	return hours, days
}

// recordObservations writes a tenero run's observations in one statement.
// A failure costs the rollups some samples, not the run its prices: it is
// logged, and the run goes on as it was.
func (a *Activities) recordObservations(ctx context.Context, obs []store.Observation) {
	if len(obs) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if _, err := a.Store.InsertObservations(ctx, obs); err != nil {
		a.Logger.Warn("tenero.observations_not_recorded", zap.Int("observations", len(obs)), zap.Error(err))
	}
}

func (a *Activities) now() time.Time {
	if a.Clock != nil {
		return a.Clock()
	}
	return time.Now()
}

func (a *Activities) dayZone() *time.Location {
	if a.DayZone != nil {
		return a.DayZone
	}
	return time.UTC
}
