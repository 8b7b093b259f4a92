package activities

import (
	"context"
	"errors"
	"maps"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.uber.org/zap"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/competition"
	"github.com/pacer-dev/pacer/internal/hiro"
	"github.com/pacer-dev/pacer/internal/store"
)

// Sweep sizes (SPEC §5.2–5.3).
const (
	DefaultSweepPage = 100
	txsPerAgent      = 25
)

// sweepProgress is heartbeated after each agent, so a retried attempt of
// the same page skips the agents already done and keeps their counts.
type sweepProgress struct {
	// After is the cursor the page started after; progress of another page
	// is ignored.
	After  string            `json:"after"`
	Done   int               `json:"done"`
	Result pacer.SweepResult `json:"result"`
}

// Sweep walks one page of registered agents, finds their allowlisted swap
// transactions on Hiro and verifies each into the swaps table (SPEC §5).
// The cursor moves only after the whole page is processed, so a crash
// rescans the page (already-known swaps cost no upstream call) and never
// skips an agent.
func (a *Activities) Sweep(ctx context.Context, in pacer.SweepInput) (res pacer.SweepResult, err error) {
	started := time.Now()
	defer func() { a.Metrics.ObserveSweep(time.Since(started), res, err) }()
	size := in.PageSize
	if size <= 0 {
		size = DefaultSweepPage
	}
	log := a.Logger.With(zap.String("task", pacer.TaskSweep))
	res = pacer.SweepResult{Run: pacer.Run{StartedAt: started.UTC()}, RejectionReasons: competition.RejectionReasons(nil)}

	cursor, _, err := a.Store.GetState(ctx, store.StateSweepCursor)
	if err != nil {
		return res, runError(pacer.ClassTransport, "read sweep cursor: "+err.Error(), res)
	}
	agents, err := a.Store.AgentsPage(ctx, cursor, size)
	if err != nil {
		return res, runError(pacer.ClassTransport, "read agents: "+err.Error(), res)
	}

	var prog sweepProgress
	if activity.HasHeartbeatDetails(ctx) && activity.GetHeartbeatDetails(ctx, &prog) == nil &&
		prog.After == cursor && prog.Done <= len(agents) {
		res = prog.Result
		res.RejectionReasons = competition.RejectionReasons(toReasons(res.RejectionReasons))
		log.Info("sweep.resumed", zap.String("after", cursor), zap.Int("done", prog.Done))
	} else {
		prog = sweepProgress{After: cursor}
	}
	var mu sync.Mutex // guards prog against the heartbeat goroutine
	snapshot := func() any { mu.Lock(); defer mu.Unlock(); return prog }
	defer keepHeartbeating(ctx, snapshot)()

	var stop error // ends the walk early; the cursor then stays put
	var lastErr error
	for i := prog.Done; i < len(agents) && stop == nil; i++ {
		if err := ctx.Err(); err != nil {
			return res, runError(pacer.ClassTimeout, "sweep cancelled: "+err.Error(), res)
		}
		if stop, lastErr = a.sweepAgent(ctx, log, agents[i], &res, lastErr); stop != nil {
			break
		}
		mu.Lock()
		// The heartbeat goroutine encodes prog while the walk goes on: it
		// gets its own copy of the reasons map.
		prog.Done, prog.Result = i+1, res
		prog.Result.RejectionReasons = maps.Clone(res.RejectionReasons)
		mu.Unlock()
		activity.RecordHeartbeat(ctx, snapshot())
	}

	res.DurationMs = time.Since(started).Milliseconds()
	if stop == nil && res.Scanned == 0 && lastErr != nil {
		// Not one agent could be listed: the run failed, whatever the class.
		stop = lastErr
	}
	if stop != nil {
		class := pacer.ClassOf(stop)
		res.ErrorClass, res.Error = class, stop.Error()
		if class == pacer.ClassRateLimit {
			res.RateLimited = true
			res.RateLimitBackoffMs = hiroBackoff(res).Milliseconds()
		}
		log.Warn("sweep.stopped", zap.String("class", string(class)), zap.Error(stop), zap.Int("scanned", res.Scanned))
		return res, runError(class, res.Error, res)
	}

	if len(agents) == size {
		next := agents[len(agents)-1]
		if err := a.Store.SetState(ctx, store.StateSweepCursor, next); err != nil {
			return res, runError(pacer.ClassTransport, "save sweep cursor: "+err.Error(), res)
		}
		res.Cursor = &next
	} else if err := a.Store.DeleteState(ctx, store.StateSweepCursor); err != nil {
		return res, runError(pacer.ClassTransport, "reset sweep cursor: "+err.Error(), res)
	}
	log.Info("sweep.summary", zap.Int("scanned", res.Scanned), zap.Int("found", res.Found),
		zap.Int("inserted", res.Inserted), zap.Int("alreadyKnown", res.AlreadyKnown), zap.Int("pending", res.Pending),
		zap.Int("rejected", res.Rejected), zap.Any("rejectionReasons", res.RejectionReasons),
		zap.Int("hiroErrors", res.HiroErrors), zap.Stringp("cursor", res.Cursor), zap.Int64("durationMs", res.DurationMs))
	return res, nil
}

// sweepAgent lists one agent's recent transactions and verifies the swaps
// among them. It returns an error only when the walk must stop: a spent
// quota, a permanent upstream answer, or the database gone.
// It also returns the listing error, if any, else last.
func (a *Activities) sweepAgent(ctx context.Context, log *zap.Logger, agent string, res *pacer.SweepResult, last error) (stop, listErr error) {
	page, err := a.Hiro.AddressTransactions(ctx, agent, txsPerAgent)
	res.Requests++
	a.noteQuota(res, page.Quota)
	if err != nil {
		res.HiroErrors++
		countUpstream(&res.Run, pacer.ClassOf(err))
		var se *hiro.StatusError
		if errors.As(err, &se) {
			a.noteQuota(res, se.Quota)
			log.Warn("sweep.hiro_non_ok", zap.String("agent", agent), zap.Int("status", se.StatusCode), zap.Error(err))
		} else {
			log.Warn("sweep.hiro_threw", zap.String("agent", agent), zap.Error(err))
		}
		switch pacer.ClassOf(err) {
		case pacer.ClassRateLimit, pacer.ClassPermanent:
			return err, err
		}
		return nil, err // the walk goes on; the next pass looks at this agent again
	}
	res.Scanned++
	for _, txid := range competition.FoundInPage(page, a.Catalog) {
		res.Found++
		o := a.Verifier.Verify(ctx, txid, competition.SourceSweep)
		if o.Status != competition.StatusAlreadyKnown {
			res.Requests++ // the verifier asked Hiro for the transaction
		}
		countUpstream(&res.Run, o.Class())
		switch o.Status {
		case competition.StatusInserted:
			res.Inserted++
		case competition.StatusAlreadyKnown:
			res.AlreadyKnown++
		case competition.StatusPending:
			res.Pending++
		case competition.StatusRejected:
			res.Rejected++
			res.RejectionReasons[string(o.Reason)]++
			log.Info("sweep.rejected", zap.String("txid", o.TxID), zap.String("agent", agent),
				zap.String("reason", string(o.Reason)), zap.String("detail", o.Detail), zap.Error(o.Err))
		}
		switch {
		case o.Reason == competition.ReasonDBUnavailable:
			return &pacer.Error{Class: pacer.ClassTransport, Op: "sweep " + agent, Err: o.Err}, last
		case o.Class() == pacer.ClassRateLimit:
			return o.Err, last
		}
	}
	return nil, last
}

// countUpstream counts a failed call against the upstream when the failure
// was the upstream's own (not an item problem).
func countUpstream(run *pacer.Run, class pacer.ErrorClass) {
	if class.IsUpstreamFailure() {
		run.UpstreamFailed++
	}
	if class == pacer.ClassRateLimit {
		run.Rejected++
	}
}

// noteQuota keeps the lowest remaining counts Hiro reported during the run.
func (a *Activities) noteQuota(res *pacer.SweepResult, q hiro.Quota) {
	if q.MinuteRemaining != nil {
		res.MinuteRemaining = q.MinuteRemaining
	} else if q.Remaining != nil {
		res.MinuteRemaining = q.Remaining
	}
	if q.MonthRemaining != nil {
		res.MonthRemaining = q.MonthRemaining
	}
}

// hiroBackoff defers the sweep after a rate limit: a day when the month is
// spent, five minutes otherwise.
func hiroBackoff(res pacer.SweepResult) time.Duration {
	if res.MonthRemaining != nil && *res.MonthRemaining <= 0 {
		return pacer.MonthQuotaBackoff
	}
	return pacer.MinuteQuotaBackoff
}

func toReasons(m map[string]int) map[competition.Reason]int {
	out := make(map[competition.Reason]int, len(m))
	for k, v := range m {
		out[competition.Reason(k)] = v
	}
	return out
}
