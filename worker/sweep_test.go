package worker_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/competition"
	"github.com/pacer-dev/pacer/internal/sim"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/internal/testenv"
	"github.com/pacer-dev/pacer/worker"
	"github.com/pacer-dev/pacer/workflows"
)

// worldAt is the fixed instant the sweep tests' world stands still at, so
// the expected ledger cannot move under a test.
var worldAt = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

// newWorldStack is a stack whose simulator serves a generated world frozen
// at worldAt, with the world's agents and claims in Postgres.
func newWorldStack(t *testing.T, cfg workflows.Config) *stack {
	t.Helper()
	s := newStack(t, cfg)
	// A frozen clock never opens a new rate-limit window, so the limits are
	// set out of reach here; the budget and 429 paths have their own tests.
	unlimited := sim.Limits{PerMinute: 1 << 30, PerMonth: 1 << 30}
	s.sim = sim.New(sim.Config{Seed: 11, Now: func() time.Time { return worldAt },
		Tenero: sim.TeneroConfig{Anonymous: unlimited},
		Hiro:   sim.HiroConfig{Origin: worldAt, Agents: 24, Anonymous: unlimited}})
	hs := httptest.NewServer(s.sim)
	t.Cleanup(hs.Close)
	s.simU = hs.URL
	require.NoError(t, s.sim.World().Seed(context.Background(), s.st))
	return s
}

// comparable strips what the database rewrites (jsonb formatting) so rows
// compare field by field; raw_event_json is compared as JSON separately.
func comparable(t *testing.T, swaps []competition.Swap) ([]competition.Swap, map[string]any) {
	t.Helper()
	raws := map[string]any{}
	out := make([]competition.Swap, len(swaps))
	for i, sw := range swaps {
		var v any
		require.NoError(t, json.Unmarshal(sw.RawEventJSON, &v))
		raws[sw.TxID] = v
		sw.RawEventJSON = nil
		out[i] = sw
	}
	return out, raws
}

func requireLedgerIsWorld(t *testing.T, st *store.Store, w *sim.World) {
	t.Helper()
	got, err := st.Swaps(context.Background())
	require.NoError(t, err)
	gotRows, gotRaw := comparable(t, got)
	wantRows, wantRaw := comparable(t, w.ExpectedSwaps(worldAt))
	require.Equal(t, wantRows, gotRows)
	require.Equal(t, wantRaw, gotRaw)
}

func TestSweepFindsExactlyTheWorldsSwaps(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newWorldStack(t, workflows.Config{})
	s.startWorker(t)
	_, err := worker.EnsureRunning(ctx, s.tc, s.sched)
	require.NoError(t, err)

	res, err := worker.RefreshNow(ctx, s.tc, s.sched.WorkflowID, pacer.TaskSweep)
	require.NoError(t, err)
	first := res.Sweep
	require.NotNil(t, first)
	require.Empty(t, first.ErrorClass, first.Error)
	requireLedgerIsWorld(t, s.st, s.sim.World())

	// The first run may have been the scheduler's own, started before the
	// refresh: either way the ledger is complete, and the summary of a run
	// on an empty ledger must match the world's outcomes.
	outcomes := s.sim.World().ExpectedOutcomes(worldAt)
	want := pacer.SweepResult{RejectionReasons: competition.RejectionReasons(nil)}
	for _, o := range outcomes {
		if !o.Found {
			continue
		}
		want.Found++
		switch o.Status {
		case competition.StatusInserted:
			want.Inserted++
		case competition.StatusPending:
			want.Pending++
		case competition.StatusRejected:
			want.Rejected++
			want.RejectionReasons[string(o.Reason)]++
		}
	}
	require.Equal(t, len(s.sim.World().Agents()), first.Scanned+first.HiroErrors)
	require.Equal(t, want.Found, first.Found)
	require.Equal(t, want.Pending, first.Pending)
	require.Equal(t, want.Rejected, first.Rejected)
	require.Equal(t, want.RejectionReasons, first.RejectionReasons)
	require.Equal(t, want.Inserted, first.Inserted+first.AlreadyKnown)
	require.Nil(t, first.Cursor, "one page holds every agent: the walk wraps")

	// A second pass inserts nothing and asks Hiro about no known swap.
	s.sim.ResetStats()
	res, err = worker.RefreshNow(ctx, s.tc, s.sched.WorkflowID, pacer.TaskSweep)
	require.NoError(t, err)
	second := res.Sweep
	require.Zero(t, second.Inserted)
	require.Equal(t, want.Inserted, second.AlreadyKnown)
	// Each unknown tx is looked up once; the one whose lookup fails with a
	// 5xx is tried three times by the Hiro client.
	wantLookups := want.Found - want.Inserted + 2*want.RejectionReasons[string(competition.ReasonTxFetchFailed)]
	require.Equal(t, wantLookups, s.sim.Stats().Routes[sim.HiroTxRoute].Total, "tx lookups only for swaps not yet known")
	requireLedgerIsWorld(t, s.st, s.sim.World())

	st := s.status(t)
	require.NotNil(t, st.LastSweepResult)
	require.NotNil(t, st.LastSweepRunAt)
	require.Zero(t, st.ConsecutiveFailures[pacer.TaskSweep])
}

func TestSweepKilledMidPageLosesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bin := testenv.PacerBinary(t)
	// Pages of 5 agents: the cursor moves several times per walk. The test
	// starts the scheduler itself so that its configuration is the one kept.
	s := newWorldStack(t, workflows.Config{SweepPageSize: 5})
	_, err := worker.EnsureRunning(ctx, s.tc, s.sched)
	require.NoError(t, err)
	args := []string{"--hiro-base-url", s.simU, "--hiro-per-minute", "10000", "--competition-start", "1778700600"}
	listed := func() int { return s.sim.Stats().Routes[sim.HiroAddressTransactionsRoute].Total }

	// Slow Hiro keeps a page in flight long enough to kill its worker.
	require.NoError(t, s.sim.SetFaults(sim.Faults{PathPrefix: "/extended/", Slow: 1, SlowDelay: sim.Duration(200 * time.Millisecond)}))
	for round := range 3 {
		before := listed()
		proc, _ := s.startProcess(t, bin, args...)
		require.NoError(t, worker.Signal(ctx, s.tc, s.sched.WorkflowID, workflows.SignalRefresh, workflows.RefreshInput{Task: pacer.TaskSweep}))
		eventually(t, 60*time.Second, "the new worker is inside a page", func() bool { return listed() >= before+2+round })
		require.NoError(t, proc.Process.Kill()) // kill -9, mid-page
		_ = proc.Wait()

		// The cursor never points past an agent whose swaps are not all in.
		if cursor, ok, err := s.st.GetState(ctx, store.StateSweepCursor); ok {
			require.NoError(t, err)
			requireAgentsDone(t, s, cursor)
		}
	}

	require.NoError(t, s.sim.SetFaults(sim.Faults{}))
	s.startProcess(t, bin, args...)
	want := len(s.sim.World().ExpectedSwaps(worldAt))
	eventually(t, 3*time.Minute, "the ledger holds every swap of the world", func() bool {
		got, err := s.st.Swaps(ctx)
		if err != nil {
			return false
		}
		if st, err := statusOrErr(s); err == nil && !st.Tasks[pacer.TaskSweep].Running && len(got) < want {
			// Walk on to the next page without waiting for the cadence.
			_ = worker.Signal(ctx, s.tc, s.sched.WorkflowID, workflows.SignalRefresh, workflows.RefreshInput{Task: pacer.TaskSweep})
		}
		return len(got) == want
	})
	requireLedgerIsWorld(t, s.st, s.sim.World())
}

// requireAgentsDone checks that every agent up to and including cursor
// has all its expected swaps in the ledger.
func requireAgentsDone(t *testing.T, s *stack, cursor string) {
	t.Helper()
	got, err := s.st.Swaps(context.Background())
	require.NoError(t, err)
	have := map[string]bool{}
	for _, sw := range got {
		have[sw.TxID] = true
	}
	listedUnder := map[string][]string{}
	for _, tx := range s.sim.World().Transactions() {
		listedUnder[tx.TxID] = tx.ListedUnder
	}
	for _, sw := range s.sim.World().ExpectedSwaps(worldAt) {
		for _, agent := range listedUnder[sw.TxID] {
			if agent <= cursor {
				require.True(t, have[sw.TxID], "cursor %s is past agent %s whose swap %s is missing", cursor, agent, sw.TxID)
			}
		}
	}
}
