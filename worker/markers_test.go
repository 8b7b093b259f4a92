package worker_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/workflows"
)

// SPEC §3.7: a fresh scheduler's history, as `temporal workflow show`
// prints it, carries version markers of one change ID, `scheduler`, at
// the current revision: one marker, read once per run, and no side effect
// (worker.Ensure gives it the defaults in force in its input).
func TestAFreshRunCarriesOneRevision(t *testing.T) {
	t.Parallel()
	s := newStack(t, workflows.Config{})
	s.startWithTenero(t)
	out, err := temporalCLI(t, "workflow", "show", "--workflow-id", s.sched.WorkflowID, "--output", "json")
	require.NoError(t, err, out)
	var h struct {
		Events []struct {
			Marker *struct {
				Name    string `json:"markerName"`
				Details map[string]struct {
					Payloads []struct {
						Data string `json:"data"`
					} `json:"payloads"`
				} `json:"details"`
			} `json:"markerRecordedEventAttributes"`
		} `json:"events"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &h), out)
	require.NotEmpty(t, h.Events)
	var markers []string
	for _, e := range h.Events {
		// Ensure starts it with its build's defaults in its input: no
		// side effect records them.
		require.False(t, e.Marker != nil && e.Marker.Name == "SideEffect", "a fresh run records no side effect")
		if e.Marker == nil || e.Marker.Name != "Version" {
			continue
		}
		id, err := base64.StdEncoding.DecodeString(e.Marker.Details["change-id"].Payloads[0].Data)
		require.NoError(t, err)
		v, err := base64.StdEncoding.DecodeString(e.Marker.Details["version"].Payloads[0].Data)
		require.NoError(t, err)
		markers = append(markers, string(id)+"@"+string(v))
	}
	t.Logf("version markers of %s: %v", s.sched.WorkflowID, markers)
	require.Equal(t, []string{fmt.Sprintf(`"%s"@%d`, workflows.ChangeID, workflows.RevisionCurrent)}, markers)
}
