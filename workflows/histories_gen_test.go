//go:build histories

// This file records the histories that replay_test.go replays. It needs a
// Temporal dev server and runs only with the "histories" build tag:
//
//	make histories
//
// It rewrites basic.json and continue-as-new.json from today's code.
// Histories of earlier code (before-*.json) are kept as they are: they are
// what proves a change replays the runs it finds in flight.
package workflows_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	sdkworker "go.temporal.io/sdk/worker"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/testenv"
	"github.com/pacer-dev/pacer/workflows"
)

// scriptedTenero answers each call from a script, then succeeds.
type scriptedTenero struct{ calls atomic.Int32 }

func (s *scriptedTenero) run(ctx context.Context, _ pacer.TeneroInput) (pacer.TeneroResult, error) {
	ok := pacer.TeneroResult{Run: pacer.Run{StartedAt: activity.GetInfo(ctx).StartedTime}, TokensAttempted: 8, Succeeded: 8, Pegged: 5}
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

func TestWriteHistories(t *testing.T) {
	ctx := context.Background()
	srv, err := testenv.StartTemporal(ctx)
	require.NoError(t, err)
	defer srv.Stop()
	c, err := client.Dial(client.Options{HostPort: srv.HostPort})
	require.NoError(t, err)
	defer c.Close()

	const queue = "histories"
	w := sdkworker.New(c, queue, sdkworker.Options{})
	workflows.Register(w)
	fake := &scriptedTenero{}
	w.RegisterActivityWithOptions(fake.run, activity.RegisterOptions{Name: workflows.ActivityRefreshTenero})
	w.RegisterActivityWithOptions(func(context.Context, pacer.SweepInput) (pacer.SweepResult, error) {
		return pacer.SweepResult{Scanned: 3, Found: 2, Inserted: 1, Pending: 1}, nil
	}, activity.RegisterOptions{Name: workflows.ActivitySweep})
	require.NoError(t, w.Start())
	defer w.Stop()

	start := func(id string, cfg workflows.Config) client.WorkflowRun {
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue},
			workflows.WorkflowType, workflows.SchedulerInput{Config: cfg})
		require.NoError(t, err)
		return run
	}
	signal := func(id, name string, arg any) { require.NoError(t, c.SignalWorkflow(ctx, id, "", name, arg)) }

	// Ticks on a fast cadence, a rate-limit back-off, a failure, every signal
	// (good and malformed), an update and a query.
	basic := start("history-basic", workflows.Config{TeneroEvery: 2 * time.Second, SweepEvery: 3 * time.Second})
	time.Sleep(5 * time.Second)
	signal(basic.GetID(), workflows.SignalPause, workflows.PauseInput{For: "3s"})
	signal(basic.GetID(), workflows.SignalPause, json.RawMessage(`{"for":5}`))
	signal(basic.GetID(), workflows.SignalRefresh, workflows.RefreshInput{Task: "nope"})
	time.Sleep(4 * time.Second)
	signal(basic.GetID(), workflows.SignalPause, workflows.PauseInput{For: "1h"})
	signal(basic.GetID(), workflows.SignalRefresh, workflows.RefreshInput{Task: pacer.TaskTenero})
	signal(basic.GetID(), workflows.SignalRefresh, workflows.RefreshInput{Task: pacer.TaskSweep})
	signal(basic.GetID(), workflows.SignalTune, json.RawMessage(`{"task":"tenero","batch":20,"interval":"3s"}`))
	signal(basic.GetID(), workflows.SignalTune, json.RawMessage(`{"task":"sweep","batch":-1}`))
	signal(basic.GetID(), workflows.SignalResume, nil)
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: basic.GetID(), UpdateName: workflows.UpdateRefreshNow,
		Args: []any{workflows.RefreshInput{Task: pacer.TaskAll}}, WaitForStage: client.WorkflowUpdateStageCompleted})
	require.NoError(t, err)
	require.NoError(t, h.Get(ctx, nil))
	_, err = c.QueryWorkflow(ctx, basic.GetID(), "", workflows.QueryStatus)
	require.NoError(t, err)
	time.Sleep(5 * time.Second)
	require.NoError(t, c.TerminateWorkflow(ctx, basic.GetID(), "", "history recorded"))
	write(t, c, basic.GetID(), basic.GetRunID(), "testdata/histories/basic.json")

	// Continue-as-new with state and a signal arriving around the hand-over.
	can := start("history-continue-as-new", workflows.Config{TeneroEvery: time.Second, SweepEvery: 2 * time.Second, MaxHistoryEvents: 40})
	signal(can.GetID(), workflows.SignalRefresh, workflows.RefreshInput{Task: pacer.TaskTenero})
	require.Eventually(t, func() bool {
		d, err := c.DescribeWorkflowExecution(ctx, can.GetID(), "")
		return err == nil && d.GetWorkflowExecutionInfo().GetExecution().GetRunId() != can.GetRunID()
	}, time.Minute, 200*time.Millisecond)
	write(t, c, can.GetID(), can.GetRunID(), "testdata/histories/continue-as-new.json")
	require.NoError(t, c.TerminateWorkflow(ctx, can.GetID(), "", "history recorded"))

	// The same basic history with the activity renamed, as a code change
	// that forgot workflow.GetVersion would look: replay must reject it.
	b, err := os.ReadFile("testdata/histories/basic.json")
	require.NoError(t, err)
	bad := strings.Replace(string(b), `"`+workflows.ActivityRefreshTenero+`"`, `"RefreshPrices"`, 1)
	require.True(t, bad != string(b), "the activity name was not found in the history")
	require.NoError(t, os.WriteFile("testdata/nondeterministic/renamed-activity.json", []byte(bad), 0o644))
}

func write(t *testing.T, c client.Client, id, runID, path string) {
	t.Helper()
	var h historypb.History
	it := c.GetWorkflowHistory(context.Background(), id, runID, false, 0)
	for it.HasNext() {
		e, err := it.Next()
		require.NoError(t, err)
		h.Events = append(h.Events, e)
	}
	b, err := protojson.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(&h)
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, b, 0o644))
	t.Logf("wrote %s (%d events)", path, len(h.Events))
}
