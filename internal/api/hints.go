package api

import (
	"context"
	"time"

	"go.uber.org/zap"
)

// Waker wakes the scheduler's sweep for an agent a hint made due: in the
// worker and API processes, the workflows.SignalHint signal to the
// scheduler workflow. It is called only for hints that passed the
// per-agent debounce, so no client can make it signal more than once per
// agent per Options.HintEvery.
type Waker func(ctx context.Context, agent string) error

// hintAgent makes agent due now, at most once per HintEvery (decided in
// Postgres, so every API process shares the debounce), and wakes the sweep
// when the hint went through. Failures are logged: a hint only speeds
// discovery up, the sweep visits the agent anyway.
func (s *Server) hintAgent(ctx context.Context, agent string) {
	s.hintAgentEvery(ctx, agent, s.o.HintEvery)
}

// hintAgentEvery hints with the debounce every; zero means none, for a
// ledger change only an authenticated caller can cause and no replay
// repeats (a chainhook rollback that removed swaps).
func (s *Server) hintAgentEvery(ctx context.Context, agent string, every time.Duration) {
	hinted, err := s.o.Store.HintAgentAtMost(ctx, agent, every)
	if err != nil {
		s.o.Logger.Warn("api.hint_failed", zap.String("agent", agent), zap.Error(err))
		return
	}
	if !hinted || s.o.Waker == nil {
		return
	}
	// Apart from the request: a slow Temporal must not hold the answer
	// back, and the debounce bounds these to one per agent per HintEvery.
	go func() {
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), wakeTimeout)
		defer cancel()
		if err := s.o.Waker(wctx, agent); err != nil {
			s.o.Logger.Warn("api.wake_failed", zap.String("agent", agent), zap.Error(err))
		}
	}()
}

// wakeTimeout bounds one wake signal.
const wakeTimeout = 5 * time.Second
