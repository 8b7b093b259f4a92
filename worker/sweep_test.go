package worker_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/competition"
	"github.com/pacer-dev/pacer/internal/hiro"
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

// requireLedgerIsWorld holds the swaps table to the rows the world computes
// by its own means for the instant at: every row, exactly, none more.
func requireLedgerIsWorld(t *testing.T, st *store.Store, w *sim.World, at time.Time) {
	t.Helper()
	got, err := st.Swaps(context.Background())
	require.NoError(t, err)
	gotRows, gotRaw := comparable(t, got)
	wantRows, wantRaw := comparable(t, w.ExpectedSwaps(at))
	require.Equal(t, wantRows, gotRows)
	require.Equal(t, wantRaw, gotRaw)
}

// makeAllDue makes every agent due, as time passing would.
func makeAllDue(t *testing.T, st *store.Store) {
	t.Helper()
	_, err := st.Pool().Exec(context.Background(), `update agent_ingest set next_run_at = now()`)
	require.NoError(t, err)
}

// sweepUntilIdle runs the sweep through refreshNow until no agent is due,
// and returns the results of the runs.
func sweepUntilIdle(t *testing.T, s *stack) []pacer.SweepResult {
	t.Helper()
	var runs []pacer.SweepResult
	for range 20 {
		res, err := worker.RefreshNow(context.Background(), s.tc, s.sched.WorkflowID, pacer.TaskSweep)
		require.NoError(t, err)
		require.NotNil(t, res.Sweep)
		require.Empty(t, res.Sweep.ErrorClass, res.Sweep.Error)
		runs = append(runs, *res.Sweep)
		if res.Sweep.AgentsDue == 0 {
			return runs
		}
	}
	t.Fatalf("agents still due after 20 runs: %+v", runs[len(runs)-1])
	return nil
}

func TestSweepFindsExactlyTheWorldsSwaps(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newWorldStack(t, workflows.Config{})
	s.startWorker(t)
	_, err := worker.EnsureRunning(ctx, s.tc, s.sched)
	require.NoError(t, err)

	runs := sweepUntilIdle(t, s)
	requireLedgerIsWorld(t, s.st, s.sim.World(), worldAt)
	last := runs[len(runs)-1]
	require.Equal(t, len(s.sim.World().Agents()), last.Tiers["hot"]+last.Tiers["warm"]+last.Tiers["cold"])
	require.NotNil(t, last.NextDueAt, "the workflow is told when the next agent is due")
	require.Zero(t, last.LagSeconds)

	// Every agent has its cursor; a second pass over all of them inserts
	// nothing and asks Hiro about no known transaction: only what is still
	// pending or unreadable is looked up again.
	rows, err := s.st.ListAgentIngest(ctx, "")
	require.NoError(t, err)
	for _, a := range rows {
		require.NotNil(t, a.LastVisitAt, a.Address)
		require.Empty(t, a.VisitFrom, a.Address)
	}
	var pending int
	require.NoError(t, s.st.Pool().QueryRow(ctx, `select count(*) from pending_txs`).Scan(&pending))
	makeAllDue(t, s.st)
	s.sim.ResetStats()
	runs = sweepUntilIdle(t, s)
	inserted := 0
	for _, r := range runs {
		inserted += r.Inserted
	}
	require.Zero(t, inserted)
	// The world's fetch_fails transaction is tried three times by the client.
	require.LessOrEqual(t, s.sim.Stats().Routes[sim.HiroTxRoute].Total+s.sim.Stats().Routes[sim.HiroTxMultipleRoute].Total, 3*pending,
		"tx lookups only for what is pending")
	requireLedgerIsWorld(t, s.st, s.sim.World(), worldAt)

	st := s.status(t)
	require.NotNil(t, st.LastSweepResult)
	require.Zero(t, st.ConsecutiveFailures[pacer.TaskSweep])
}

// keepSweeping signals a sweep whenever none is running, as the workflow
// will once it wakes the sweep at its NextDueAt, until the returned stop.
func keepSweeping(s *stack) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(time.Second):
			}
			if st, err := statusOrErr(s); err == nil && !st.Tasks[pacer.TaskSweep].Running {
				_ = worker.Signal(context.Background(), s.tc, s.sched.WorkflowID, workflows.SignalRefresh, workflows.RefreshInput{Task: pacer.TaskSweep})
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

// clock is a simulator clock a test moves: it stands still at what Set
// says, or runs on from what Run says at the real clock's pace (so that
// rate-limit windows roll).
type clock struct {
	mu      sync.Mutex
	now     time.Time
	since   time.Time // real time when Run was called; zero: standing still
	running bool
	until   time.Time // a running clock stops here, if set
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.running {
		return c.now
	}
	now := c.now.Add(time.Since(c.since))
	if !c.until.IsZero() && now.After(c.until) {
		return c.until
	}
	return now
}

// Until makes the running clock stop at t, however late its reader
// looks, until Run or Set moves it again.
func (c *clock) Until(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.until = t
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now, c.running, c.until = t, false, time.Time{}
}

func (c *clock) Run(from time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now, c.since, c.running, c.until = from, time.Now(), true, time.Time{}
}

// TestSweepDoneWhenWorld is issue 9's real-stack world (sim.SweepFeatures):
// a busy agent makes 200 swaps between two visits, beside a 30-event swap,
// an STX → token → sBTC route through its agent and a fork transaction,
// all swept by `pacer worker` processes. The second visit of the busy agent
// is killed with SIGKILL three times mid-visit. The swaps table ends equal
// to the world's own rows: none missed, none extra, none changed.
// newFeatureWorldStack is a stack over issue 9's world (sim.SweepFeatures:
// a busy agent, a 30-event swap, a route through the agent, a fork) on an
// unlimited budget, its agents seeded and the scheduler running; clk moves
// the world's clock.
func newFeatureWorldStack(t *testing.T, cfg workflows.Config) (*stack, *clock, *sim.World) {
	t.Helper()
	s := newStack(t, cfg)
	clk := &clock{now: worldAt}
	unlimited := sim.Limits{PerMinute: 1 << 30, PerMonth: 1 << 30}
	s.sim = sim.New(sim.Config{Seed: 11, Now: clk.Now, Tenero: sim.TeneroConfig{Anonymous: unlimited},
		Hiro: sim.HiroConfig{Origin: worldAt, Anonymous: unlimited, Features: sim.SweepFeatures()}})
	hs := httptest.NewServer(s.sim)
	t.Cleanup(hs.Close)
	s.simU = hs.URL
	w := s.sim.World()
	require.NoError(t, w.Seed(context.Background(), s.st))
	_, err := worker.EnsureRunning(context.Background(), s.tc, s.sched)
	require.NoError(t, err)
	return s, clk, w
}

func TestSweepDoneWhenWorld(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bin := testenv.PacerBinary(t)
	s, clk, w := newFeatureWorldStack(t, workflows.Config{HeartbeatTimeout: pacer.Duration(5 * time.Second)})
	// Per-agent visits are what this test kills mid-way (reading the chain,
	// worker/discovery_test.go kills the tail's read).
	args := []string{"--hiro-base-url", s.simU, "--hiro-per-minute", "100000",
		"--competition-start", strconv.FormatInt(w.CompetitionStart().Unix(), 10), "--discovery", "agents"}

	cases := map[sim.TxCase][]sim.WorldTx{}
	for _, tx := range w.Transactions() {
		cases[tx.Case] = append(cases[tx.Case], tx)
	}
	require.Len(t, cases[sim.CaseBusy], 200)
	require.NotEmpty(t, cases[sim.CaseThroughAgent])
	require.NotEmpty(t, cases[sim.CaseFork])
	thirty := ""
	for _, tx := range cases[sim.CaseManyEvents] {
		if tx.Events == 30 {
			thirty = tx.TxID
		}
	}
	require.NotEmpty(t, thirty, "the world has a 30-event swap")
	busy := cases[sim.CaseBusy][0].Sender

	// The present: every agent's history, the 30-event swap, the route
	// through the agent and the fork included.
	first, _ := s.startProcess(t, bin, args...)
	sweepUntilIdle(t, s)
	requireLedgerIsWorld(t, s.st, w, clk.Now())
	require.NoError(t, first.Process.Kill())
	_ = first.Wait()
	for _, txid := range []string{thirty, cases[sim.CaseThroughAgent][0].TxID} {
		_, found, err := s.st.Swap(ctx, txid)
		require.NoError(t, err)
		require.True(t, found, "%s is in the ledger", txid)
	}
	for _, tx := range cases[sim.CaseFork] {
		_, found, err := s.st.Swap(ctx, tx.TxID)
		require.NoError(t, err)
		require.False(t, found, "the fork transaction %s is not", tx.TxID)
	}

	// Eleven minutes on, the busy agent has made its 200 swaps. Its visit
	// is slowed down so that a worker can be killed in the middle of it,
	// three times.
	clk.Set(worldAt.Add(11 * time.Minute))
	makeAllDue(t, s.st)
	// Every Hiro request is slowed while a worker runs, so that a kill
	// lands between two of a visit's: its listing pages (v3, 50 a page)
	// and its details (one tx/multiple request can carry all 200, so they
	// alone are too few). The worker dead, the check after each kill reads
	// Hiro at full speed (its lookups of ~180 missing swaps, slowed, took
	// a minute a round).
	slow := sim.Faults{PathPrefix: "/extended/", Slow: 1, SlowDelay: sim.Duration(300 * time.Millisecond)}
	lookups := func() int {
		routes := s.sim.Stats().Routes
		return routes[sim.HiroTxRoute].Total + routes[sim.HiroTxMultipleRoute].Total + routes[sim.HiroPrincipalTransactionsRoute].Total
	}
	for round := range 3 {
		require.NoError(t, s.sim.SetFaults(slow))
		before := lookups()
		proc, _ := s.startProcess(t, bin, args...)
		require.NoError(t, worker.Signal(ctx, s.tc, s.sched.WorkflowID, workflows.SignalRefresh, workflows.RefreshInput{Task: pacer.TaskSweep}))
		eventually(t, 90*time.Second, "the new worker is inside the busy agent's visit", func() bool { return lookups() >= before+3 })
		require.NoError(t, proc.Process.Kill()) // kill -9, mid-visit
		_ = proc.Wait()
		var have int
		require.NoError(t, s.st.Pool().QueryRow(ctx, `select count(*) from swaps where sender = $1`, busy).Scan(&have))
		t.Logf("round %d: killed with %d of the busy agent's swaps in the ledger", round, have)
		require.NoError(t, s.sim.SetFaults(sim.Faults{}))
		requireCursorBehindMissingSwaps(t, s, busy, clk.Now())
	}

	s.startProcess(t, bin, args...)
	want := len(w.ExpectedSwaps(clk.Now()))
	eventually(t, 3*time.Minute, "the ledger holds every swap of the world", func() bool {
		got, err := s.st.Swaps(ctx)
		if err != nil {
			return false
		}
		if st, err := statusOrErr(s); err == nil && !st.Tasks[pacer.TaskSweep].Running && len(got) < want {
			_ = worker.Signal(ctx, s.tc, s.sched.WorkflowID, workflows.SignalRefresh, workflows.RefreshInput{Task: pacer.TaskSweep})
		}
		return len(got) == want
	})
	requireLedgerIsWorld(t, s.st, w, clk.Now())
	row, _, err := s.st.AgentIngestRow(ctx, busy)
	require.NoError(t, err)
	require.Empty(t, row.VisitFrom, "the busy agent's visit is over")
	require.Nil(t, row.VisitTop)
}

// requireCursorBehindMissingSwaps checks the cursor's promise after a kill:
// the agent's cursor is never at or past a swap of its that is not in the
// ledger. Positions come from the simulated Hiro itself.
func requireCursorBehindMissingSwaps(t *testing.T, s *stack, agent string, at time.Time) {
	t.Helper()
	ctx := context.Background()
	row, found, err := s.st.AgentIngestRow(ctx, agent)
	require.NoError(t, err)
	require.True(t, found)
	if row.Cursor == nil {
		return
	}
	have := map[string]bool{}
	got, err := s.st.Swaps(ctx)
	require.NoError(t, err)
	for _, sw := range got {
		have[sw.TxID] = true
	}
	h := hiro.New(hiro.Config{BaseURL: s.simU})
	for _, sw := range s.sim.World().ExpectedSwaps(at) {
		if sw.Sender != agent || have[sw.TxID] {
			continue
		}
		tx, err := h.Tx(ctx, sw.TxID)
		require.NoError(t, err)
		pos := hiro.Position{BlockHeight: tx.BlockHeight, TxIndex: tx.TxIndex}
		require.Negative(t, row.Cursor.Compare(pos), "the cursor %s passed the missing swap %s at %s", row.Cursor, sw.TxID, pos)
	}
}
