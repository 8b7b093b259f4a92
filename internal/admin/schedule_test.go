package admin_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/pacer-dev/pacer/activities"
	"github.com/pacer-dev/pacer/internal/discovery"
	"github.com/pacer-dev/pacer/internal/operate"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/internal/testenv"
	"github.com/pacer-dev/pacer/worker"
	"github.com/pacer-dev/pacer/workflows"
)

// The schedule actions go to the real scheduler through Temporal (a dev
// server and a worker running the real workflow), and each is in the
// audit log right after its update returned, with the operator's name, what
// was asked and what the scheduler answered. A rejection by the workflow's
// validator is a 400 and is not audited.
func TestScheduleActionsThroughTheAdminAPI(t *testing.T) {
	t.Parallel()
	srv, err := testenv.StartTemporal(context.Background())
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	tc, err := client.Dial(client.Options{HostPort: srv.HostPort})
	require.NoError(t, err)
	t.Cleanup(tc.Close)
	st := testenv.Store(t)
	sched := worker.Scheduler{WorkflowID: "v1-admin", TaskQueue: "admin-test"}
	w := worker.New(tc, sched.TaskQueue, activities.New(activities.Options{Discovery: discovery.Config{Mode: "agents"}, Store: st,
		Logger: zaptest.NewLogger(t, zaptest.Level(zap.ErrorLevel)), TeneroBaseURL: "http://127.0.0.1:1", HiroBaseURL: "http://127.0.0.1:1"}))
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	_, err = worker.EnsureRunning(t.Context(), tc, sched)
	require.NoError(t, err)

	a := newAPI(t, &operate.Service{Store: st, Temporal: tc, WorkflowID: sched.WorkflowID})
	var res struct {
		Result workflows.PauseResult `json:"result"`
	}
	a.do("POST", "scheduler/pause", map[string]string{"for": "30m"}, 200, &res)
	require.WithinDuration(t, time.Now().Add(30*time.Minute), res.Result.PausedUntil, time.Minute)
	st1, err := worker.Status(t.Context(), tc, sched.WorkflowID)
	require.NoError(t, err)
	require.NotNil(t, st1.PausedUntil, "the scheduler itself is paused")
	a.do("POST", "scheduler/resume", nil, 200, nil)

	var page struct{ Entries []store.AuditEntry }
	a.do("GET", "audit", nil, 200, &page)
	require.Len(t, page.Entries, 2)
	require.Equal(t, "alice", page.Entries[1].Actor)
	require.Equal(t, operate.ActionPause, page.Entries[1].Action)
	require.Equal(t, sched.WorkflowID, page.Entries[1].Target)
	var after struct {
		Input  map[string]string `json:"input"`
		Result struct {
			PausedUntil time.Time `json:"pausedUntil"`
		} `json:"result"`
	}
	require.NoError(t, json.Unmarshal(page.Entries[1].After, &after))
	require.Equal(t, "30m", after.Input["for"])
	require.Equal(t, res.Result.PausedUntil.UTC(), after.Result.PausedUntil.UTC())
	require.Equal(t, operate.ActionResume, page.Entries[0].Action)

	// A backfill the scheduler refuses (this build's validator may not know
	// the update, or the range) is a 400, and nothing is audited.
	a.do("POST", "scheduler/backfill", map[string]string{"task": "rollup",
		"from": time.Now().Add(-2 * time.Hour).UTC().Format(time.RFC3339), "to": time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)}, 0, nil)
	a.do("GET", "audit", nil, 200, &page)
	n := len(page.Entries)
	require.True(t, n == 2 || n == 3 && page.Entries[0].Action == operate.ActionBackfill)

	// A skip of an occurrence the scheduler does not owe is refused by its
	// validator, with the reason: a 400, not audited.
	var refused struct{ Error string }
	a.do("POST", "scheduler/skip", map[string]string{"task": "rollup", "nominalAt": "2026-11-01T00:05:00Z"}, 400, &refused)
	require.Contains(t, refused.Error, "owes no occurrence")
	a.do("GET", "audit", nil, 200, &page)
	require.Len(t, page.Entries, n)
}
