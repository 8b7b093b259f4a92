package activities_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/activities"
	"github.com/pacer-dev/pacer/internal/budget"
	"github.com/pacer-dev/pacer/internal/discovery"
	"github.com/pacer-dev/pacer/internal/sim"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/internal/testenv"
)

// manualMonth is the simulated Hiro's month quota: far less than one sweep
// of its 10 agents needs, so an explicit run spends it all.
const manualMonth = 6

// An explicit refresh is a real run under month pacing (SPEC §3.1, issue
// 19): with the Hiro month paced out (6 left and days of the month to
// go, so the sweep lane's pace credit is a few thousandths of a request),
// a scheduled run sends nothing, while an explicit run on the same shared
// budget spends the month's remaining count, reserve included, and no
// more, and says what it spent and why it stopped.
func TestExplicitSweepSpendsThePacedOutMonth(t *testing.T) {
	t.Parallel()
	for _, mode := range []discovery.Mode{discovery.ModeAgents, discovery.ModeTail} {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			st := testenv.Store(t)

			w := sim.New(sim.Config{Seed: 11, Now: func() time.Time { return faultAt },
				Hiro: sim.HiroConfig{Origin: faultAt, Agents: 10, Anonymous: sim.Limits{PerMinute: 1 << 30, PerMonth: manualMonth}}})
			require.NoError(t, w.World().Seed(ctx, st))
			hs := httptest.NewServer(w)
			t.Cleanup(hs.Close)
			acts := wireActivities(st, store.UpstreamHiro, hs.URL, zaptest.NewLogger(t, zaptest.Level(zap.ErrorLevel)), 0,
				budget.Config{PerMinute: 1 << 20}, activities.SweepMaxWait)
			acts.Discovery.Mode = mode

			// What an earlier run learned from Hiro's headers: 6 left, of
			// a month spent evenly so far (nothing banked).
			start, end := budget.MonthOf(time.Now())
			limit := int64(float64(manualMonth)*end.Sub(start).Seconds()/time.Until(end).Seconds()) + 1
			require.NoError(t, acts.Budget.Observe(ctx, budget.LaneSweep, budget.Observation{Status: 200, Cost: 1,
				MonthLimit: new64(limit), MonthRemaining: new64(manualMonth)}))

			scheduled, err := runActivity[pacer.SweepResult](t, acts, acts.Sweep, pacer.SweepInput{})
			require.NoError(t, err)
			require.Zero(t, scheduled.Requests, "the month's pace gives a scheduled run nothing")
			require.Zero(t, scheduled.Scanned)
			require.Equal(t, budget.WhyMonth, scheduled.StoppedBy)
			require.Zero(t, w.Stats().Total, "no request reached Hiro")

			occ := pacer.Occurrence{Task: pacer.TaskSweep, NominalAt: time.Now().UTC(), Manual: true}
			manual, err := runActivity[pacer.SweepResult](t, acts, acts.Sweep, pacer.SweepInput{Occurrence: occ})
			require.NoError(t, err)
			require.Equal(t, budget.WhyMonth, manual.StoppedBy, "it stopped when the month was spent")
			require.Equal(t, manualMonth, manual.Requests, "it spent the month, reserve included, and no more")
			require.Equal(t, manualMonth, w.Stats().Total)
			require.Zero(t, manual.HiroErrors, "Hiro never refused it")
			require.NotNil(t, manual.MonthRemaining)
			require.Zero(t, *manual.MonthRemaining)
			if mode == discovery.ModeAgents {
				require.Positive(t, manual.Scanned, "it visited agents")
			} else {
				require.Positive(t, manual.Readers[discovery.ReaderTail].Pages, "it read the tail")
			}

			// The month is spent: the next explicit run sends nothing.
			occ.NominalAt = occ.NominalAt.Add(time.Second)
			again, err := runActivity[pacer.SweepResult](t, acts, acts.Sweep, pacer.SweepInput{Occurrence: occ})
			require.NoError(t, err)
			require.Zero(t, again.Requests)
			require.Equal(t, budget.WhyMonth, again.StoppedBy)
			require.Equal(t, manualMonth, w.Stats().Total)
		})
	}
}

func new64(n int64) *int64 { return &n }
