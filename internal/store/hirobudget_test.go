package store_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/budget"
	"github.com/pacer-dev/pacer/internal/fault"
	"github.com/pacer-dev/pacer/internal/hiro"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/internal/testenv"
)

// dayWindow makes the minute window a day long, so that a test's takes
// all fall in one window whatever the clock says.
var dayWindow = budget.Config{PerMinute: 50, Window: 24 * time.Hour}

func TestSharedBudgetIsOneBudgetForEveryProcess(t *testing.T) {
	t.Parallel()
	url := testenv.PostgresURL(t)
	first := openStore(t, url)
	require.NoError(t, first.Migrate(t.Context()))
	// Two stores, as two processes would have.
	budgets := []*store.SharedBudget{
		first.SharedBudget(store.UpstreamHiro, dayWindow),
		openStore(t, url).SharedBudget(store.UpstreamHiro, dayWindow),
	}
	var granted atomic.Int64
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for range 15 {
				d, err := budgets[i%2].Take(t.Context(), budget.LaneSweep, 1)
				if err != nil {
					t.Error(err)
					return
				}
				if d.OK {
					granted.Add(1)
				}
			}
		})
	}
	wg.Wait()
	// 50 a window less the fast lane's reserve (5% of 50, rounded up).
	require.Equal(t, int64(47), granted.Load())
	// What the sweep lane took is counted in the one budget, whichever
	// process took it: the optimal policy's plan follows it.
	st, _, err := budgets[1].Snapshot(t.Context())
	require.NoError(t, err)
	require.Equal(t, granted.Load(), st.SweepTaken)
}

func TestLimiterFollowsHiroAndNeverWaitsInTheFastLane(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	b := s.SharedBudget(store.UpstreamHiro, dayWindow)
	fast := b.Limiter(budget.LaneFast, 0)
	for range 10 {
		require.NoError(t, fast.Wait(t.Context()))
	}
	err := fast.Wait(t.Context())
	var spent *hiro.BudgetSpentError
	require.ErrorAs(t, err, &spent)
	require.Positive(t, spent.RetryAfter)

	// Hiro says 5 are left: the sweep gets those, less the fast lane's
	// reserve it has already used, and no more.
	five, cost := int64(5), int64(2)
	sweep := b.Limiter(budget.LaneSweep, 0)
	require.NoError(t, sweep.Wait(t.Context()))
	sweep.Observe(t.Context(), hiro.Quota{StatusCode: 200, Cost: cost, Remaining: &five})
	st, _, err := b.Snapshot(t.Context())
	require.NoError(t, err)
	require.Equal(t, int64(5), *st.Left)
	require.Equal(t, int64(2), st.SweepUsed, "the cost beyond the slot is debited")
	n := 0
	for sweep.Wait(t.Context()) == nil {
		n++
	}
	require.Equal(t, 5, n)
}

func TestBudgetStoreFailureIsTransport(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	limiter := s.SharedBudget(store.UpstreamHiro, dayWindow).Limiter(budget.LaneSweep, time.Second)
	var called atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { called.Store(true) }))
	t.Cleanup(srv.Close)
	c := hiro.New(hiro.Config{BaseURL: srv.URL, Limiter: limiter})
	s.Close() // the database is gone

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, err := c.Tx(ctx, "0xabc")
	require.Error(t, err)
	require.Equal(t, pacer.ClassTransport, fault.ClassOf(err), "%v", err)
	var spent *hiro.BudgetSpentError
	require.False(t, errors.As(err, &spent))
	require.False(t, called.Load(), "no request without the budget's word")
}

// The plan's view of the budget is the lane's room and pace, on the
// caller's clock.
func TestPlanViewIsTheLanesSnapshotOnTheCallersClock(t *testing.T) {
	t.Parallel()
	b := newStore(t).SharedBudget(store.UpstreamHiro, dayWindow)
	for range 5 {
		_, err := b.Take(t.Context(), budget.LaneSweep, 1)
		require.NoError(t, err)
	}
	st, dbNow, err := b.Snapshot(t.Context())
	require.NoError(t, err)
	ahead := dbNow.Add(time.Hour) // a caller whose clock runs an hour ahead
	v, minute, month, err := b.PlanView(t.Context(), budget.LaneSweep, ahead)
	require.NoError(t, err)
	require.True(t, v.Known)
	require.Equal(t, int64(45), minute, "50 a window less the 5 taken")
	require.Nil(t, month, "Hiro has not said")
	require.Equal(t, int64(42), v.Room, "the sweep's room: the rest less the fast lane's reserve")
	require.Positive(t, v.Rate)
	require.WithinDuration(t, st.WindowEnd.Add(time.Hour), v.WindowEnd, time.Second)
}
