package operate_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/pacer-dev/pacer/internal/actor"
	"github.com/pacer-dev/pacer/internal/operate"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/internal/testenv"
	"github.com/pacer-dev/pacer/internal/testenv/devsched"
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
	st := testenv.Store(t)
	tc, sched := devsched.Start(t, st, "v1-audit", "audit-test")

	ctx, cancel := context.WithCancel(actor.With(t.Context(), "alice"))
	svc := &operate.Service{Store: st, Temporal: hangUp{Client: tc, cancel: cancel}, WorkflowID: sched.WorkflowID}
	_, err := svc.Pause(ctx, operate.PauseInput{For: "30m"})
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

// intentFirst is the Temporal client of a test that looks at the audit
// log at the moment an action reaches Temporal: its newest entry must be
// the action's, as requested.
type intentFirst struct {
	client.Client
	t      *testing.T
	st     *store.Store
	action *string // the action under way
	seen   map[string]string
}

func (c intentFirst) look() {
	entries, err := c.st.AuditLog(context.Background(), store.AuditQuery{Limit: 1})
	require.NoError(c.t, err)
	require.NotEmpty(c.t, entries, "%s reached Temporal before its audit entry", *c.action)
	var after struct {
		Outcome string `json:"outcome"`
	}
	require.NoError(c.t, json.Unmarshal(entries[0].After, &after))
	c.seen[*c.action] = entries[0].Action + " " + after.Outcome
}

func (c intentFirst) UpdateWorkflow(ctx context.Context, o client.UpdateWorkflowOptions) (client.WorkflowUpdateHandle, error) {
	c.look()
	return c.Client.UpdateWorkflow(ctx, o)
}

func (c intentFirst) ExecuteWorkflow(ctx context.Context, o client.StartWorkflowOptions, wf any, args ...any) (client.WorkflowRun, error) {
	c.look()
	return c.Client.ExecuteWorkflow(ctx, o, wf, args...)
}

// Issue 41.13: the CLI's tune, reconfigure, stop, start and promote were
// audited after the fact (a change made and then, the audit write
// failing, only a line on stderr; a refused one, nothing). They now go
// through operate.Audited as pause does: each action's entry is in the
// log, as requested, when the action reaches Temporal, and then says
// what happened; a refusal (the scheduler's validator) and a failure
// (a promote of a build no worker runs) keep their entry with the reason.
func TestSchedulerActionsAreAuditedBeforeTheyAct(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	tc, sched := devsched.Start(t, st, "v1-intent", "intent-test")

	var action string
	seen := map[string]string{}
	svc := &operate.Service{Store: st, WorkflowID: sched.WorkflowID,
		Temporal: intentFirst{Client: tc, t: t, st: st, action: &action, seen: seen}}
	ctx := actor.With(t.Context(), "alice")

	action = operate.ActionTune
	_, err := svc.Tune(ctx, json.RawMessage(`{"task":"tenero","interval":"10m"}`))
	require.NoError(t, err)
	action = operate.ActionReconfigure
	_, err = svc.Reconfigure(ctx, json.RawMessage(`{"sweepEvery":"2m"}`))
	require.NoError(t, err)
	action = operate.ActionReconfigure + " refused"
	_, err = svc.Reconfigure(ctx, json.RawMessage(`{"sweepEvery":"1ms"}`))
	require.ErrorIs(t, err, operate.ErrInvalid, "the scheduler's validator refuses it")
	require.False(t, operate.Refused(err), "the refusal is on record already")
	action = operate.ActionStop
	stopped, err := svc.Stop(ctx, sched, json.RawMessage(`{"reason":"maintenance"}`))
	require.NoError(t, err)
	require.NoError(t, stopped.RecordedErr)
	action = operate.ActionStart
	e, err := svc.Start(ctx, sched)
	require.NoError(t, err)
	require.True(t, e.Started)
	action = operate.ActionPromote
	_, err = svc.Promote(ctx, "no-such-deployment", "abc1234")
	require.Error(t, err)

	require.Equal(t, map[string]string{
		operate.ActionTune:                     operate.ActionTune + " requested",
		operate.ActionReconfigure:              operate.ActionReconfigure + " requested",
		operate.ActionReconfigure + " refused": operate.ActionReconfigure + " requested",
		operate.ActionStop:                     operate.ActionStop + " requested",
		operate.ActionStart:                    operate.ActionStart + " requested",
	}, seen, "each entry written before its action reached Temporal")

	entries, err := st.AuditLog(t.Context(), store.AuditQuery{Limit: 10})
	require.NoError(t, err)
	var got []string
	for _, e := range entries {
		require.Equal(t, "alice", e.Actor)
		var after struct {
			Outcome string `json:"outcome"`
			Error   string `json:"error"`
		}
		require.NoError(t, json.Unmarshal(e.After, &after))
		if after.Outcome != "done" {
			require.NotEmpty(t, after.Error, "%s %s says why", e.Action, after.Outcome)
		}
		got = append(got, e.Action+" "+after.Outcome)
	}
	require.Equal(t, []string{
		operate.ActionPromote + " failed or unknown",
		operate.ActionStart + " done",
		operate.ActionStop + " done",
		operate.ActionReconfigure + " refused",
		operate.ActionReconfigure + " done",
		operate.ActionTune + " done",
	}, got)
	t.Logf("figures: 6 actions, 6 entries each written before its action: %v", got)
}
