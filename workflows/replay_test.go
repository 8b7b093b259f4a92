package workflows

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/worker"
)

// The histories were recorded from real runs of the live revisions on a
// dev server (make histories). Replaying them against today's code proves
// a change keeps the runs it finds in flight deterministic; a change that
// cannot raises RevisionCurrent and branches on it (docs/revisions.md).
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

// badHistory is basic.json with its first RefreshTenero activity renamed
// (make histories writes both): a history the code cannot have produced.
const (
	badHistory  = "testdata/nondeterministic/renamed-activity.json"
	goodHistory = "testdata/histories/r1-basic.json"
)

// renamed is where the bad history renames the activity.
var renamed = regexp.MustCompile(`"name":\s*"` + ActivityRefreshTenero + `"`)

// A history the code cannot have produced must fail, or the test above
// proves nothing: the bad history differs from a good one by one activity
// name, and replaying it fails on that.
func TestReplayDetectsNondeterminism(t *testing.T) {
	t.Parallel()
	good, err := os.ReadFile(goodHistory)
	require.NoError(t, err)
	bad, err := os.ReadFile(badHistory)
	require.NoError(t, err)
	at := renamed.FindIndex(good)
	require.NotNil(t, at)
	require.Equal(t, string(good[:at[1]-1])+"Renamed"+string(good[at[1]-1:]), string(bad),
		"the bad history is the good one with one activity renamed")

	r := worker.NewWorkflowReplayer()
	Register(r)
	require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(nil, goodHistory))
	err = r.ReplayWorkflowHistoryFromJSONFile(nil, badHistory)
	// TMPRL1100 is the SDK's code for a history the code cannot have
	// produced.
	require.ErrorContains(t, err, "TMPRL1100")
	require.ErrorContains(t, err, ActivityRefreshTenero+"Renamed")
}

// Every recorded run carries exactly one version marker, of ChangeID, at
// a live revision (SPEC §3.7): no other change ID is read anywhere.
func TestHistoriesCarryOneRevision(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/histories/*.json")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		ids, versions := versionMarkers(t, b)
		require.Equal(t, []string{ChangeID}, ids, "%s: the change IDs of its version markers", f)
		require.GreaterOrEqual(t, versions[0], int(RevisionFloor), f)
		require.LessOrEqual(t, versions[0], int(RevisionCurrent), f)
	}
}

// versionMarkers lists the change IDs and versions of a history's
// version markers, as the SDK records them.
func versionMarkers(t *testing.T, history []byte) ([]string, []int) {
	t.Helper()
	type payloads struct {
		Payloads []struct {
			Data []byte `json:"data"`
		} `json:"payloads"`
	}
	var h struct {
		Events []struct {
			Marker *struct {
				Name    string              `json:"markerName"`
				Details map[string]payloads `json:"details"`
			} `json:"markerRecordedEventAttributes"`
		} `json:"events"`
	}
	require.NoError(t, json.Unmarshal(history, &h))
	var ids []string
	var versions []int
	for _, e := range h.Events {
		if e.Marker == nil || e.Marker.Name != "Version" {
			continue
		}
		var id string
		var v int
		require.NoError(t, json.Unmarshal(e.Marker.Details["change-id"].Payloads[0].Data, &id))
		require.NoError(t, json.Unmarshal(e.Marker.Details["version"].Payloads[0].Data, &v))
		ids, versions = append(ids, id), append(versions, v)
	}
	return ids, versions
}

// A recorded history proves that a change replays the runs it finds in
// flight only as long as it is what the revision recorded: rewritten by a
// later build, it proves nothing (issue 41.5). Every file in
// testdata/histories is listed in SHA256SUMS (make histories appends the
// sum of each file it records; a new file is added, never replaced), and
// each must match its sum. Retiring a revision deletes its files and
// their lines together.
func TestRecordedHistoriesAreNeverRewritten(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("testdata/histories/SHA256SUMS")
	require.NoError(t, err)
	sums := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		require.True(t, ok, "SHA256SUMS line %q: want \"<sha256>  <file>\" (sha256sum's format)", sc.Text())
		_, dup := sums[name]
		require.False(t, dup, "%s listed twice: a recording is never replaced", name)
		sums[name] = sum
	}
	files, err := filepath.Glob("testdata/histories/*.json")
	require.NoError(t, err)
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		name := filepath.Base(f)
		want, ok := sums[name]
		require.True(t, ok, "%s is not in SHA256SUMS: make histories adds the sum of each file it records", name)
		got := sha256.Sum256(b)
		require.Equal(t, want, hex.EncodeToString(got[:]),
			"%s differs from the history its revision recorded: recordings are never rewritten (docs/revisions.md); restore it with git checkout", name)
		delete(sums, name)
	}
	require.Empty(t, sums, "listed in SHA256SUMS but missing: retiring a revision deletes its files and their lines together")
}
