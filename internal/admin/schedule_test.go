package admin_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/operate"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/internal/testenv"
	"github.com/pacer-dev/pacer/internal/testenv/devsched"
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
	st := testenv.Store(t)
	tc, sched := devsched.Start(t, st, "v1-admin", "admin-test")

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

	// A backfill is audited whether the scheduler takes it or refuses it
	// (this build's validator may not know the update, or the range).
	a.do("POST", "scheduler/backfill", map[string]string{"task": "rollup",
		"from": time.Now().Add(-2 * time.Hour).UTC().Format(time.RFC3339), "to": time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)}, 0, nil)
	a.do("GET", "audit", nil, 200, &page)
	require.Len(t, page.Entries, 3)
	require.Equal(t, operate.ActionBackfill, page.Entries[0].Action)

	// A skip of an occurrence the scheduler does not owe is refused by its
	// validator, with the reason: a 400, and its entry says so (issue
	// 41.13: it was dropped before), once.
	var refused struct{ Error string }
	a.do("POST", "scheduler/skip", map[string]string{"task": "rollup", "nominalAt": "2026-11-01T00:05:00Z"}, 400, &refused)
	require.Contains(t, refused.Error, "owes no occurrence")
	a.do("GET", "audit", nil, 200, &page)
	require.Len(t, page.Entries, 4, "one entry: the operation's, not the listener's too")
	require.Equal(t, operate.ActionSkip, page.Entries[0].Action)
	var outcome struct{ Outcome, Error string }
	require.NoError(t, json.Unmarshal(page.Entries[0].After, &outcome))
	require.Equal(t, "refused", outcome.Outcome)
	require.Contains(t, outcome.Error, "owes no occurrence")
}
