package activities

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/fault"
	"github.com/pacer-dev/pacer/internal/pacing"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/internal/tally"
	"github.com/pacer-dev/pacer/internal/tenero"
)

// RefreshTenero refreshes USD prices (SPEC §4): the static base first, then
// the tokens agents trade, pegs at 1 USD without a call, stopping at once
// when Tenero says a quota is spent.
func (a *Activities) RefreshTenero(ctx context.Context, in pacer.TeneroInput) (pacer.TeneroResult, error) {
	return pacedHeld(ctx, a, pacer.TaskTenero, in.Pace, func(ctx context.Context, batch int) (pacer.TeneroResult, error) {
		if in.Pace != nil {
			in.MaxTokens = batch
		}
		return ledgered(ctx, a, in.Occurrence, func(ctx context.Context) (pacer.TeneroResult, error) {
			return a.refreshTenero(ctx, in)
		})
	}, func(r *pacer.TeneroResult) (*pacer.Run, int, **pacer.Pace) {
		// Pegs cost no request; not_found and parse_error are item
		// problems the upstream answered, so they count as its successes.
		return &r.Run, r.Succeeded - r.Pegged + r.Failed - r.UpstreamFailed, &r.Pace
	}, teneroMonthHold)
}

// teneroMonthHold paces Tenero's month (SPEC §4.7): Tenero says how many
// requests are left of the month, never how many it allows, so what is
// left is spread evenly over what is left of the month, and the next run
// waits until that pace has paid for the requests it will make: its batch,
// or the whole token set when that is smaller (pegs cost nothing). A run
// that heard nothing of the month is not held.
func teneroMonthHold(r *pacer.TeneroResult, now time.Time, batch int) (time.Duration, string) {
	if r.MonthRemaining == nil {
		return 0, ""
	}
	cost := batch
	if r.Wanted > 0 {
		cost = min(batch, r.Wanted)
	}
	return pacing.MonthHold(now, int64(*r.MonthRemaining), cost), pacing.HeldByMonth
}

func (a *Activities) refreshTenero(ctx context.Context, in pacer.TeneroInput) (res pacer.TeneroResult, err error) {
	clock := time.Now() // durations, whatever a.Clock says
	// started is also the instant a cut batch is chosen by: StartedAt
	// tells anyone checking the choice what "stale" was measured from.
	started := a.now()
	defer func() { a.Metrics.ObserveTenero(time.Since(clock), res, err) }()
	res = pacer.TeneroResult{Run: pacer.Run{StartedAt: started.UTC()}}
	log := a.Logger.With(zap.String("task", pacer.TaskTenero))

	traded, err := a.Store.TradedTokens(ctx, 50)
	set := a.Catalog.TokenSet(traded) // none on a failure: the static base alone still gets refreshed
	if err != nil {
		log.Warn("tenero.token_query_failed", zap.Error(err))
	} else {
		// Readers of the tracked set (the operator's page) take it from
		// here instead of ranking every swap again; a failure only leaves
		// them the previous set.
		if err := a.Store.SetTrackedTokens(ctx, set); err != nil {
			log.Warn("tenero.tracked_tokens_not_recorded", zap.Error(err))
		}
	}
	// storeFailed ends the run at a database failure as a transport error,
	// which Temporal retries; the unchanged-price check makes it cheap.
	storeFailed := func(event, op string, err error, fields ...zap.Field) (pacer.TeneroResult, error) {
		res.ErrorClass, res.Error = pacer.ClassTransport, err.Error()
		log.Error(event, append(fields, zap.Error(err))...)
		return res, runError(pacer.ClassTransport, op+err.Error(), res)
	}
	tokens, err := a.tokensToFetch(ctx, set, in, started, &res)
	if err != nil {
		return storeFailed("tenero.checked_at_unread", "", err)
	}
	var obs []store.Observation // every price fetched, for the rollups: one insert per run
	defer func() { a.recordObservations(ctx, obs) }()

	// The run's stopping rule (tally.Ending): a refusal, a permanent
	// error, tally.MaxUpstreamStreak upstream failures in a row (an
	// upstream that is down will not come back within one run, and each
	// failure costs in-attempt retries), a spent window, or the minute's
	// reserve of a paced run.
	ending := tally.Ending{Reserve: int64(in.StopAtMinuteRemaining)}
	var (
		stopClass   pacer.ErrorClass
		stopMsg     string
		lastFailure error
	)
	var done atomic.Int64
	defer keepHeartbeating(ctx, func() any { return done.Load() })()
	for i, id := range tokens {
		done.Store(int64(i))
		if err := ctx.Err(); err != nil {
			return res, runError(pacer.ClassTimeout, "run cancelled: "+err.Error(), res)
		}
		res.TokensAttempted++
		now := a.now().UTC()

		if peg, ok := a.Catalog.Peg(id); ok {
			one, dec := "1", peg.Decimals
			if err := a.savePrice(ctx, &res, &obs, store.Price{TokenID: id, PriceUSD: &one, Decimals: &dec,
				Source: store.SourcePeg, FetchedAt: now}); err != nil {
				return storeFailed("tenero.store_failed", "store price: ", err, zap.String("token", id))
			}
			res.Pegged++
			continue
		}

		p, err := a.Tenero.Price(ctx, id)
		res.Requests++
		tally.Remaining(&res.MinuteRemaining, p.Quota.MinuteRemaining)
		tally.Remaining(&res.MonthRemaining, p.Quota.MonthRemaining)
		if err != nil {
			res.Failed++
			lastFailure = err
			class := fault.ClassOf(err)
			fields := []zap.Field{zap.String("token", id), zap.String("class", string(class)), zap.Error(err)}
			if ray := tenero.RayID(err); ray != "" {
				fields = append(fields, zap.String("cfRay", ray)) // what Tenero's support asks for
			}
			log.Warn("tenero.token_failed", fields...)
			if class == pacer.ClassNotFound {
				// Tenero answered: it does not know the token. That is a
				// check, or a cut run would pick the token first forever.
				if err := a.Store.MarkChecked(ctx, id, now); err != nil {
					return storeFailed("tenero.store_failed", "store check: ", err, zap.String("token", id))
				}
			}
			tally.Count(&res.Run, class)
			if ends, streak := ending.Failed(class); ends {
				stopClass, stopMsg = class, err.Error()
				if streak >= tally.MaxUpstreamStreak {
					stopMsg = fmt.Sprintf("%d upstream failures in a row, last: %v", streak, err)
				}
			}
		} else {
			ending.Succeeded()
			dec := p.Decimals
			if dec == nil {
				if d, ok := a.Catalog.Decimals(id); ok {
					dec = &d
				}
			}
			if err := a.savePrice(ctx, &res, &obs, store.Price{TokenID: id, PriceUSD: p.PriceUSD, Decimals: dec,
				Source: store.SourceTenero, FetchedAt: now,
				MinuteRemaining: p.Quota.MinuteRemaining, MonthRemaining: p.Quota.MonthRemaining}); err != nil {
				return storeFailed("tenero.store_failed", "store price: ", err, zap.String("token", id))
			}
			if p.PriceUSD == nil {
				res.NoPrice++
			}
		}

		// A spent quota stops the run whatever this call's outcome: the next
		// call would only be refused.
		if backoff, spent := p.Quota.Exhausted(); spent || stopClass == pacer.ClassRateLimit {
			if !spent {
				backoff = fault.MinuteQuotaBackoff
			}
			res.RateLimited = true
			res.RateLimitBackoffMs = backoff.Milliseconds()
			event := "tenero.minute_quota_exhausted_mid_run"
			if backoff >= fault.MonthQuotaBackoff {
				event = "tenero.month_quota_exhausted_mid_run"
			}
			log.Warn(event, zap.Int("done", i+1), zap.Int("left", len(tokens)-i-1), zap.Duration("backoff", backoff))
			stopClass = pacer.ClassRateLimit
			if stopMsg == "" {
				stopMsg = "quota exhausted after " + strconv.Itoa(i+1) + " of " + strconv.Itoa(len(tokens)) + " tokens"
			}
		}
		if stopClass != "" {
			res.Skipped = len(tokens) - i - 1
			break
		}
		// A paced run keeps a small reserve of the minute: it ends here,
		// normally, rather than spend the last request and hit the wall.
		if ending.Reserved(p.Quota.MinuteRemaining, i < len(tokens)-1) {
			res.Skipped = len(tokens) - i - 1
			log.Info("tenero.minute_reserve_reached", zap.Int64("minuteRemaining", *p.Quota.MinuteRemaining), zap.Int("left", res.Skipped))
			break
		}
	}

	if stopClass == "" && res.Succeeded == res.Pegged && lastFailure != nil {
		// Not one price came back: the run failed, even if pegs were written
		// (every body unreadable counts too, not only upstream errors).
		stopClass, stopMsg = fault.ClassOf(lastFailure), "no token fetched, last: "+lastFailure.Error()
	}
	res.DurationMs = time.Since(clock).Milliseconds()
	// The log carries the result as the workflow reads it.
	if stopClass != "" {
		res.ErrorClass, res.Error = stopClass, stopMsg
		log.Warn("tenero.refresh_stopped", zap.Any("result", res))
		return res, runError(stopClass, stopMsg, res)
	}
	log.Info("tenero.refresh_completed", zap.Any("result", res))
	return res, nil
}

// savePrice writes one price, counts it and keeps it as an observation.
func (a *Activities) savePrice(ctx context.Context, res *pacer.TeneroResult, obs *[]store.Observation, p store.Price) error {
	*obs = append(*obs, store.Observation{TokenID: p.TokenID, ObservedAt: p.FetchedAt, PriceUSD: p.PriceUSD})
	written, err := a.Store.UpsertPrice(ctx, p)
	if err != nil {
		return err
	}
	res.Succeeded++
	if written {
		res.Written++
	} else {
		res.Unchanged++
	}
	return nil
}

// tokensToFetch chooses the tokens of a run (SPEC §4.1, §4.8). Pegs cost no
// request and are always kept; MaxTokens counts the tokens that call Tenero.
// A cut batch is pacing.PickTokens' choice at now from each token's last
// check (token_prices.checked_at), the function the benchmark runs: the
// static base first, then the traded tokens whose staleness × weight is
// largest, so that docs/benchmarks.md's staleness figures are this run's.
func (a *Activities) tokensToFetch(ctx context.Context, set []string, in pacer.TeneroInput, now time.Time, res *pacer.TeneroResult) ([]string, error) {
	var pegs, priced []string // priced: the tokens that call Tenero, in set order
	nStatic, static := 0, len(a.Catalog.StaticBase())
	for i, id := range set {
		if _, peg := a.Catalog.Peg(id); peg {
			pegs = append(pegs, id)
			continue
		}
		if i < static {
			nStatic++
		}
		priced = append(priced, id)
	}
	res.Wanted = len(priced)
	n := in.MaxTokens
	if n <= 0 || n >= len(priced) {
		return set, nil
	}
	stored, err := a.Store.Prices(ctx, priced)
	if err != nil {
		return nil, fmt.Errorf("read when each token was checked: %w", err)
	}
	checked := make([]*time.Time, len(priced))
	for i, id := range priced {
		checked[i] = stored[id].CheckedAt
	}
	out := make([]string, 0, n+len(pegs))
	for _, i := range pacing.PickTokens(now, checked, nStatic, n) {
		if i >= nStatic && len(pegs) > 0 {
			// After the static base, as in the whole set.
			out, pegs = append(out, pegs...), nil
		}
		out = append(out, priced[i])
	}
	return append(out, pegs...), nil
}
