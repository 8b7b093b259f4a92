package worker_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/activities"
	"github.com/pacer-dev/pacer/internal/catalog"
	"github.com/pacer-dev/pacer/internal/discovery"
	"github.com/pacer-dev/pacer/internal/logging"
	"github.com/pacer-dev/pacer/internal/sim"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/internal/testenv"
	"github.com/pacer-dev/pacer/worker"
	"github.com/pacer-dev/pacer/workflows"
)

var temporalHostPort string

func TestMain(m *testing.M) {
	srv, err := testenv.StartTemporal(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker integration tests need a Temporal dev server:", err)
		os.Exit(1)
	}
	temporalHostPort = srv.HostPort
	code := m.Run()
	srv.Stop()
	os.Exit(code)
}

// stack is one test's world: its own schema, simulator, workflow ID and
// task queue on the shared dev server.
type stack struct {
	dbURL string
	st    *store.Store
	tc    client.Client
	sim   *sim.Server
	simU  string
	sched worker.Scheduler
	log   *zap.Logger
}

func uniqueID(prefix string) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return prefix + "-" + hex.EncodeToString(b)
}

func newStack(t *testing.T, cfg workflows.Config) *stack {
	t.Helper()
	return newStackOn(t, temporalHostPort, cfg)
}

// newStackOn is newStack against the Temporal server at hostPort.
func newStackOn(t *testing.T, hostPort string, cfg workflows.Config) *stack {
	t.Helper()
	ctx := context.Background()
	s := &stack{dbURL: testenv.PostgresURL(t), log: zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))}
	var err error
	s.st, err = store.Open(ctx, s.dbURL)
	require.NoError(t, err)
	t.Cleanup(s.st.Close)
	require.NoError(t, s.st.Migrate(ctx))

	s.sim = sim.New(sim.Config{Seed: 7})
	hs := httptest.NewServer(s.sim)
	t.Cleanup(hs.Close)
	s.simU = hs.URL

	s.tc, err = client.Dial(client.Options{HostPort: hostPort, Logger: logging.Temporal(s.log)})
	require.NoError(t, err)
	t.Cleanup(s.tc.Close)

	id := uniqueID(strings.ReplaceAll(t.Name(), "/", "-"))
	s.sched = worker.Scheduler{WorkflowID: id, TaskQueue: id, Config: cfg}
	t.Cleanup(func() { _ = s.tc.TerminateWorkflow(context.Background(), id, "", "test over") })
	return s
}

func (s *stack) activities() *activities.Activities {
	return activities.New(activities.Options{
		Discovery: discovery.Config{Mode: "agents"}, // per-agent visits, as these tests were written for
		Store:     s.st, Logger: s.log,
		TeneroBaseURL: s.simU, HiroBaseURL: s.simU,
		HiroPerMinute:    10000, // the simulator's own limits are what tests exercise
		CompetitionStart: time.Unix(1778700600, 0),
		// The tests' webhook receivers are on loopback, which the guard
		// refuses otherwise (PACER_WEBHOOK_ALLOW_PRIVATE=1 in a process).
		WebhookAllowPrivate: true,
	})
}

// startWorker runs an in-process worker until the test ends or stop is called.
func (s *stack) startWorker(t *testing.T) (stop func()) {
	t.Helper()
	w := worker.New(s.tc, s.sched.TaskQueue, s.activities())
	require.NoError(t, w.Start())
	var once sync.Once
	stop = func() { once.Do(w.Stop) }
	t.Cleanup(stop)
	return stop
}

func (s *stack) status(t *testing.T) workflows.Status {
	t.Helper()
	st, err := worker.Status(context.Background(), s.tc, s.sched.WorkflowID)
	require.NoError(t, err)
	return st
}

// eventually polls cond until it holds or the timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, timeout, 100*time.Millisecond, what)
}

func pricedIDs(t *testing.T, st *store.Store) map[string]store.Price {
	t.Helper()
	all, err := st.AllPrices(context.Background())
	require.NoError(t, err)
	m := map[string]store.Price{}
	for _, p := range all {
		m[p.TokenID] = p
	}
	return m
}

func TestSchedulerEndToEnd(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStack(t, workflows.Config{})
	s.startWorker(t)

	// Two starters at once still make one run.
	var wg sync.WaitGroup
	runIDs := make([]string, 4)
	for i := range runIDs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id, err := worker.EnsureRunning(ctx, s.tc, s.sched)
			require.NoError(t, err)
			runIDs[i] = id
		}()
	}
	wg.Wait()
	for _, id := range runIDs {
		require.Equal(t, runIDs[0], id)
	}

	// The first run prices the static base (from Tenero) and the pegs (at 1).
	cat := catalog.Default()
	want := cat.TokenSet(nil)
	eventually(t, 30*time.Second, "token_prices holds the static base and the pegs", func() bool {
		return len(pricedIDs(t, s.st)) >= len(want)
	})
	prices := pricedIDs(t, s.st)
	for _, id := range want {
		p, ok := prices[id]
		require.True(t, ok, "no price for %s", id)
		if _, peg := cat.Peg(id); peg {
			require.Equal(t, store.SourcePeg, p.Source)
			require.Equal(t, "1", *p.PriceUSD)
		} else {
			require.Equal(t, store.SourceTenero, p.Source)
		}
	}

	eventually(t, 10*time.Second, "status reports the first run", func() bool {
		st := s.status(t)
		return st.LastTeneroResult != nil && !st.Tasks[pacer.TaskTenero].Running
	})
	st := s.status(t)
	require.Equal(t, s.sched.WorkflowID, st.WorkflowID)
	require.Equal(t, runIDs[0], st.RunID)
	require.Equal(t, len(want), st.LastTeneroResult.Succeeded)
	require.Equal(t, 0, st.ConsecutiveFailures[pacer.TaskTenero])
	require.NotNil(t, st.NextWakeAt)

	// refreshNow runs the task at once and answers with its result.
	res, err := worker.RefreshNow(ctx, s.tc, s.sched.WorkflowID, pacer.TaskAll)
	require.NoError(t, err)
	require.NotNil(t, res.Tenero)
	require.Equal(t, len(want), res.Tenero.TokensAttempted)
	require.Equal(t, len(want), res.Tenero.Unchanged+res.Tenero.Written)
	_, err = worker.RefreshNow(ctx, s.tc, s.sched.WorkflowID, "prices")
	require.ErrorContains(t, err, `unknown task "prices"`)

	// Pause and resume through signals, as the temporal CLI sends them.
	require.NoError(t, worker.Signal(ctx, s.tc, s.sched.WorkflowID, workflows.SignalPause, workflows.PauseInput{For: "10m"}))
	eventually(t, 5*time.Second, "paused", func() bool { return s.status(t).PausedUntil != nil })
	require.NoError(t, worker.Signal(ctx, s.tc, s.sched.WorkflowID, workflows.SignalPause, map[string]any{"for": 10}))
	require.NoError(t, worker.Signal(ctx, s.tc, s.sched.WorkflowID, workflows.SignalResume, nil))
	eventually(t, 5*time.Second, "resumed", func() bool { return s.status(t).PausedUntil == nil })
}

func TestKeepRunningReplacesTerminatedRun(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := newStack(t, workflows.Config{})
	s.startWorker(t)
	s.sched.KeepAliveEvery = 200 * time.Millisecond
	go worker.KeepRunning(ctx, s.tc, s.sched, s.log)

	var first string
	eventually(t, 10*time.Second, "scheduler started", func() bool {
		st, err := worker.Status(ctx, s.tc, s.sched.WorkflowID)
		first = st.RunID
		return err == nil
	})
	require.NoError(t, s.tc.TerminateWorkflow(ctx, s.sched.WorkflowID, first, "operator mistake"))
	eventually(t, 10*time.Second, "a new run replaced the terminated one", func() bool {
		st, err := worker.Status(ctx, s.tc, s.sched.WorkflowID)
		return err == nil && st.RunID != first
	})
}

func TestContinueAsNewKeepsStateAndSignals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// A tiny history ceiling makes every few runs hand over to a new run.
	s := newStack(t, workflows.Config{MaxHistoryEvents: 40})
	s.startWorker(t)
	_, err := worker.EnsureRunning(ctx, s.tc, s.sched)
	require.NoError(t, err)

	require.NoError(t, worker.Signal(ctx, s.tc, s.sched.WorkflowID, workflows.SignalPause, workflows.PauseInput{For: "1h"}))
	var runs int
	for i := 0; i < 8; i++ {
		res, err := worker.RefreshNow(ctx, s.tc, s.sched.WorkflowID, pacer.TaskTenero)
		require.NoError(t, err)
		require.NotNil(t, res.Tenero)
		runs++
		// Signals sent in a burst while runs hand over must all land.
		require.NoError(t, worker.Signal(ctx, s.tc, s.sched.WorkflowID, workflows.SignalRefresh, workflows.RefreshInput{Task: "tenero"}))
	}
	// A refresh signal that arrives while one is pending merges with it, so
	// the bursts guarantee at least one run beyond the updates' own.
	eventually(t, 30*time.Second, "the last refresh ran and a new generation holds the state", func() bool {
		st := s.status(t)
		return st.Generation >= 2 && st.Tasks[pacer.TaskTenero].Runs >= int64(runs+1) && !st.Tasks[pacer.TaskTenero].Running &&
			!st.Tasks[pacer.TaskTenero].Requested
	})
	st := s.status(t)
	require.NotNil(t, st.PausedUntil, "the pause survived continue-as-new")
	require.NotNil(t, st.LastTeneroResult)
	require.Less(t, st.HistoryLength, 200)
}

func statusOrErr(s *stack) (workflows.Status, error) {
	return worker.Status(context.Background(), s.tc, s.sched.WorkflowID)
}
