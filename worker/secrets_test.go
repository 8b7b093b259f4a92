package worker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/activities"
	"github.com/pacer-dev/pacer/internal/discovery"
	"github.com/pacer-dev/pacer/internal/logging"
	"github.com/pacer-dev/pacer/internal/sim"
	"github.com/pacer-dev/pacer/internal/testenv"
	"github.com/pacer-dev/pacer/worker"
	"github.com/pacer-dev/pacer/workflows"
)

// Markers stand in for the API keys and the database password. Anything
// pacer shows anyone (logs, errors, the status document, the workflow
// history, metrics, --help) is searched for them, whole and in pieces.
const (
	teneroKeyMarker = "tenero-KEYMARKER-7f3a9c2e41"
	hiroKeyMarker   = "hiro-KEYMARKER-51be02d9c6"
	// dbPasswordMarker is the password in DATABASE_URL. The test server
	// trusts local connections, so it is sent and never checked.
	dbPasswordMarker = "db-PWMARKER-0e8d4b7a93"
)

// withPassword puts dbPasswordMarker into a Postgres URL.
func withPassword(t *testing.T, dbURL string) string {
	t.Helper()
	u, err := url.Parse(dbURL)
	require.NoError(t, err)
	u.User = url.UserPassword(u.User.Username(), dbPasswordMarker)
	return u.String()
}

func requireNoSecrets(t *testing.T, what, text string) {
	t.Helper()
	for _, key := range []string{teneroKeyMarker, hiroKeyMarker, dbPasswordMarker} {
		require.NotContains(t, text, key, "%s shows a secret", what)
		require.NotContains(t, text, key[len(key)-14:], "%s shows a piece of a secret", what)
	}
}

// keyedUpstream serves the simulator, records the x-api-key of every
// request, and now and then echoes the key back in its answer, as a
// misbehaving upstream or proxy might: in an error message, in a 5xx body,
// and in the id of a transaction.
type keyedUpstream struct {
	sim    *sim.Server
	mu     sync.Mutex
	seen   map[string]map[string]bool // path prefix → keys
	n      atomic.Int64
	echoed atomic.Int64
}

func (u *keyedUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("x-api-key")
	prefix := "/v1/"
	if strings.HasPrefix(r.URL.Path, "/extended/") {
		prefix = "/extended/"
	}
	u.mu.Lock()
	if u.seen[prefix] == nil {
		u.seen[prefix] = map[string]bool{}
	}
	u.seen[prefix][key] = true
	u.mu.Unlock()
	n := u.n.Add(1)
	switch {
	case n%5 == 0 && prefix == "/v1/":
		u.echoed.Add(1)
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"statusCode":401,"message":"key %s is not valid for this plan","data":null}`, key)
	case n%7 == 0:
		u.echoed.Add(1)
		w.WriteHeader(http.StatusBadGateway)
		fmt.Fprintf(w, "proxy error for x-api-key: %s", key)
	case n%11 == 0 && strings.HasPrefix(r.URL.Path, "/extended/v1/tx/"):
		u.echoed.Add(1)
		fmt.Fprintf(w, `{"tx_id":%q,"tx_status":"success"}`, key)
	default:
		u.sim.ServeHTTP(w, r)
	}
}

func (u *keyedUpstream) sawKeys(t *testing.T) {
	t.Helper()
	u.mu.Lock()
	defer u.mu.Unlock()
	require.True(t, u.seen["/v1/"][teneroKeyMarker], "Tenero never received the key")
	require.True(t, u.seen["/extended/"][hiroKeyMarker], "Hiro never received the key")
	require.Len(t, u.seen["/v1/"], 1, "every Tenero request carried the key")
	require.Len(t, u.seen["/extended/"], 1, "every Hiro request carried the key")
	require.Positive(t, u.echoed.Load(), "the upstream echoed the keys back")
}

// newKeyedWorld is a stack whose upstream is the frozen world behind a
// keyedUpstream, with keyed plans out of reach.
func newKeyedWorld(t *testing.T) (*stack, *keyedUpstream) {
	t.Helper()
	s := newStack(t, workflows.Config{})
	unlimited := sim.Limits{PerMinute: 1 << 30, PerMonth: 1 << 30}
	s.sim = sim.New(sim.Config{Seed: 13, Now: func() time.Time { return worldAt },
		Tenero: sim.TeneroConfig{Anonymous: unlimited, Keyed: unlimited},
		Hiro:   sim.HiroConfig{Origin: worldAt, Agents: 12, Anonymous: unlimited, Keyed: unlimited}})
	require.NoError(t, s.sim.World().Seed(context.Background(), s.st))
	up := &keyedUpstream{sim: s.sim, seen: map[string]map[string]bool{}}
	hs := httptest.NewServer(up)
	t.Cleanup(hs.Close)
	s.simU = hs.URL
	return s, up
}

func TestAPIKeysNeverLeakFromTheWorker(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, up := newKeyedWorld(t)
	// Every log line of the worker, the SDK and the workflow, at debug.
	core, logs := observer.New(zapcore.DebugLevel)
	log := zap.New(zapcore.NewTee(s.log.Core(), core))
	tc, err := client.Dial(client.Options{HostPort: temporalHostPort, Logger: logging.Temporal(log)})
	require.NoError(t, err)
	t.Cleanup(tc.Close)
	s.tc = tc
	acts := activities.New(activities.Options{
		Discovery: discovery.Config{Mode: "agents"}, // per-agent visits, as these tests were written for
		Store:     s.st, Logger: log,
		TeneroBaseURL: s.simU, TeneroAPIKey: teneroKeyMarker,
		HiroBaseURL: s.simU, HiroAPIKey: hiroKeyMarker, HiroPerMinute: 1 << 20,
		CompetitionStart: time.Unix(1778700600, 0),
		Sleep:            func(ctx context.Context, _ time.Duration) error { return ctx.Err() },
	})
	w := worker.New(s.tc, s.sched.TaskQueue, acts)
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	_, err = worker.EnsureRunning(ctx, s.tc, s.sched)
	require.NoError(t, err)

	var shown []string
	for range 3 {
		res, err := worker.RefreshNow(ctx, s.tc, s.sched.WorkflowID, pacer.TaskAll)
		require.NoError(t, err)
		b, err := json.Marshal(res)
		require.NoError(t, err)
		shown = append(shown, string(b))
	}
	st := s.status(t)
	b, err := json.Marshal(st)
	require.NoError(t, err)
	requireNoSecrets(t, "the status document", string(b))
	for _, r := range shown {
		requireNoSecrets(t, "a refreshNow result", r)
	}

	// The history holds every activity result and failure message.
	it := s.tc.GetWorkflowHistory(ctx, s.sched.WorkflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	events := 0
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		requireNoSecrets(t, "the workflow history", ev.String())
		events++
	}
	require.Positive(t, events)

	enc := zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig())
	redacted := 0
	for _, e := range logs.All() {
		buf, err := enc.EncodeEntry(e.Entry, e.Context)
		require.NoError(t, err)
		line := buf.String()
		requireNoSecrets(t, "a log line", line)
		redacted += strings.Count(line, "[redacted]")
	}
	require.Positive(t, redacted, "the echoed keys reached messages, redacted")
	up.sawKeys(t)
	t.Logf("figures: %d log lines, %d history events, %d status and result documents searched; %d keys echoed by the upstream, %d redactions logged, 0 leaks",
		logs.Len(), events, len(shown)+1, up.echoed.Load(), redacted)
}

// TestAPIKeysNeverLeakFromTheBinary runs `pacer worker` as operators do,
// with the keys in the environment, and searches everything the process
// and the operator commands print or serve.
func TestAPIKeysNeverLeakFromTheBinary(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bin := testenv.PacerBinary(t)
	s, up := newKeyedWorld(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	httpAddr := ln.Addr().String()
	require.NoError(t, ln.Close())

	env := []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir(),
		"TENERO_API_KEY=" + teneroKeyMarker, "HIRO_API_KEY=" + hiroKeyMarker,
		"TEMPORAL_ADDRESS=" + temporalHostPort, "DATABASE_URL=" + withPassword(t, s.dbURL),
		"PACER_TASK_QUEUE=" + s.sched.TaskQueue, "PACER_WORKFLOW_ID=" + s.sched.WorkflowID,
		"TENERO_BASE_URL=" + s.simU, "HIRO_BASE_URL=" + s.simU, "PACER_HIRO_PER_MINUTE=100000",
		"PACER_LOG_LEVEL=debug", noLingerEnv}
	pacerCmd := func(args ...string) string {
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		cmd := exec.CommandContext(cctx, bin, args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "pacer %v: %s", args, out)
		return string(out)
	}

	proc := exec.Command(bin, "worker", "--migrate=false", "--http", httpAddr)
	proc.Env = env
	out := &syncBuffer{}
	proc.Stdout, proc.Stderr = out, out
	require.NoError(t, proc.Start())
	t.Cleanup(func() { _ = proc.Process.Kill(); _ = proc.Wait() })

	eventually(t, 60*time.Second, "both tasks ran", func() bool {
		st, err := statusOrErr(s)
		return err == nil && st.LastTeneroResult != nil && st.LastSweepResult != nil &&
			!st.Tasks[pacer.TaskTenero].Running && !st.Tasks[pacer.TaskSweep].Running
	})
	shown := map[string]string{
		"pacer refresh all --json": pacerCmd("refresh", "all", "--json"),
		"pacer status --json":      pacerCmd("status", "--json"),
		"pacer status":             pacerCmd("status"),
		"pacer --help":             pacerCmd("--help"),
		"pacer worker --help":      pacerCmd("worker", "--help"),
		"pacer dev --help":         pacerCmd("dev", "--help"),
	}
	for _, path := range []string{"/metrics", "/api/scheduler/status", "/readyz", "/api/prices"} {
		resp, err := http.Get("http://" + httpAddr + path)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, resp.Body.Close())
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", path, body)
		shown["GET "+path] = string(body)
	}
	require.Contains(t, shown["GET /metrics"], "# TYPE")

	// A graceful stop logs its own lines too.
	require.NoError(t, proc.Process.Signal(syscall.SIGTERM))
	done := make(chan error, 1)
	go func() { done <- proc.Wait() }()
	select {
	case <-done:
	case <-time.After(45 * time.Second):
		require.Fail(t, "the worker did not stop on SIGTERM")
	}
	shown["the worker's output"] = out.String()
	require.Contains(t, shown["the worker's output"], `"level":"debug"`, "the worker logged at debug")

	for what, text := range shown {
		requireNoSecrets(t, what, text)
	}
	require.Contains(t, shown["pacer --help"], "tenero-api-key", "the flag is listed, without its value")
	require.Contains(t, shown["pacer --help"], "postgres:xxxxx@", "the database URL is shown, its password masked")
	up.sawKeys(t)
	lines := strings.Count(shown["the worker's output"], "\n")
	t.Logf("figures: %d outputs of the pacer binary searched (%d worker log lines at debug, /metrics, status, --help); 0 leaks", len(shown), lines)
}
