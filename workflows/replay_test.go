package workflows

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// The histories were recorded from real runs on a dev server (make
// histories), by today's code and by every earlier version, and are never
// rewritten. Replaying them all against today's code proves a change keeps
// running workflows deterministic; a change that cannot must be gated with
// workflow.GetVersion.
func TestReplayRecordedHistories(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/histories/*.json")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			t.Parallel()
			r := worker.NewWorkflowReplayer()
			Register(r)
			require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(nil, f))
		})
	}
}

// A history the code cannot have produced must fail, or the test above
// proves nothing.
func TestReplayDetectsNondeterminism(t *testing.T) {
	t.Parallel()
	r := worker.NewWorkflowReplayer()
	Register(r)
	err := r.ReplayWorkflowHistoryFromJSONFile(nil, "testdata/nondeterministic/renamed-activity.json")
	require.ErrorContains(t, err, "nondeterministic")
}

// A history recorded before a change replays only because the change is
// gated: the same code with the gate forced on, as a deploy that forgot
// workflow.GetVersion would run, must fail on it. The failure streak from
// before the circuit breaker is the history that would have failed when
// the breaker shipped without its gate: 16 failed runs in a row, which the
// breaker, on, would have cut short after 12.
func TestGatesAreWhatLetOldHistoriesReplay(t *testing.T) {
	t.Parallel()
	tests := []struct {
		history string
		change  string
		off     bool // the gate forced off, not on
	}{
		{history: "before-breaker-failure-streak.json", change: changeBreaker},
		{history: "basic.json", change: changeKeepState},
		{history: "continue-as-new.json", change: changeKeepState},
		{history: "keep-state-basic.json", change: changeRollupTasks},
		{history: "keep-state-started.json", change: changeRollupTasks},
		{history: "rollups-basic.json", change: changeOneDecision},
		{history: "rollups-catch-up.json", change: changeOneDecision},
		{history: "rollups-failure-streak.json", change: changeOneDecision},
		{history: "rollups-reconfigured.json", change: changeOneDecision},
		{history: "decide-catch-up.json", change: changeWakeTimers},
		{history: "skip-basic.json", change: changeEndWakes},
		{history: "skip-core.json", change: changeEndWakes},
		{history: "skip-skip.json", change: changeEndWakes},
		// No history before changeCooledProbe holds a cooldown, so none
		// breaks with it forced on; the one that does, recorded with it,
		// must not replay with it forced off.
		{history: "cooled-probe-cooled.json", change: changeCooledProbe, off: true},
	}
	for _, tt := range tests {
		t.Run(tt.history, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join("testdata/histories", tt.history)
			gated := worker.NewWorkflowReplayer()
			Register(gated)
			require.NoError(t, gated.ReplayWorkflowHistoryFromJSONFile(nil, path), "with its gate it replays")

			ungated := worker.NewWorkflowReplayer()
			ungated.RegisterWorkflowWithOptions(func(ctx workflow.Context, in SchedulerInput) (*StopResult, error) {
				return schedulerWorkflow(ctx, in, map[string]bool{tt.change: !tt.off})
			}, workflow.RegisterOptions{Name: WorkflowType})
			err := ungated.ReplayWorkflowHistoryFromJSONFile(nil, path)
			// TMPRL1100 is the SDK's code for a history the code cannot
			// have produced.
			require.ErrorContains(t, err, "TMPRL1100", "with the %s gate forced (off: %v) it must not replay", tt.change, tt.off)
		})
	}
}
