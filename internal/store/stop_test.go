package store_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/store"
)

func TestSchedulerStop(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()

	_, ok, err := s.SchedulerStopped(ctx, "v1")
	require.NoError(t, err)
	require.False(t, ok)

	at := time.Date(2026, 5, 14, 10, 0, 0, 123456000, time.UTC)
	stop := store.SchedulerStop{RunID: "run-1", StoppedAt: at, Result: json.RawMessage(`{"reason":"maintenance","state":{"pausedUntil":"2026-05-14T12:00:00Z"}}`)}
	require.NoError(t, s.RecordStop(ctx, "v1", stop))
	require.NoError(t, s.RecordStop(ctx, "v1", stop), "recording it again")
	got, ok, err := s.SchedulerStopped(ctx, "v1")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "run-1", got.RunID)
	require.True(t, at.Equal(got.StoppedAt))
	require.JSONEq(t, string(stop.Result), string(got.Result))
	_, ok, err = s.SchedulerStopped(ctx, "v2")
	require.NoError(t, err)
	require.False(t, ok, "one workflow ID's stop only")

	// A run that started before the stop (the stopped run itself) leaves
	// it; one started after it ends it.
	require.NoError(t, s.ClearStop(ctx, "v1", at.Add(-time.Minute)))
	require.NoError(t, s.ClearStop(ctx, "v1", at))
	_, ok, err = s.SchedulerStopped(ctx, "v1")
	require.NoError(t, err)
	require.True(t, ok, "not cleared by a run that started before or at the stop")
	require.NoError(t, s.ClearStop(ctx, "v1", at.Add(time.Millisecond)))
	_, ok, err = s.SchedulerStopped(ctx, "v1")
	require.NoError(t, err)
	require.False(t, ok, "cleared by a run started after it")

	require.NoError(t, s.RecordStop(ctx, "v1", stop))
	require.NoError(t, s.ClearStop(ctx, "v1", time.Time{}))
	_, ok, err = s.SchedulerStopped(ctx, "v1")
	require.NoError(t, err)
	require.False(t, ok, "pacer start clears it whatever its time")
	require.NoError(t, s.ClearStop(ctx, "v1", time.Time{}), "clearing what is not recorded")
}
