package store_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestBudgetIsSharedAndBounded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := newStore(t)
	// Two budgets on one upstream stand for two worker processes.
	a, b := st.NewBudget("hiro", 5), st.NewBudget("hiro", 5)
	other := st.NewBudget("tenero", 5)

	var granted atomic.Int32
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			budget := a
			if i%2 == 1 {
				budget = b
			}
			ok, retryIn, err := budget.Take(ctx)
			require.NoError(t, err)
			if ok {
				granted.Add(1)
			} else {
				require.Positive(t, retryIn)
				require.LessOrEqual(t, retryIn, time.Minute)
			}
		}()
	}
	wg.Wait()
	// A minute boundary between takes could grant a second window's worth.
	require.True(t, granted.Load() == 5 || granted.Load() == 10, "granted %d", granted.Load())

	ok, _, err := other.Take(ctx)
	require.NoError(t, err)
	require.True(t, ok, "another upstream has its own budget")
}

func TestBudgetWaitSleepsUntilNextMinute(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := newStore(t)
	b := st.NewBudget("hiro", 1)
	var slept []time.Duration
	b.Sleep = func(_ context.Context, d time.Duration) error {
		slept = append(slept, d)
		return context.Canceled // stop after the first wait
	}
	require.NoError(t, b.Wait(ctx))
	err := b.Wait(ctx)
	if len(slept) == 0 { // the minute rolled over between the two calls
		require.NoError(t, err)
		return
	}
	require.ErrorIs(t, err, context.Canceled)
	require.LessOrEqual(t, slept[0], time.Minute+10*time.Millisecond)
}
