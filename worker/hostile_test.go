package worker_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/logging"
	"github.com/pacer-dev/pacer/internal/testenv"
	"github.com/pacer-dev/pacer/worker"
	"github.com/pacer-dev/pacer/workflows"
)

// hostileSignal is one signal an operator (or an attacker with CLI access)
// might send. Payloads go through the real temporal CLI, so what reaches the
// workflow is exactly what the CLI makes of them.
type hostileSignal struct {
	name string
	args []string // --input, --input-meta … as typed
	// file, when set, is sent with --input-file: bytes no argv can carry.
	file []byte
	// cliRefuses: the CLI itself refuses to send it (not valid JSON).
	cliRefuses bool
	// harmless: the scheduler accepts it, with no effect on a running,
	// unpaused scheduler (a resume, a signal nobody listens to).
	harmless bool
}

func in(payload string) []string { return []string{"--input", payload} }

var hostileSignals = []hostileSignal{
	// Not JSON at all: the CLI refuses before anything is sent.
	{name: workflows.SignalPause, args: in(`not json`), cliRefuses: true},
	{name: workflows.SignalPause, args: in(`{"for":`), cliRefuses: true},
	{name: workflows.SignalPause, args: in(``), cliRefuses: true},
	{name: workflows.SignalRefresh, args: in(`{task:all}`), cliRefuses: true},
	// Well-formed JSON of the wrong shape or meaning: dropped with a log line.
	{name: workflows.SignalPause, args: in(`{"for":5}`)},
	{name: workflows.SignalPause, args: in(`{"for":"-3m"}`)},
	{name: workflows.SignalPause, args: in(`{"for":"0s"}`)},
	{name: workflows.SignalPause, args: in(`{"for":"9999999h"}`)},
	{name: workflows.SignalPause, args: in(`{"for":"721h"}`)},
	{name: workflows.SignalPause, args: in(`{"for":"１０m"}`)},
	{name: workflows.SignalPause, args: in(`{"for":"10m\u0000"}`)},
	{name: workflows.SignalPause, args: in(`{"until":"2001-01-01T00:00:00Z"}`)},
	{name: workflows.SignalPause, args: in(`{"until":"2999-01-01T00:00:00Z"}`)},
	{name: workflows.SignalPause, args: in(`{"until":"2026-13-45T99:00:00Z"}`)},
	{name: workflows.SignalPause, args: in(`{"until":"tomorrow"}`)},
	{name: workflows.SignalPause, args: in(`{"for":"1m","until":"2999-01-01T00:00:00Z"}`)},
	{name: workflows.SignalPause, args: in(`{"fro":"1m"}`)},
	{name: workflows.SignalPause, args: in(`{"for":"1m"}{"for":"2m"}`), cliRefuses: true},
	{name: workflows.SignalPause, args: in(`{}`)},
	{name: workflows.SignalPause, args: in(`null`)},
	{name: workflows.SignalPause, args: in(`"30m"`)},
	{name: workflows.SignalPause, args: in(`[]`)},
	{name: workflows.SignalPause, args: in(`123`)},
	{name: workflows.SignalPause, args: in(`true`)},
	{name: workflows.SignalPause, args: in(`{"for":"` + strings.Repeat("9", 100_000) + `s"}`)},
	{name: workflows.SignalPause, args: in(strings.Repeat(`[`, 5000) + strings.Repeat(`]`, 5000))},
	{name: workflows.SignalPause},
	// Raw bytes and empty payloads under other encodings.
	{name: workflows.SignalPause, file: []byte("\x00\xff\xfe binary"), args: []string{"--input-meta", "encoding=binary/plain"}},
	{name: workflows.SignalRefresh, file: []byte("\xef\xbb\xbf{\"task\":\"all\"}"), args: []string{"--input-meta", "encoding=binary/plain"}},
	{name: workflows.SignalPause, args: []string{"--input", "null", "--input-meta", "encoding=binary/null"}},
	{name: workflows.SignalRefresh, args: in(`{"task":"nope"}`)},
	{name: workflows.SignalRefresh, args: in(`{"task":""}`)},
	{name: workflows.SignalRefresh, args: in(`{"task":"TENERO"}`)},
	{name: workflows.SignalRefresh, args: in(`{"task":"tenero "}`)},
	{name: workflows.SignalRefresh, args: in(`{"task":["tenero"]}`)},
	{name: workflows.SignalRefresh, args: in(`{"task":{"$ne":null}}`)},
	{name: workflows.SignalRefresh, args: in(`{"task":"all","extra":1}`)},
	{name: workflows.SignalRefresh, args: in(`{"task":"tenero'; drop table swaps; --"}`)},
	{name: workflows.SignalRefresh, args: in(`{}`)},
	{name: workflows.SignalRefresh},
	{name: workflows.SignalRefresh, args: []string{"--input", "all", "--input-meta", "encoding=binary/plain"}},
	{name: workflows.SignalTune, args: in(`{"task":"tenero","batch":0}`)},
	{name: workflows.SignalTune, args: in(`{"task":"tenero","batch":-5}`)},
	{name: workflows.SignalTune, args: in(`{"task":"tenero","batch":1e99}`)},
	{name: workflows.SignalTune, args: in(`{"task":"tenero","batch":"5"}`)},
	{name: workflows.SignalTune, args: in(`{"task":"sweep","interval":"-1m"}`)},
	{name: workflows.SignalTune, args: in(`{"task":"sweep","interval":"soon"}`)},
	{name: workflows.SignalTune, args: in(`{"task":"nope","batch":5}`)},
	{name: workflows.SignalTune, args: in(`{"task":"all","reset":true,"batch":3}`)},
	{name: workflows.SignalTune, args: in(`{"task":"tenero"}`)},
	{name: workflows.SignalTune, args: in(`{}`)},
	{name: workflows.SignalTune},
	// resume may name one task: a payload with a field it does not know,
	// an unknown task, or one in an encoding it cannot decode is dropped
	// with its reason rather than read as "resume everything".
	{name: workflows.SignalResume, args: in(`{"unexpected":true}`)},
	{name: workflows.SignalResume, args: in(`{"task":"frobnicate"}`)},
	{name: workflows.SignalResume, args: []string{"--input", "{}", "--input-meta", "encoding=json/protobuf"}},
	// A signal with no handler: accepted and without effect.
	{name: "frobnicate", args: in(`{"task":"all"}`), harmless: true},
}

// hostileUpdate is one refreshNow (or other) update with a bad payload; the
// CLI must come back with an error naming the problem, and nothing may be
// written to the workflow's history.
type hostileUpdate struct {
	name    string
	args    []string
	wantErr string
}

var hostileUpdates = []hostileUpdate{
	{name: workflows.UpdateRefreshNow, args: in(`{"task":"nope"}`), wantErr: `unknown task "nope"`},
	{name: workflows.UpdateRefreshNow, args: in(`{"task":""}`), wantErr: `unknown task ""`},
	{name: workflows.UpdateRefreshNow, args: in(`{"task":"SWEEP"}`), wantErr: `unknown task "SWEEP"`},
	{name: workflows.UpdateRefreshNow, args: in(`{"task":7}`), wantErr: "invalid JSON"},
	{name: workflows.UpdateRefreshNow, args: in(`{"task":"all","extra":1}`), wantErr: "invalid JSON"},
	{name: workflows.UpdateRefreshNow, args: in(`{}`), wantErr: "unknown task"},
	{name: workflows.UpdateRefreshNow, args: in(`null`), wantErr: "empty input"},
	{name: workflows.UpdateRefreshNow, args: in(`[]`), wantErr: "invalid JSON"},
	{name: workflows.UpdateRefreshNow, args: in(`"all"`), wantErr: "invalid JSON"},
	{name: workflows.UpdateRefreshNow, args: in(`{"task":"` + strings.Repeat("a", 100_000) + `"}`), wantErr: "unknown task"},
	{name: workflows.UpdateRefreshNow, wantErr: "empty input"},
	{name: workflows.UpdateRefreshNow, args: []string{"--input", "all", "--input-meta", "encoding=binary/plain"}, wantErr: "invalid JSON"},
	{name: workflows.UpdateRefreshNow, args: in(`not json`), wantErr: "not valid JSON"},
	{name: "dropTables", args: in(`{}`), wantErr: "dropTables"},
}

// temporalCLI runs the real temporal CLI against the test's dev server.
func temporalCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	bin, err := testenv.TemporalBinary()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append(args, "--address", temporalHostPort, "--namespace", "default", "--color", "never")...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir()}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestHostileMessagesFromTheTemporalCLI(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStack(t, workflows.Config{})
	// The worker logs through an observer as well, to count the rejections.
	core, logs := observer.New(zapcore.InfoLevel)
	log := zap.New(zapcore.NewTee(s.log.Core(), core))
	tc, err := client.Dial(client.Options{HostPort: temporalHostPort, Logger: logging.Temporal(log)})
	require.NoError(t, err)
	t.Cleanup(tc.Close)
	s.tc = tc
	s.startWorker(t)
	_, err = worker.EnsureRunning(ctx, s.tc, s.sched)
	require.NoError(t, err)
	id := s.sched.WorkflowID
	eventually(t, 30*time.Second, "the first runs finished", func() bool {
		st, err := statusOrErr(s)
		return err == nil && st.LastTeneroResult != nil && st.LastSweepResult != nil &&
			!st.Tasks[pacer.TaskTenero].Running && !st.Tasks[pacer.TaskSweep].Running
	})
	before := s.status(t)

	var sent, refused, dropped int
	for _, sig := range hostileSignals {
		args := append([]string{"workflow", "signal", "--workflow-id", id, "--name", sig.name}, sig.args...)
		if sig.file != nil {
			path := filepath.Join(t.TempDir(), "payload")
			require.NoError(t, os.WriteFile(path, sig.file, 0o600))
			args = append(args, "--input-file", path)
		}
		out, err := temporalCLI(t, args...)
		if sig.cliRefuses {
			require.Error(t, err, "the CLI sent %v: %s", sig.args, out)
			require.Contains(t, out, "not valid JSON")
			refused++
			continue
		}
		require.NoError(t, err, "signal %s %v: %s", sig.name, clipArgs(sig.args), out)
		sent++
		if !sig.harmless {
			dropped++
		}
	}
	var rejectedUpdates int
	for _, u := range hostileUpdates {
		out, err := temporalCLI(t, append([]string{"workflow", "update", "execute", "--workflow-id", id, "--name", u.name}, u.args...)...)
		require.Error(t, err, "update %s %v was accepted: %s", u.name, clipArgs(u.args), out)
		// The CLI logs in logfmt, which escapes the quotes of the message.
		require.Contains(t, strings.ReplaceAll(out, `\"`, `"`), u.wantErr, "update %s %v", u.name, clipArgs(u.args))
		rejectedUpdates++
	}

	// The workflow is still there and serves a valid request at once.
	out, err := temporalCLI(t, "workflow", "update", "execute", "--workflow-id", id, "--name", workflows.UpdateRefreshNow,
		"--input", `{"task":"all"}`, "--output", "json")
	require.NoError(t, err, out)
	var answer struct {
		Result workflows.RefreshNowResult `json:"result"`
	}
	require.NoError(t, json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &answer), out)
	require.NotNil(t, answer.Result.Tenero)
	require.NotNil(t, answer.Result.Sweep)
	require.Empty(t, answer.Result.Tenero.ErrorClass)
	require.Empty(t, answer.Result.Sweep.ErrorClass)

	st := s.status(t)
	require.Equal(t, before.RunID, st.RunID, "the same run survived")
	require.Nil(t, st.PausedUntil, "no malformed pause took effect")
	require.Zero(t, st.ConsecutiveFailures[pacer.TaskTenero])
	require.Zero(t, st.ConsecutiveFailures[pacer.TaskSweep])
	require.Equal(t, before.Tasks[pacer.TaskTenero].Runs+1, st.Tasks[pacer.TaskTenero].Runs,
		"exactly the refreshNow run: no malformed refresh ran anything")
	require.Equal(t, before.Tasks[pacer.TaskSweep].Runs+1, st.Tasks[pacer.TaskSweep].Runs)
	require.NotNil(t, st.NextWakeAt, "the next tick is armed")

	// A valid pause and resume from the CLI still work.
	_, err = temporalCLI(t, "workflow", "signal", "--workflow-id", id, "--name", workflows.SignalPause, "--input", `{"for":"30m"}`)
	require.NoError(t, err)
	eventually(t, 10*time.Second, "paused", func() bool { return s.status(t).PausedUntil != nil })
	_, err = temporalCLI(t, "workflow", "signal", "--workflow-id", id, "--name", workflows.SignalResume)
	require.NoError(t, err)
	eventually(t, 10*time.Second, "resumed", func() bool { return s.status(t).PausedUntil == nil })

	// Every malformed pause and refresh was dropped with a logged reason.
	require.Equal(t, dropped, logs.FilterMessage("scheduler.message_rejected").Len())

	// The history shows every signal, one update (the valid one), and not a
	// single failed workflow task.
	counts := map[enumspb.EventType]int{}
	it := s.tc.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		counts[ev.GetEventType()]++
	}
	require.Zero(t, counts[enumspb.EVENT_TYPE_WORKFLOW_TASK_FAILED], "a hostile message failed a workflow task")
	require.Zero(t, counts[enumspb.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT])
	require.Equal(t, sent+2, counts[enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED])
	require.Equal(t, 1, counts[enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED], "rejected updates leave no trace in history")
	out, err = temporalCLI(t, "workflow", "show", "--workflow-id", id)
	require.NoError(t, err, out)

	t.Logf("figures: %d hostile signals (%d refused by the CLI, %d delivered: %d dropped with a logged reason, %d harmless), %d hostile updates rejected, 0 workflow task failures",
		len(hostileSignals), refused, sent, dropped, sent-dropped, rejectedUpdates)
}

// clipArgs keeps a 100 kB payload out of failure messages.
func clipArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if len(a) > 80 {
			a = a[:80] + "…"
		}
		out[i] = a
	}
	return out
}
