package workflows

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/worker"
)

// The histories were recorded from real runs on a dev server (make
// histories). Replaying them against today's code proves a change keeps
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
