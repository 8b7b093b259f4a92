package api

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeFetch answers what the test tells it, one answer per call, and counts
// the calls under way.
type fakeFetch struct {
	answers        chan fetchAnswer
	calls, running atomic.Int32
	most           atomic.Int32
}

type fetchAnswer struct {
	v   int
	err error
}

func newFakeFetch() *fakeFetch { return &fakeFetch{answers: make(chan fetchAnswer)} }

func (f *fakeFetch) fetch(ctx context.Context) (int, error) {
	f.calls.Add(1)
	n := f.running.Add(1)
	defer f.running.Add(-1)
	for m := f.most.Load(); n > m && !f.most.CompareAndSwap(m, n); m = f.most.Load() {
	}
	select {
	case a := <-f.answers:
		return a.v, a.err
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// answer hands the fetch under way its answer, once one has started.
func (f *fakeFetch) answer(t *testing.T, v int, err error) {
	t.Helper()
	select {
	case f.answers <- fetchAnswer{v, err}:
	case <-time.After(5 * time.Second):
		t.Fatal("no fetch was waiting for an answer")
	}
}

// fakeClock is a clock the test moves.
type fakeClock struct{ ns atomic.Int64 }

func (c *fakeClock) now() time.Time      { return time.Unix(0, c.ns.Load()) }
func (c *fakeClock) add(d time.Duration) { c.ns.Add(int64(d)) }

func soon(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	t.Cleanup(cancel)
	return ctx
}

func TestCellOneFetchForManyReaders(t *testing.T) {
	t.Parallel()
	f := newFakeFetch()
	c := &cell[int]{what: "x", fetch: f.fetch, ttl: time.Hour, failTTL: time.Hour, timeout: time.Minute}
	var wg sync.WaitGroup
	got := make([]reading[int], 50)
	for i := range got {
		wg.Go(func() { got[i] = c.get(t.Context()) })
	}
	require.Eventually(t, func() bool { return f.running.Load() == 1 }, 5*time.Second, time.Millisecond)
	f.answer(t, 7, nil)
	wg.Wait()
	for _, r := range got {
		require.True(t, r.Fresh)
		require.Equal(t, 7, r.Value)
	}
	require.Equal(t, int32(1), f.most.Load())
	// Within the TTL: no fetch at all.
	require.Equal(t, 7, c.get(soon(t)).Value)
	require.Equal(t, int32(1), f.calls.Load())
}

func TestCellReaderDeadlineLeavesTheFetchRunning(t *testing.T) {
	t.Parallel()
	f := newFakeFetch()
	var clock fakeClock
	c := &cell[int]{what: "x", fetch: f.fetch, ttl: time.Minute, failTTL: time.Minute, timeout: time.Minute, clock: clock.now}
	go func() { f.answer(t, 1, nil) }()
	require.True(t, c.get(t.Context()).Fresh)
	clock.add(time.Minute)

	// The value is past its TTL and the next fetch hangs: a reader that
	// cannot wait gets the old value, not fresh, Waiting.
	r := c.get(soon(t))
	require.True(t, r.Waiting)
	require.False(t, r.Fresh)
	require.True(t, r.Have)
	require.Equal(t, 1, r.Value)
	require.NoError(t, r.Err)
	// More impatient readers join the fetch under way.
	for range 10 {
		require.True(t, c.get(soon(t)).Waiting)
	}
	require.Equal(t, int32(2), f.calls.Load())
	require.Equal(t, int32(1), f.most.Load())

	// The fetch fails: the failure is served, with the old value, for failTTL.
	f.answer(t, 0, errors.New("down"))
	require.Eventually(t, func() bool { return c.get(soon(t)).Err != nil }, 5*time.Second, time.Millisecond)
	r = c.get(soon(t))
	require.EqualError(t, r.Err, "down")
	require.Equal(t, 1, r.Value)
	require.False(t, r.Waiting)
	require.Equal(t, int32(2), f.calls.Load(), "a recent failure is reused")

	// Past the failure TTL, the next reader tries again.
	clock.add(time.Minute)
	go func() { f.answer(t, 3, nil) }()
	r = c.get(t.Context())
	require.True(t, r.Fresh)
	require.Equal(t, 3, r.Value)
	require.Equal(t, int32(3), f.calls.Load())
}

func TestCellStaleOKDoesNotWait(t *testing.T) {
	t.Parallel()
	f := newFakeFetch()
	var clock fakeClock
	c := &cell[int]{what: "x", fetch: f.fetch, ttl: time.Minute, failTTL: time.Minute, timeout: time.Minute, staleOK: true, clock: clock.now}
	go func() { f.answer(t, 1, nil) }()
	require.Equal(t, 1, c.get(t.Context()).Value, "nothing known yet: the first reader waits")
	clock.add(time.Minute)

	// Past the TTL, with the refresh hanging, readers get the old value at
	// once, without a deadline of their own.
	for range 10 {
		r := c.get(t.Context())
		require.True(t, r.Have)
		require.Equal(t, 1, r.Value)
	}
	require.Eventually(t, func() bool { return f.running.Load() == 1 }, 5*time.Second, time.Millisecond)
	f.answer(t, 2, nil)
	require.Eventually(t, func() bool { return c.get(t.Context()).Value == 2 }, 5*time.Second, time.Millisecond)
	require.Equal(t, int32(1), f.most.Load())
}

func TestCellFetchOutlivesItsReaders(t *testing.T) {
	t.Parallel()
	var sawCancel atomic.Bool
	done := make(chan struct{})
	c := &cell[int]{what: "x", ttl: time.Hour, failTTL: time.Hour, timeout: 50 * time.Millisecond,
		fetch: func(ctx context.Context) (int, error) {
			defer close(done)
			<-ctx.Done()
			sawCancel.Store(errors.Is(ctx.Err(), context.DeadlineExceeded))
			return 0, ctx.Err()
		}}
	ctx, cancel := context.WithCancel(t.Context())
	cancel() // the reader leaves at once
	require.True(t, c.get(ctx).Waiting)
	<-done
	require.True(t, sawCancel.Load(), "the fetch ended at its own timeout, not at its reader's")
	require.ErrorIs(t, c.get(soon(t)).Err, context.DeadlineExceeded)
}
