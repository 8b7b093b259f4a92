package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Keys of competition_state.
const (
	// StateSweepCursor was the round-robin sweep's place in the agent walk;
	// migration 006 removes it (each agent has its own cursor now).
	StateSweepCursor = "competition_sweep_cursor"
)

// GetState reads a competition_state value; ok is false when the key is unset.
func (s *Store) GetState(ctx context.Context, key string) (value string, ok bool, err error) {
	err = s.pool.QueryRow(ctx, `select value from competition_state where key = $1`, key).Scan(&value)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("get state %s: %w", key, err)
	}
	return value, true, nil
}

// SetState sets a competition_state value, creating the key if needed.
func (s *Store) SetState(ctx context.Context, key, value string) error {
	_, err := s.pool.Exec(ctx, `
insert into competition_state (key, value) values ($1, $2)
on conflict (key) do update set value = excluded.value, updated_at = now()`, key, value)
	if err != nil {
		return fmt.Errorf("set state %s: %w", key, err)
	}
	return nil
}

// DeleteState removes a key; removing an unset key is not an error.
func (s *Store) DeleteState(ctx context.Context, key string) error {
	if _, err := s.pool.Exec(ctx, `delete from competition_state where key = $1`, key); err != nil {
		return fmt.Errorf("delete state %s: %w", key, err)
	}
	return nil
}
