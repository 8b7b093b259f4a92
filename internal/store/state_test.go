package store_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/store"
)

func TestState(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	const key = store.StateSweepCursor

	_, ok, err := s.GetState(ctx, key)
	require.NoError(t, err)
	require.False(t, ok)

	require.NoError(t, s.SetState(ctx, key, "SP1"))
	got, ok, err := s.GetState(ctx, key)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "SP1", got)

	require.NoError(t, s.SetState(ctx, key, "SP2"))
	got, ok, err = s.GetState(ctx, key)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "SP2", got)

	// An empty value is a value, not an unset key.
	require.NoError(t, s.SetState(ctx, "other", ""))
	got, ok, err = s.GetState(ctx, "other")
	require.NoError(t, err)
	require.True(t, ok)
	require.Empty(t, got)

	require.NoError(t, s.DeleteState(ctx, key))
	_, ok, err = s.GetState(ctx, key)
	require.NoError(t, err)
	require.False(t, ok)
	require.NoError(t, s.DeleteState(ctx, key), "deleting an unset key")

	_, ok, err = s.GetState(ctx, "other")
	require.NoError(t, err)
	require.True(t, ok, "other keys untouched")
}
