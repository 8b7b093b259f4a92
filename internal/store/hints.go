package store

import (
	"context"
	"fmt"
	"time"
)

// HintAgentAtMost makes an agent due now (SPEC §5.3, §5.6), unless it was
// hinted less than every ago: public input (the fast path, a chainhook
// delivery) may then ask as often as it likes and the sweep still visits
// the agent at most once per interval on its account. The interval is
// decided in the UPDATE's WHERE, so API processes racing on one agent let
// one hint through. hinted is false when the hint was debounced or the
// address is not a registered agent.
func (s *Store) HintAgentAtMost(ctx context.Context, stx string, every time.Duration) (hinted bool, err error) {
	tag, err := s.pool.Exec(ctx, `
update agent_ingest set hinted_at = now(), last_hint_at = now(), next_run_at = least(next_run_at, now())
where stx_address = $1
  and (last_hint_at is null or last_hint_at <= now() - make_interval(secs => $2))`, stx, every.Seconds())
	if err != nil {
		return false, fmt.Errorf("hint agent %s: %w", stx, err)
	}
	return tag.RowsAffected() == 1, nil
}
