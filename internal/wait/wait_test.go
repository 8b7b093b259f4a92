package wait

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSleep(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, Sleep(ctx, time.Hour), context.Canceled)
	require.NoError(t, Sleep(context.Background(), 0))
}

func TestBellWakesWhoTookItsChannelBefore(t *testing.T) {
	t.Parallel()
	var b Bell
	before := b.C()
	b.Ring()
	rang, err := SleepOr(context.Background(), time.Hour, before)
	require.NoError(t, err)
	require.True(t, rang, "a ring after C and before the wait is not lost")
	rang, err = SleepOr(context.Background(), 0, b.C())
	require.NoError(t, err)
	require.False(t, rang, "a C taken after the ring waits for the next")
	var none *Bell
	require.Nil(t, none.C())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = SleepOr(ctx, time.Hour, none.C())
	require.ErrorIs(t, err, context.Canceled)
}
