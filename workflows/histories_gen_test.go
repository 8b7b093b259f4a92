//go:build histories

// This file records the histories that replay_test.go replays. It needs a
// Temporal dev server and runs only with the "histories" build tag:
//
//	make histories
//
// Each recording is named after the revision that made it (historyPrefix):
// a released revision's files are never rewritten, since they are what
// prove that a change replays the runs it finds in flight; a new revision
// adds its own beside them, and retiring a revision deletes its files
// (docs/revisions.md). `make histories` records only the missing files.
package workflows_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/cron"
	"github.com/pacer-dev/pacer/internal/schedule"
	"github.com/pacer-dev/pacer/internal/testenv"
	"github.com/pacer-dev/pacer/worker"
	"github.com/pacer-dev/pacer/workflows"
)

// historyPrefix names the recordings of today's revision.
var historyPrefix = fmt.Sprintf("testdata/histories/r%d-", workflows.RevisionCurrent)

// historySums is the recorded histories' manifest (replay_test.go).
const historySums = "testdata/histories/SHA256SUMS"

// badHistory is the basic recording with its first tenero activity
// renamed: the replay test's history that must fail.
const badHistory = "testdata/nondeterministic/renamed-activity.json"

// failRollups makes that many rollup attempts fail (transport) before
// they succeed again.
var failRollups atomic.Int32

// scriptedTenero answers each call from a script, then succeeds.
type scriptedTenero struct{ calls atomic.Int32 }

func (s *scriptedTenero) run(ctx context.Context, _ pacer.TeneroInput) (pacer.TeneroResult, error) {
	ok := pacer.TeneroResult{Run: pacer.Run{StartedAt: activity.GetInfo(ctx).StartedTime, Requests: 3},
		TokensAttempted: 8, Succeeded: 8, Pegged: 5, Wanted: 3}
	switch s.calls.Add(1) {
	case 3: // minute quota spent mid-run
		res := pacer.TeneroResult{TokensAttempted: 2, Succeeded: 2, Run: pacer.Run{RateLimited: true, RateLimitBackoffMs: 3000}}
		return res, temporal.NewApplicationErrorWithOptions("quota exhausted", string(pacer.ClassRateLimit),
			temporal.ApplicationErrorOptions{NonRetryable: true, Details: []any{res}})
	case 5: // upstream down
		return pacer.TeneroResult{}, temporal.NewNonRetryableApplicationError("502 from tenero", string(pacer.ClassServerError), nil)
	}
	return ok, nil
}

// failingTenero fails every run: a long failure streak. A permanent
// error says nothing of the upstream's load, so pacing keeps the cadence
// and the streak runs into the breaker.
func failingTenero(context.Context, pacer.TeneroInput) (pacer.TeneroResult, error) {
	return pacer.TeneroResult{}, temporal.NewNonRetryableApplicationError("410 gone", string(pacer.ClassPermanent), nil)
}

// sweep says when its next agent is due: the workflow waits for it.
func sweep(ctx context.Context, _ pacer.SweepInput) (pacer.SweepResult, error) {
	next := activity.GetInfo(ctx).StartedTime.Add(4 * time.Second)
	return pacer.SweepResult{Scanned: 3, Found: 2, Inserted: 1, Pending: 1, AgentsDue: 0, NextDueAt: &next}, nil
}

// rollup succeeds at once; the workflow then wakes deliver.
func rollup(ctx context.Context, in pacer.RollupInput) (pacer.RollupResult, error) {
	if failRollups.Add(-1) >= 0 {
		return pacer.RollupResult{}, temporal.NewApplicationError("rollups table unavailable", string(pacer.ClassTransport))
	}
	return pacer.RollupResult{Run: pacer.Run{StartedAt: activity.GetInfo(ctx).StartedTime}, Rows: 4,
		Hours: []time.Time{in.Occurrence.NominalAt.Truncate(time.Hour)}}, nil
}

// deliver has a retry pending 2 s ahead on every other run, nothing
// pending on the others: the task alternates between due and dormant.
type scriptedDeliver struct{ calls atomic.Int32 }

func (d *scriptedDeliver) run(ctx context.Context, _ pacer.DeliverInput) (pacer.DeliverResult, error) {
	if d.calls.Add(1)%2 == 1 {
		next := activity.GetInfo(ctx).StartedTime.Add(2 * time.Second)
		return pacer.DeliverResult{Emitted: 2, Attempted: 2, Delivered: 1, Failed: 1, Retrying: 1, NextDueAt: &next}, nil
	}
	return pacer.DeliverResult{Attempted: 1, Delivered: 1}, nil
}

// registry adds an agent on its first read, answers unchanged on the
// next, and fails on the third: the sweep is hinted once.
type scriptedRegistry struct{ calls atomic.Int32 }

func (r *scriptedRegistry) run(ctx context.Context, _ pacer.RegistryInput) (pacer.RegistryResult, error) {
	switch r.calls.Add(1) % 3 {
	case 1:
		return pacer.RegistryResult{Run: pacer.Run{StartedAt: activity.GetInfo(ctx).StartedTime}, Pages: 1, Agents: 1, Added: 1}, nil
	case 2:
		return pacer.RegistryResult{NotModified: true, Pages: 1}, nil
	}
	return pacer.RegistryResult{}, temporal.NewApplicationError("registry answered 503", string(pacer.ClassServerError))
}

// scriptedFinalize finds no round on its first run; after the refresh
// that says one was added it waits out the round's grace (2 s), then
// completeThrough behind its end for one run a second on, then
// finalizes it and has nothing left.
type scriptedFinalize struct{ calls atomic.Int32 }

func (f *scriptedFinalize) run(ctx context.Context, _ pacer.FinalizeInput) (pacer.FinalizeResult, error) {
	now := activity.GetInfo(ctx).StartedTime
	next := now.Add(2 * time.Second)
	switch f.calls.Add(1) {
	case 1:
		return pacer.FinalizeResult{}, nil
	case 2:
		return pacer.FinalizeResult{NextDueAt: &next, Waiting: &pacer.RoundWait{Round: "r1", Reason: pacer.WaitGrace, BehindSeconds: 2}}, nil
	case 3:
		next = now.Add(time.Second)
		return pacer.FinalizeResult{NextDueAt: &next, Waiting: &pacer.RoundWait{Round: "r1", Reason: pacer.WaitCompleteThrough, BehindSeconds: 30}}, nil
	case 4:
		return pacer.FinalizeResult{}, temporal.NewApplicationError("database down", string(pacer.ClassTransport))
	}
	return pacer.FinalizeResult{Finalized: []string{"r1"}}, nil
}

// chainhook finds the hook missing on its first run, then as it should be.
type scriptedChainhook struct{ calls atomic.Int32 }

func (c *scriptedChainhook) run(context.Context, pacer.ChainhookInput) (pacer.ChainhookResult, error) {
	if c.calls.Add(1) == 1 {
		return pacer.ChainhookResult{Action: "created", HookUUID: "hook-1", HookStatus: "streaming"}, nil
	}
	return pacer.ChainhookResult{Action: "none", HookUUID: "hook-1", HookStatus: "streaming", LagBlocks: 1}, nil
}

// recorder is a dev server with a worker whose activities a test chooses.
type recorder struct {
	t *testing.T
	c client.Client
}

func newRecorder(t *testing.T, queue string, tenero any) *recorder {
	t.Helper()
	ctx := context.Background()
	srv, err := testenv.StartTemporal(ctx)
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	c, err := client.Dial(client.Options{HostPort: srv.HostPort})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	w := sdkworker.New(c, queue, sdkworker.Options{})
	workflows.Register(w)
	w.RegisterActivityWithOptions(tenero, activity.RegisterOptions{Name: workflows.ActivityRefreshTenero})
	w.RegisterActivityWithOptions(sweep, activity.RegisterOptions{Name: workflows.ActivitySweep})
	w.RegisterActivityWithOptions(rollup, activity.RegisterOptions{Name: workflows.ActivityRollup})
	w.RegisterActivityWithOptions((&scriptedDeliver{}).run, activity.RegisterOptions{Name: workflows.ActivityDeliver})
	w.RegisterActivityWithOptions((&scriptedRegistry{}).run, activity.RegisterOptions{Name: workflows.ActivityRegistry})
	w.RegisterActivityWithOptions((&scriptedFinalize{}).run, activity.RegisterOptions{Name: workflows.ActivityFinalize})
	w.RegisterActivityWithOptions((&scriptedChainhook{}).run, activity.RegisterOptions{Name: workflows.ActivityChainhook})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	return &recorder{t: t, c: c}
}

func (r *recorder) start(id, queue string, cfg workflows.Config) client.WorkflowRun {
	return r.startWith(id, queue, workflows.SchedulerInput{Config: cfg})
}

func (r *recorder) startWith(id, queue string, in workflows.SchedulerInput) client.WorkflowRun {
	run, err := r.c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: id, TaskQueue: queue},
		workflows.WorkflowType, in)
	require.NoError(r.t, err)
	return run
}

func (r *recorder) signal(id, name string, arg any) {
	require.NoError(r.t, r.c.SignalWorkflow(context.Background(), id, "", name, arg))
}

func (r *recorder) update(id, name string, arg any) error {
	opts := client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: name, WaitForStage: client.WorkflowUpdateStageCompleted}
	if arg != nil {
		opts.Args = []any{arg}
	}
	h, err := r.c.UpdateWorkflow(context.Background(), opts)
	if err != nil {
		return err
	}
	return h.Get(context.Background(), nil)
}

// toRecord skips a scenario unless it records for today's revision: a
// scenario records under the revision that brought it (or, with since 0,
// under every revision that has not recorded it yet) and only files that
// do not exist yet.
func toRecord(t *testing.T, since workflow.Version, names ...string) {
	t.Helper()
	if since != 0 && workflows.RevisionCurrent != since {
		t.Skipf("recorded by revision %d", since)
	}
	if !missing(names...) {
		t.Skip("recorded")
	}
}

// missing reports which of the files do not exist yet: a scenario whose
// recordings all exist is not run.
func missing(names ...string) bool {
	for _, n := range names {
		if _, err := os.Stat(historyPrefix + n + ".json"); errors.Is(err, os.ErrNotExist) {
			return true
		}
	}
	return false
}

func TestWriteHistories(t *testing.T) {
	const queue = "histories"
	t.Run("basic", func(t *testing.T) {
		toRecord(t, 0, "basic")
		r := newRecorder(t, queue, (&scriptedTenero{}).run)
		// Ticks on a fast cadence, a rate-limit back-off, a failure, every
		// message as a signal and as an update (good and malformed), a query.
		basic := r.start("history-basic", queue, workflows.Config{TeneroEvery: pacer.Duration(2 * time.Second),
			SweepEvery: pacer.Duration(3 * time.Second), HeartbeatTimeout: pacer.Duration(10 * time.Second)})
		id := basic.GetID()
		// A recording is a scenario played in real time against a dev
		// server: each sleep is a span of the scenario the history records.
		time.Sleep(5 * time.Second)
		r.signal(id, workflows.SignalPause, workflows.PauseInput{For: "3s"})
		r.signal(id, workflows.SignalPause, json.RawMessage(`{"for":5}`))
		r.signal(id, workflows.SignalRefresh, workflows.RefreshInput{Task: "nope"})
		time.Sleep(4 * time.Second)
		require.NoError(t, r.update(id, workflows.UpdatePause, workflows.PauseInput{For: "1h"}))
		require.Error(t, r.update(id, workflows.UpdatePause, workflows.PauseInput{For: "-1h"}))
		r.signal(id, workflows.SignalRefresh, workflows.RefreshInput{Task: pacer.TaskTenero})
		r.signal(id, workflows.SignalRefresh, workflows.RefreshInput{Task: pacer.TaskSweep})
		r.signal(id, workflows.SignalTune, json.RawMessage(`{"task":"tenero","batch":20,"interval":"3s"}`))
		require.NoError(t, r.update(id, workflows.UpdateTune, json.RawMessage(`{"task":"all","batch":50}`)))
		r.signal(id, workflows.SignalTune, json.RawMessage(`{"task":"sweep","batch":-1}`))
		require.NoError(t, r.update(id, workflows.UpdateResume, nil))
		r.signal(id, workflows.SignalPause, workflows.PauseInput{For: "1h"})
		r.signal(id, workflows.SignalResume, nil)
		require.NoError(t, r.update(id, workflows.UpdateRefreshNow, workflows.RefreshInput{Task: pacer.TaskAll}))
		_, err := r.c.QueryWorkflow(context.Background(), id, "", workflows.QueryStatus)
		require.NoError(t, err)
		time.Sleep(5 * time.Second)
		require.NoError(t, r.c.TerminateWorkflow(context.Background(), id, "", "history recorded"))
		write(t, r.c, id, basic.GetRunID(), "basic")
	})

	t.Run("bad", func(t *testing.T) {
		// The revision-1 basic recording (the replay test's good history)
		// with its first tenero activity renamed.
		good, err := os.ReadFile("testdata/histories/r1-basic.json")
		require.NoError(t, err)
		// protojson varies its spacing: the name is found by pattern.
		at := regexp.MustCompile(`"name":\s*"` + workflows.ActivityRefreshTenero + `"`).FindIndex(good)
		require.NotNil(t, at)
		bad := string(good[:at[1]-1]) + "Renamed" + string(good[at[1]-1:])
		require.NoError(t, os.MkdirAll(filepath.Dir(badHistory), 0o755))
		require.NoError(t, os.WriteFile(badHistory, []byte(bad), 0o644))
	})

	t.Run("continue-as-new", func(t *testing.T) {
		toRecord(t, 1, "continue-as-new")
		r := newRecorder(t, queue, (&scriptedTenero{}).run)
		// Continue-as-new at the first idle moment, with state and a signal
		// arriving around the hand-over.
		can := r.start("history-continue-as-new", queue, workflows.Config{TeneroEvery: pacer.Duration(time.Second),
			SweepEvery: pacer.Duration(2 * time.Second), MaxHistoryEvents: 60})
		r.signal(can.GetID(), workflows.SignalRefresh, workflows.RefreshInput{Task: pacer.TaskTenero})
		waitNewRun(t, r.c, can)
		write(t, r.c, can.GetID(), can.GetRunID(), "continue-as-new")
		require.NoError(t, r.c.TerminateWorkflow(context.Background(), can.GetID(), "", "history recorded"))
	})

	t.Run("failure-streak", func(t *testing.T) {
		toRecord(t, 1, "failure-streak")
		r := newRecorder(t, queue, failingTenero)
		// Tenero fails every run: 12 in a row open its breaker, which then
		// probes every 3 s and fails again; a resume closes it, and the
		// streak goes on.
		streak := r.start("history-failure-streak", queue, workflows.Config{TeneroEvery: pacer.Duration(time.Second),
			SweepEvery: pacer.Duration(time.Hour), BreakerCooldown: pacer.Duration(3 * time.Second)})
		time.Sleep(22 * time.Second)
		require.NoError(t, r.update(streak.GetID(), workflows.UpdateResume, nil))
		time.Sleep(3 * time.Second)
		require.NoError(t, r.c.TerminateWorkflow(context.Background(), streak.GetID(), "", "history recorded"))
		write(t, r.c, streak.GetID(), streak.GetRunID(), "failure-streak")
	})

	t.Run("reconfigure", func(t *testing.T) {
		toRecord(t, 1, "reconfigure", "reconfigured")
		r := newRecorder(t, queue, (&scriptedTenero{}).run)
		// A reconfigure applies at once and continues as new with the new
		// config: the run that took it, and the run after it.
		run := r.start("history-reconfigure", queue, workflows.Config{TeneroEvery: pacer.Duration(3 * time.Second),
			SweepEvery: pacer.Duration(time.Hour)})
		time.Sleep(4 * time.Second)
		require.Error(t, r.update(run.GetID(), workflows.UpdateReconfigure, json.RawMessage(`{"schedules":{"deliver":{"every":"1m"}}}`)))
		require.NoError(t, r.update(run.GetID(), workflows.UpdateReconfigure,
			json.RawMessage(`{"teneroEvery":"1s","schedules":{"rollup":{"cron":"* * * * *","catchup":"coalesce"}}}`)))
		next := waitNewRun(t, r.c, run)
		time.Sleep(4 * time.Second)
		require.NoError(t, r.c.TerminateWorkflow(context.Background(), run.GetID(), "", "history recorded"))
		write(t, r.c, run.GetID(), run.GetRunID(), "reconfigure")
		write(t, r.c, run.GetID(), next, "reconfigured")
	})

	t.Run("catch-up", func(t *testing.T) {
		toRecord(t, 1, "catch-up")
		r := newRecorder(t, queue, (&scriptedTenero{}).run)
		// A scheduler back after five minutes down: the rollup's minutely
		// occurrences it missed are backfilled, each its own run, then a
		// pause passes one as paused, and deliver wakes after each rollup.
		spec, err := cron.ParseSpec([]byte(`{"cron":"* * * * *","catchup":"backfill"}`))
		require.NoError(t, err)
		last := time.Now().UTC().Truncate(time.Minute).Add(-5 * time.Minute)
		run := r.startWith("history-catch-up", queue, workflows.SchedulerInput{
			Config: workflows.Config{TeneroEvery: pacer.Duration(time.Hour), SweepEvery: pacer.Duration(time.Hour),
				Schedules: cron.Schedules{pacer.TaskRollup: spec}},
			State: &workflows.State{Tasks: []*schedule.Task{{Name: pacer.TaskRollup, LastRunAt: &last, Cron: &cron.State{Last: last}}}},
		})
		time.Sleep(5 * time.Second)
		require.NoError(t, r.update(run.GetID(), workflows.UpdatePause, workflows.PauseInput{For: "65s"}))
		time.Sleep(70 * time.Second)
		_, err = r.c.QueryWorkflow(context.Background(), run.GetID(), "", workflows.QueryStatus)
		require.NoError(t, err)
		require.NoError(t, r.update(run.GetID(), workflows.UpdateRefreshNow, workflows.RefreshInput{Task: pacer.TaskRollup}))
		time.Sleep(3 * time.Second)
		require.NoError(t, r.c.TerminateWorkflow(context.Background(), run.GetID(), "", "history recorded"))
		write(t, r.c, run.GetID(), run.GetRunID(), "catch-up")
	})

	t.Run("core", func(t *testing.T) {
		toRecord(t, 1, "core", "core-reconfigured")
		r := newRecorder(t, queue, (&scriptedTenero{}).run)
		// The one decision's messages and rules: a minutely rollup whose
		// first occurrence fails (owed, retried on its back-off), a pause of
		// one task, hints (good, malformed, while paused), a backfill of a
		// past range, a resume, a query, then a cron-to-cron reconfigure.
		spec, err := cron.ParseSpec([]byte(`{"cron":"* * * * *","catchup":"backfill"}`))
		require.NoError(t, err)
		failRollups.Store(3)
		t.Cleanup(func() { failRollups.Store(0) })
		run := r.start("history-core", queue, workflows.Config{TeneroEvery: pacer.Duration(3 * time.Second),
			SweepEvery: pacer.Duration(time.Hour), Schedules: cron.Schedules{pacer.TaskRollup: spec}})
		id := run.GetID()
		time.Sleep(3 * time.Second)
		r.signal(id, workflows.SignalHint, json.RawMessage(`{"agent":"SP000000000000000000002Q6VF78"}`))
		r.signal(id, workflows.SignalHint, json.RawMessage(`{"agent":"nope"}`))
		require.NoError(t, r.update(id, workflows.UpdatePause, workflows.PauseInput{For: "20s", Task: pacer.TaskSweep}))
		r.signal(id, workflows.SignalHint, nil)
		require.Error(t, r.update(id, workflows.UpdatePause, workflows.PauseInput{For: "20s", Task: "nope"}))
		now := time.Now().UTC().Truncate(time.Minute)
		require.NoError(t, r.update(id, workflows.UpdateBackfill, workflows.BackfillInput{Task: pacer.TaskRollup,
			From: now.Add(-4 * time.Minute).Format(time.RFC3339), To: now.Add(-2 * time.Minute).Format(time.RFC3339)}))
		require.Error(t, r.update(id, workflows.UpdateBackfill, workflows.BackfillInput{Task: pacer.TaskTenero,
			From: now.Add(-4 * time.Minute).Format(time.RFC3339), To: now.Format(time.RFC3339)}))
		time.Sleep(70 * time.Second)
		require.NoError(t, r.update(id, workflows.UpdateResume, nil))
		_, err = r.c.QueryWorkflow(context.Background(), id, "", workflows.QueryStatus)
		require.NoError(t, err)
		require.NoError(t, r.update(id, workflows.UpdateReconfigure, json.RawMessage(`{"schedules":{"rollup":{"cron":"*/2 * * * *","catchup":"coalesce"}}}`)))
		next := waitNewRun(t, r.c, run)
		time.Sleep(4 * time.Second)
		require.NoError(t, r.c.TerminateWorkflow(context.Background(), id, "", "history recorded"))
		write(t, r.c, id, run.GetRunID(), "core")
		write(t, r.c, id, next, "core-reconfigured")
	})

	t.Run("registry", func(t *testing.T) {
		toRecord(t, 2, "registry")
		r := newRecorder(t, queue, (&scriptedTenero{}).run)
		// Revision 2: the registry task reads every 2 s; a read that adds
		// an agent hints the sweep; a failed read is retried on its cadence.
		reg := r.start("history-registry", queue, workflows.Config{TeneroEvery: pacer.Duration(time.Hour),
			SweepEvery: pacer.Duration(time.Hour), RegistryEvery: pacer.Duration(2 * time.Second)})
		time.Sleep(9 * time.Second)
		require.NoError(t, r.update(reg.GetID(), workflows.UpdateRefreshNow, workflows.RefreshInput{Task: pacer.TaskRegistry}))
		require.NoError(t, r.c.TerminateWorkflow(context.Background(), reg.GetID(), "", "history recorded"))
		write(t, r.c, reg.GetID(), reg.GetRunID(), "registry")
	})

	t.Run("rounds", func(t *testing.T) {
		toRecord(t, 0, "rounds")
		r := newRecorder(t, queue, (&scriptedTenero{}).run)
		// Revision 3: finalize runs at the start and finds no round, is
		// woken by a refresh (a round added), waits for its grace and then
		// for completeThrough, fails once, finalizes; chainhook every 2 s.
		// A refresh of a task the run does not have is refused. Revision
		// 4: the run that finalized wakes deliver.
		run := r.start("history-rounds", queue, workflows.Config{TeneroEvery: pacer.Duration(time.Hour),
			SweepEvery: pacer.Duration(time.Hour), ChainhookEvery: pacer.Duration(2 * time.Second)})
		id := run.GetID()
		time.Sleep(3 * time.Second)
		r.signal(id, workflows.SignalRefresh, workflows.RefreshInput{Task: pacer.TaskFinalize})
		time.Sleep(8 * time.Second)
		require.Error(t, r.update(id, workflows.UpdateRefreshNow, workflows.RefreshInput{Task: pacer.TaskRegistry}))
		require.NoError(t, r.update(id, workflows.UpdateRefreshNow, workflows.RefreshInput{Task: pacer.TaskAll}))
		_, err := r.c.QueryWorkflow(context.Background(), id, "", workflows.QueryStatus)
		require.NoError(t, err)
		require.NoError(t, r.c.TerminateWorkflow(context.Background(), id, "", "history recorded"))
		write(t, r.c, id, run.GetRunID(), "rounds")
	})

	t.Run("stop-start", func(t *testing.T) {
		toRecord(t, 1, "stopped", "started")
		r := newRecorder(t, queue, (&scriptedTenero{}).run)
		// A stop completes the run with its state; a start carries it on.
		sched := worker.Scheduler{WorkflowID: "history-stop-start", TaskQueue: queue,
			Config: workflows.Config{TeneroEvery: pacer.Duration(2 * time.Second), SweepEvery: pacer.Duration(time.Hour)}}
		first, err := worker.EnsureRunning(context.Background(), r.c, sched)
		require.NoError(t, err)
		time.Sleep(3 * time.Second)
		require.NoError(t, r.update(sched.WorkflowID, workflows.UpdatePause, workflows.PauseInput{For: "1h"}))
		require.NoError(t, r.update(sched.WorkflowID, workflows.UpdateStop, workflows.StopInput{Reason: "history"}))
		e, err := worker.Ensure(context.Background(), r.c, sched, worker.Start)
		require.NoError(t, err)
		require.NotNil(t, e.Restart)
		require.NoError(t, r.update(sched.WorkflowID, workflows.UpdateResume, nil))
		time.Sleep(3 * time.Second)
		require.NoError(t, r.c.TerminateWorkflow(context.Background(), sched.WorkflowID, "", "history recorded"))
		write(t, r.c, sched.WorkflowID, first, "stopped")
		write(t, r.c, sched.WorkflowID, e.RunID, "started")
	})
}

// waitNewRun waits until run continued as new and returns the new run's ID.
func waitNewRun(t *testing.T, c client.Client, run client.WorkflowRun) string {
	t.Helper()
	var next string
	require.Eventually(t, func() bool {
		d, err := c.DescribeWorkflowExecution(context.Background(), run.GetID(), "")
		if err != nil {
			return false
		}
		next = d.GetWorkflowExecutionInfo().GetExecution().GetRunId()
		return next != run.GetRunID()
	}, time.Minute, 200*time.Millisecond)
	return next
}

// write saves a run's history as historyPrefix+name+".json", unless that
// file exists: recordings are never rewritten.
func write(t *testing.T, c client.Client, id, runID, name string) {
	t.Helper()
	path := historyPrefix + name + ".json"
	if _, err := os.Stat(path); err == nil {
		t.Logf("kept %s: recordings are never rewritten", path)
		return
	}
	var h historypb.History
	it := c.GetWorkflowHistory(context.Background(), id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		require.NoError(t, err)
		h.Events = append(h.Events, e)
	}
	b, err := protojson.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(&h)
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, b, 0o644))
	sums, err := os.OpenFile(historySums, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	require.NoError(t, err)
	_, err = fmt.Fprintf(sums, "%x  %s\n", sha256.Sum256(b), filepath.Base(path))
	require.NoError(t, errors.Join(err, sums.Close()))
	t.Logf("wrote %s (%d events) and its sum in %s", path, len(h.Events), historySums)
	require.False(t, strings.Contains(string(b), "EVENT_TYPE_WORKFLOW_TASK_FAILED"), "%s holds a failed workflow task", path)
}
