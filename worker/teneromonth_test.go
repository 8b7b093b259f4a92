package worker_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/activities"
	"github.com/pacer-dev/pacer/internal/discovery"
	"github.com/pacer-dev/pacer/internal/evidence"
	"github.com/pacer-dev/pacer/internal/pacing"
	"github.com/pacer-dev/pacer/internal/sim"
	"github.com/pacer-dev/pacer/worker"
	"github.com/pacer-dev/pacer/workflows"
)

// monthStack is the worker, the workflow and the simulator's Tenero on a
// month of perMonth requests of which used are spent, on a clock that reads at
// (then moves with real time): Tenero's headers say what is left of the
// month, never its limit.
type monthStack struct {
	*stack
	start time.Time
	now   func() time.Time
	mu    sync.Mutex
	reqs  []time.Time // each Tenero token request, on the shifted clock
}

func newMonthStack(t *testing.T, every time.Duration, at time.Time, perMonth, used int) *monthStack {
	t.Helper()
	m := &monthStack{stack: newStack(t, workflows.Config{TeneroEvery: pacer.Duration(every),
		SweepEvery: pacer.Duration(time.Hour)}), start: time.Now()}
	m.now = func() time.Time { return at.Add(time.Since(m.start)) }
	tenero := sim.New(sim.Config{Seed: 7, Now: m.now,
		Tenero: sim.TeneroConfig{Anonymous: sim.Limits{PerMinute: 100, PerMonth: perMonth, MonthUsed: used}}})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/v1/stacks/tokens/") {
			m.mu.Lock()
			m.reqs = append(m.reqs, m.now())
			m.mu.Unlock()
		}
		tenero.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	w := worker.New(m.tc, m.sched.TaskQueue, activities.New(activities.Options{
		Discovery: discovery.Config{Mode: "agents"},
		Store:     m.st, Logger: m.log, TeneroBaseURL: hs.URL, HiroBaseURL: m.simU, HiroPerMinute: 10000,
		CompetitionStart: time.Unix(1778700600, 0), Clock: m.now,
	}))
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	_, err := worker.EnsureRunning(t.Context(), m.tc, m.sched)
	require.NoError(t, err)
	return m
}

func (m *monthStack) requests() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.reqs)
}

// TestTeneroMonthIsPacedOnTheRealStack: 400 requests left two days before
// the month's end and a 1-second cadence (issue 41.0 reported 47 requests
// in 11 minutes at a 1-minute one): after its first run the scheduler
// holds tenero until the even pace of what is left, over what is left of
// the month, has paid for the next run's requests; mid-month with plenty
// left, the cadence stands. The hold is read from the scheduler's own
// decision (its next due time), so the test waits for no clock; make
// tenero-month runs the same stack for 11 minutes and counts requests.
func TestTeneroMonthIsPacedOnTheRealStack(t *testing.T) {
	t.Parallel()
	t.Run("400 left two days before the end", func(t *testing.T) {
		t.Parallel()
		at := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
		m := newMonthStack(t, time.Second, at, 10_000, 9_600)
		var st workflows.Status
		eventually(t, 60*time.Second, "the first tenero run finished", func() bool {
			var err error
			st, err = statusOrErr(m.stack)
			return err == nil && st.LastTeneroResult != nil && !st.Tasks[pacer.TaskTenero].Running
		})
		res, task := st.LastTeneroResult, st.Tasks[pacer.TaskTenero]
		require.Empty(t, res.ErrorClass, res.Error)
		require.NotNil(t, res.MonthRemaining)
		require.NotNil(t, task.Pacing)
		left := *res.MonthRemaining
		require.Equal(t, 10_000-9_600-res.Requests, left)
		// The oracle: one request every (month's end − now) / left; the
		// seconds the test has run move it by a fraction of a second.
		end := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
		cost := min(task.Pacing.Batch, res.Wanted)
		want := time.Duration(cost) * (end.Sub(at) / time.Duration(left))
		require.Equal(t, pacing.HeldByMonth, task.Pacing.HeldBy)
		require.NotNil(t, task.NextDueAt)
		gap := task.NextDueAt.Sub(*task.LastRunAt)
		// The hold runs from the run's end: the gap from its start adds the
		// run's own length (seconds on a loaded CI box: 6.5 s once).
		took := time.Duration(res.DurationMs) * time.Millisecond
		require.InDelta(t, want.Seconds(), (gap - took).Seconds(), 5, "next due %s after the last run (which took %s), want the even pace's %s", gap, took, want)
		evidence.Check(t, "tenero.month_end.hold", gap.Seconds(), evidence.AtLeast, want.Seconds()-5, "s")
		require.Equal(t, res.Requests, m.requests(), "one run's requests so far")
		t.Logf("figures: 400 left two days before the month's end, cadence 1s: first run %d requests, next run of %d held %s (cadence 1s)",
			res.Requests, cost, gap.Round(time.Second))
	})
	t.Run("plenty left mid-month", func(t *testing.T) {
		t.Parallel()
		m := newMonthStack(t, time.Second, time.Date(2026, 11, 16, 0, 0, 0, 0, time.UTC), 100_000_000, 0)
		eventually(t, 60*time.Second, "tenero runs at its 1-second cadence", func() bool {
			st, err := statusOrErr(m.stack)
			return err == nil && st.Tasks[pacer.TaskTenero].Runs >= 3 && st.Tasks[pacer.TaskTenero].Pacing != nil
		})
		st := m.status(t)
		require.Empty(t, st.Tasks[pacer.TaskTenero].Pacing.HeldBy)
		require.Equal(t, "1s", st.Tasks[pacer.TaskTenero].Every)
	})
}
