package operate_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/pacer-dev/pacer/activities"
	"github.com/pacer-dev/pacer/internal/actor"
	"github.com/pacer-dev/pacer/internal/discovery"
	"github.com/pacer-dev/pacer/internal/operate"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/internal/testenv"
	"github.com/pacer-dev/pacer/worker"
)

// hangUp is the Temporal client of a caller that goes away as soon as
// its update has been applied (its connection closed): it cancels the
// caller's context, then runs after, before the action goes on.
type hangUp struct {
	client.Client
	cancel context.CancelFunc
	after  func()
}

func (h hangUp) UpdateWorkflow(ctx context.Context, o client.UpdateWorkflowOptions) (client.WorkflowUpdateHandle, error) {
	handle, err := h.Client.UpdateWorkflow(ctx, o)
	h.cancel()
	if h.after != nil {
		h.after()
	}
	return handle, err
}

// Issue 28 finding 5: a schedule action whose caller hangs up the moment
// the update is applied is audited all the same, as the operator, with the
// scheduler's answer, and the update the workflow's history records
// carries the entry's id and the actor. When the outcome cannot be
// written (the audit table refuses it), the applied change is reported
// done, and its entry, written before the update, says it was requested.
// Before the fix the entry was written after the update with the
// caller's context: the pause was applied and never audited.
func TestScheduleActionAuditedWhenTheCallerHangsUp(t *testing.T) {
	t.Parallel()
	srv, err := testenv.StartTemporal(context.Background())
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	tc, err := client.Dial(client.Options{HostPort: srv.HostPort})
	require.NoError(t, err)
	t.Cleanup(tc.Close)
	st := testenv.Store(t)
	sched := worker.Scheduler{WorkflowID: "v1-audit", TaskQueue: "audit-test"}
	w := worker.New(tc, sched.TaskQueue, activities.New(activities.Options{Discovery: discovery.Config{Mode: "agents"}, Store: st,
		Logger: zaptest.NewLogger(t, zaptest.Level(zap.ErrorLevel)), TeneroBaseURL: "http://127.0.0.1:1", HiroBaseURL: "http://127.0.0.1:1"}))
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	_, err = worker.EnsureRunning(t.Context(), tc, sched)
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(actor.With(t.Context(), "alice"))
	svc := &operate.Service{Store: st, Temporal: hangUp{Client: tc, cancel: cancel}, WorkflowID: sched.WorkflowID}
	_, err = svc.Pause(ctx, operate.PauseInput{For: "30m"})
	require.NoError(t, err, "the caller hung up, the action went on")
	status, err := worker.Status(t.Context(), tc, sched.WorkflowID)
	require.NoError(t, err)
	require.NotNil(t, status.PausedUntil, "the pause is applied")

	entries, err := st.AuditLog(t.Context(), store.AuditQuery{Limit: 10})
	require.NoError(t, err)
	require.Len(t, entries, 1, "the applied pause is audited")
	e := entries[0]
	require.Equal(t, "alice", e.Actor)
	require.Equal(t, operate.ActionPause, e.Action)
	var after struct {
		Input  map[string]string `json:"input"`
		Result map[string]any    `json:"result"`
	}
	require.NoError(t, json.Unmarshal(e.After, &after))
	require.Equal(t, "30m", after.Input["for"])
	require.NotEmpty(t, after.Result["pausedUntil"], "the scheduler's answer")

	// The workflow's history names the entry and the actor.
	var updateIDs []string
	it := tc.GetWorkflowHistory(t.Context(), sched.WorkflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		if a := ev.GetWorkflowExecutionUpdateAcceptedEventAttributes(); a != nil {
			updateIDs = append(updateIDs, a.GetAcceptedRequest().GetMeta().GetUpdateId())
		}
	}
	require.Contains(t, updateIDs, operate.AuditUpdateID(e.ID, "alice"))

	// The outcome cannot be written: the change is still reported done,
	// and its entry stands, as requested.
	breakAudit := func() {
		_, err := st.Pool().Exec(context.Background(), `alter table audit_log add constraint no_outcome check (coalesce(after->>'outcome', '') = 'requested') not valid`)
		require.NoError(t, err)
	}
	ctx, cancel = context.WithCancel(actor.With(t.Context(), "bob"))
	svc.Temporal = hangUp{Client: tc, cancel: cancel, after: breakAudit}
	_, err = svc.Resume(ctx, operate.ResumeInput{})
	require.NoError(t, err, "an applied change is not reported failed for its record")
	status, err = worker.Status(t.Context(), tc, sched.WorkflowID)
	require.NoError(t, err)
	require.Nil(t, status.PausedUntil, "the resume is applied")
	entries, err = st.AuditLog(t.Context(), store.AuditQuery{Limit: 10})
	require.NoError(t, err)
	require.Len(t, entries, 2)
	require.Equal(t, "bob", entries[0].Actor)
	require.Equal(t, operate.ActionResume, entries[0].Action)
	require.JSONEq(t, `{"input":null,"outcome":"requested"}`, string(entries[0].After))
	t.Logf("figures: pause with the caller gone at once: 1 of 1 audited as alice, update id %s; resume with the outcome unwritable: reported done, entry %q", operate.AuditUpdateID(e.ID, "alice"), entries[0].After)
}
