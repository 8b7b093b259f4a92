package worker_test

import (
	"context"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/discovery"
	"github.com/pacer-dev/pacer/internal/sim"
	"github.com/pacer-dev/pacer/internal/testenv"
	"github.com/pacer-dev/pacer/worker"
	"github.com/pacer-dev/pacer/workflows"
)

// newChainWorldStack is a stack over a world with strangers' traffic on
// the chain (40,000 calls a day, losing forks, pages that shift), the
// world's agents seeded and the scheduler running with a short sweep
// cadence; clk moves the world's clock. Its workers read the chain's tail.
func newChainWorldStack(t *testing.T) (*stack, *clock, *sim.World, []string) {
	t.Helper()
	s := newStack(t, workflows.Config{SweepEvery: pacer.Duration(2 * time.Second), HeartbeatTimeout: pacer.Duration(5 * time.Second)})
	clk := &clock{now: worldAt}
	unlimited := sim.Limits{PerMinute: 1 << 30, PerMonth: 1 << 30}
	s.sim = sim.New(sim.Config{Seed: 18, Now: clk.Now, Tenero: sim.TeneroConfig{Anonymous: unlimited},
		Hiro: sim.HiroConfig{Origin: worldAt, Agents: 12, Anonymous: unlimited, Features: sim.SweepFeatures(),
			Chain: sim.ChainConfig{Volume: 40_000}}})
	w := serveWorld(t, s)
	args := []string{"--hiro-base-url", s.simU, "--hiro-per-minute", "100000",
		"--competition-start", strconv.FormatInt(w.CompetitionStart().Unix(), 10),
		"--discovery", "tail", "--tail-every", "1s", "--sweep-every", "2s"}
	return s, clk, w, args
}

// serveWorld serves s.sim, seeds its world's agents into Postgres and
// starts the scheduler; it returns the world.
func serveWorld(t *testing.T, s *stack) *sim.World {
	t.Helper()
	hs := httptest.NewServer(s.sim)
	t.Cleanup(hs.Close)
	s.simU = hs.URL
	w := s.sim.World()
	require.NoError(t, w.Seed(context.Background(), s.st))
	_, err := worker.EnsureRunning(context.Background(), s.tc, s.sched)
	require.NoError(t, err)
	return w
}

// tailRow reads the tail's row.
func tailRow(t *testing.T, s *stack) (row struct {
	found, scanning bool
	height          int64
}) {
	t.Helper()
	rd, found, err := s.st.DiscoveryReader(context.Background(), discovery.ReaderTail)
	require.NoError(t, err)
	row.found, row.scanning = found, rd.Scan.Started()
	if rd.Position != nil {
		row.height = rd.Position.BlockHeight
	}
	return row
}

// waitForLedger waits until the swaps table holds as many rows as the
// world's at clk's time, then holds it to them exactly.
func waitForLedger(t *testing.T, s *stack, w *sim.World, at time.Time, within time.Duration) {
	t.Helper()
	want := len(w.ExpectedSwaps(at))
	eventually(t, within, "the ledger holds every swap of the world", func() bool {
		got, err := s.st.Swaps(context.Background())
		return err == nil && len(got) >= want
	})
	requireLedgerIsWorld(t, s.st, w, at)
}

// TestTailSurvivesKillsAndForks is issue 18's fault case on the real
// stack: `pacer worker` processes read the chain's tail (the agents are
// visited once, for their history); two hours of a busy chain arrive at
// once, and the worker is killed with SIGKILL three times in the middle of
// reading them. The swaps table ends exactly the world's: 0 lost, 0
// doubled, and no transaction of a losing fork is a row.
func TestTailSurvivesKillsAndForks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bin := testenv.PacerBinary(t)
	s, clk, w, args := newChainWorldStack(t)

	first, _ := s.startProcess(t, bin, args...)
	waitForLedger(t, s, w, clk.Now(), 2*time.Minute)
	eventually(t, time.Minute, "the tail has begun at the chain's head", func() bool { return tailRow(t, s).found })
	require.NoError(t, first.Process.Kill())
	_ = first.Wait()

	// Two hours on (the world's arrivals are over by then): thousands of
	// strangers' calls and the agents' new swaps, read slowly enough that a
	// kill lands inside the read.
	at := worldAt.Add(3 * time.Hour)
	clk.Set(at)
	require.NoError(t, s.sim.SetFaults(sim.Faults{PathPrefix: "/extended/v1/tx", Slow: 1, SlowDelay: sim.Duration(60 * time.Millisecond)}))
	swaps := func() int {
		var n int
		require.NoError(t, s.st.Pool().QueryRow(ctx, `select count(*) from swaps`).Scan(&n))
		return n
	}
	last := swaps()
	for round := range 3 {
		proc, _ := s.startProcess(t, bin, args...)
		eventually(t, 90*time.Second, "the worker is inside the tail's read, past some of its swaps", func() bool {
			return tailRow(t, s).scanning && swaps() > last
		})
		require.NoError(t, proc.Process.Kill()) // kill -9, mid-tail
		_ = proc.Wait()
		last = swaps()
		t.Logf("round %d: killed mid-tail with %d of %d swaps in the ledger", round, last, len(w.ExpectedSwaps(at)))
	}
	require.NoError(t, s.sim.SetFaults(sim.Faults{}))
	s.startProcess(t, bin, args...)
	waitForLedger(t, s, w, at, 3*time.Minute)
	for _, tx := range w.Transactions() {
		if tx.Case != sim.CaseFork {
			continue
		}
		_, found, err := s.st.Swap(ctx, tx.TxID)
		require.NoError(t, err)
		require.False(t, found, "the losing fork's transaction %s is not a row", tx.TxID)
	}
	eventually(t, time.Minute, "the status reports the tail", func() bool {
		st, err := statusOrErr(s)
		return err == nil && st.LastSweepResult != nil && st.LastSweepResult.Discovery == "tail" &&
			st.LastSweepResult.Readers["tail"].Position != ""
	})
	// The memo holding every reader's report stays under the size at which
	// pacer's clients warn (the SDK's default would warn at each change).
	d, err := s.tc.DescribeWorkflowExecution(ctx, s.sched.WorkflowID, "")
	require.NoError(t, err)
	size := worker.MemoSize(d.GetWorkflowExecutionInfo().GetMemo().GetFields())
	t.Logf("memo: %d bytes", size)
	require.Less(t, size, worker.MemoSizeWarning)
}

// TestTailGapAfterHiroOutageIsFilled: Hiro answers nothing for a while on
// a busy chain; when it is back the tail is further behind than its page
// bound, reports the gap and moves on; the reconciler fills it, 0 missed.
func TestTailGapAfterHiroOutageIsFilled(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bin := testenv.PacerBinary(t)
	s, clk, w, args := newChainWorldStack(t)
	args = append(args, "--tail-max-pages", "5", "--reconcile-every", "20s")
	s.startProcess(t, bin, args...)
	waitForLedger(t, s, w, clk.Now(), 2*time.Minute)
	eventually(t, time.Minute, "the tail has begun", func() bool { return tailRow(t, s).found })

	failedBefore := hiroServerErrors(s.sim.Stats())
	require.NoError(t, s.sim.SetFaults(sim.Faults{PathPrefix: "/extended/", ServerError: 1}))
	at := worldAt.Add(3 * time.Hour) // Hiro down while three hours of the chain pass
	clk.Set(at)
	// Down until pacer has met it several times (its reads failing), not
	// for a span of wall time.
	eventually(t, time.Minute, "pacer met Hiro down", func() bool { return hiroServerErrors(s.sim.Stats()) >= failedBefore+3 })
	require.NoError(t, s.sim.SetFaults(sim.Faults{}))

	eventually(t, 2*time.Minute, "the gap is reported", func() bool {
		var n int
		return s.st.Pool().QueryRow(ctx, `select count(*) from discovery_gaps where reader = 'tail'`).Scan(&n) == nil && n > 0
	})
	waitForLedger(t, s, w, at, 3*time.Minute)
	eventually(t, 2*time.Minute, "the gap is filled", func() bool {
		var open int
		return s.st.Pool().QueryRow(ctx, `select count(*) from discovery_gaps where filled_at is null`).Scan(&open) == nil && open == 0
	})
}

// TestHintedAgentIsVisitedWithinSeconds: a hint (what the fast path and a
// chainhook delivery send) gets its agent visited within 10 s while the
// sweep reads the tail.
func TestHintedAgentIsVisitedWithinSeconds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bin := testenv.PacerBinary(t)
	s, clk, w, args := newChainWorldStack(t)
	s.startProcess(t, bin, args...)
	waitForLedger(t, s, w, clk.Now(), 2*time.Minute)

	agent := w.Transactions()[0].Sender
	before, _, err := s.st.AgentIngestRow(ctx, agent)
	require.NoError(t, err)
	for range 3 {
		hinted := time.Now()
		found, err := s.st.HintAgent(ctx, agent)
		require.NoError(t, err)
		require.True(t, found)
		eventually(t, 10*time.Second, "the hinted agent is visited", func() bool {
			row, _, err := s.st.AgentIngestRow(ctx, agent)
			return err == nil && row.Visits > before.Visits
		})
		t.Logf("visited %s after the hint", time.Since(hinted).Round(100*time.Millisecond))
		before, _, err = s.st.AgentIngestRow(ctx, agent)
		require.NoError(t, err)
	}
}

// hiroServerErrors counts the simulator's 5xx answers on every route.
func hiroServerErrors(st sim.Stats) int {
	n := 0
	for _, r := range st.Routes {
		for status, c := range r.ByStatus {
			if status >= 500 && status != sim.StatusClientClosed {
				n += c
			}
		}
	}
	return n
}
