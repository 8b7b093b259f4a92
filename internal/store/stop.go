package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// SchedulerStop is a scheduler stopped on purpose, kept where Temporal's
// retention cannot remove it (SPEC §3.5): while it is recorded, workers
// never start a fresh scheduler, and pacer start carries Result's state.
type SchedulerStop struct {
	// RunID is the stopped run.
	RunID     string    `json:"runId"`
	StoppedAt time.Time `json:"stoppedAt"`
	// Result is the stopped run's result as JSON (the workflow's stop
	// result: its reason, config and state).
	Result json.RawMessage `json:"result"`
}

// stopKey is the competition_state key of workflowID's stop.
func stopKey(workflowID string) string { return "scheduler.stopped:" + workflowID }

// RecordStop records that workflowID was stopped. Recording the same stop
// again changes nothing (a worker's check records what pacer stop did).
func (s *Store) RecordStop(ctx context.Context, workflowID string, stop SchedulerStop) error {
	v, err := json.Marshal(stop)
	if err != nil {
		return fmt.Errorf("record the stop of %s: %w", workflowID, err)
	}
	_, err = s.pool.Exec(ctx, `
insert into competition_state (key, value) values ($1, $2)
on conflict (key) do update set value = excluded.value, updated_at = now()
where competition_state.value <> excluded.value`, stopKey(workflowID), string(v))
	if err != nil {
		return fmt.Errorf("record the stop of %s: %w", workflowID, err)
	}
	return nil
}

// SchedulerStopped reads workflowID's recorded stop; ok is false when none
// is recorded.
func (s *Store) SchedulerStopped(ctx context.Context, workflowID string) (stop SchedulerStop, ok bool, err error) {
	var v string
	err = s.pool.QueryRow(ctx, `select value from competition_state where key = $1`, stopKey(workflowID)).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return SchedulerStop{}, false, nil
	}
	if err == nil {
		err = json.Unmarshal([]byte(v), &stop)
	}
	if err != nil {
		return SchedulerStop{}, false, fmt.Errorf("read the stop of %s: %w", workflowID, err)
	}
	return stop, true, nil
}

// ClearStop removes workflowID's recorded stop if it stopped before
// startedAfter: a run started after the stop ended it. A zero startedAfter
// removes it whatever its time; pacer start clears with ClearStopOf.
func (s *Store) ClearStop(ctx context.Context, workflowID string, startedAfter time.Time) error {
	_, err := s.pool.Exec(ctx, `
delete from competition_state
where key = $1 and ($2::timestamptz is null or (value::jsonb->>'stoppedAt')::timestamptz < $2)`,
		stopKey(workflowID), nullTime(startedAfter))
	if err != nil {
		return fmt.Errorf("clear the stop of %s: %w", workflowID, err)
	}
	return nil
}

// ClearStopOf removes workflowID's recorded stop only while it is still
// the stop of run runID (compare-and-clear): pacer start clears the stop
// it started from, and a stop recorded since (a concurrent pacer stop of
// the run it just started) is kept.
func (s *Store) ClearStopOf(ctx context.Context, workflowID, runID string) error {
	_, err := s.pool.Exec(ctx, `
delete from competition_state where key = $1 and value::jsonb->>'runId' = $2`, stopKey(workflowID), runID)
	if err != nil {
		return fmt.Errorf("clear the stop of %s run %s: %w", workflowID, runID, err)
	}
	return nil
}

func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
