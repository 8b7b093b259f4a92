package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// StateTrackedTokens is the competition_state key holding the token set the
// last tenero run worked from (SPEC §4.1), so that readers (the operator's
// page) need not rank every swap again to know which prices should be fresh.
const StateTrackedTokens = "tenero_tracked_tokens"

// SetTrackedTokens records the tracked token set.
func (s *Store) SetTrackedTokens(ctx context.Context, ids []string) error {
	b, err := json.Marshal(ids)
	if err != nil {
		return fmt.Errorf("tracked tokens: %w", err)
	}
	return s.SetState(ctx, StateTrackedTokens, string(b))
}

// TrackedTokens returns the token set the last tenero run recorded and when;
// ok is false before any run recorded one.
func (s *Store) TrackedTokens(ctx context.Context) (ids []string, at time.Time, ok bool, err error) {
	var raw string
	err = s.pool.QueryRow(ctx, `select value, updated_at from competition_state where key = $1`, StateTrackedTokens).Scan(&raw, &at)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, time.Time{}, false, nil
	}
	if err != nil {
		return nil, time.Time{}, false, fmt.Errorf("tracked tokens: %w", err)
	}
	if err := json.Unmarshal([]byte(raw), &ids); err != nil {
		return nil, time.Time{}, false, fmt.Errorf("tracked tokens: %w", err)
	}
	return ids, at, true, nil
}
