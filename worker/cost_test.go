//go:build cost

package worker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/grpc"

	"github.com/pacer-dev/pacer/internal/cron"
	"github.com/pacer-dev/pacer/internal/sim"
	"github.com/pacer-dev/pacer/internal/testenv"
	"github.com/pacer-dev/pacer/internal/webhooktest"
	"github.com/pacer-dev/pacer/worker"
	"github.com/pacer-dev/pacer/workflows"
)

// TestMeasuredCost is `make cost`: the real stack — the dev server,
// Postgres, the simulator, one `pacer worker` and one `pacer serve` — with
// every task sped up by COST_SCALE (default 30: tenero every 10 s, the
// sweep every 2 s, rollup's hourly cron every 2 minutes, deliver after each
// rollup to a subscriber), for COST_HOURS simulated hours (default 6). The
// conditions the bill must hold under all run at once: the Hiro budget is
// month-bound (the simulator's month quota makes pacing wait), an
// operator's page is open (fetched at its own refresh interval), a `pacer
// status --watch` runs, and /metrics is scraped like Prometheus.
//
// It counts every billed action from the workflow's real history (all runs
// of the chain) and from the processes' client metrics, per simulated day,
// against a floor computed from the configuration, not from the history
// it judges: one wake-up (timer) per distinct instant a run is due — tenero
// on the sweep's grid, the sweep at its cadence or as the month's budget
// allows, rollup at each cron fire; deliver starts when a rollup ends,
// without a timer — one activity per run, the heartbeats the runs'
// lengths need, nothing else. Each condition's own share is shown apart.
// The table goes to COST_OUT (default /tmp/pacer-cost.md).
func TestMeasuredCost(t *testing.T) {
	ctx := context.Background()
	scale := envInt(t, "COST_SCALE", 30)
	hours := envInt(t, "COST_HOURS", 6)
	require.Zero(t, 60%scale, "COST_SCALE must divide 60: rollup's hourly cron becomes every 60/COST_SCALE minutes")
	scrapeEvery := 15 * time.Second
	bin := testenv.PacerBinary(t)

	s := newStack(t, workflows.Config{})
	// Tenero unbound; Hiro bound by its month: costMonthQuota requests for
	// the whole (real) month, of which the rest of it remains, so month
	// pacing decides when the sweep may run (SPEC §5.4).
	unlimited := sim.Limits{PerMinute: 1 << 30, PerMonth: 1 << 30}
	monthQuota := envInt(t, "COST_HIRO_MONTH", costMonthQuota) // 1<<30: unbound
	s.sim = sim.New(sim.Config{Seed: 7, Tenero: sim.TeneroConfig{Anonymous: unlimited},
		Hiro: sim.HiroConfig{Agents: 12, Anonymous: sim.Limits{PerMinute: 1 << 30, PerMonth: monthQuota}}})
	hs := httptest.NewServer(s.sim)
	t.Cleanup(hs.Close)
	require.NoError(t, s.sim.World().Seed(ctx, s.st))
	receiver := webhooktest.New(webhooktest.Behaviour{})
	t.Cleanup(receiver.Close)

	teneroEvery := workflows.DefaultTeneroEvery / time.Duration(scale)
	sweepEvery := workflows.DefaultSweepEvery / time.Duration(scale)
	rollupEvery := time.Hour / time.Duration(scale)
	rollupCron := fmt.Sprintf("*/%d * * * *", int(rollupEvery/time.Minute))
	env := []string{
		"TEMPORAL_ADDRESS=" + temporalHostPort, "TEMPORAL_NAMESPACE=default",
		"PACER_TASK_QUEUE=" + s.sched.TaskQueue, "PACER_WORKFLOW_ID=" + s.sched.WorkflowID,
		"DATABASE_URL=" + s.dbURL, "TENERO_BASE_URL=" + hs.URL, "HIRO_BASE_URL=" + hs.URL,
		"PACER_HIRO_PER_MINUTE=1000000", "PACER_LOG_LEVEL=warn",
		// The subscriber's receiver is on loopback, which subscriber
		// creation and the deliveries refuse otherwise.
		"PACER_WEBHOOK_ALLOW_PRIVATE=1",
		"PACER_TENERO_EVERY=" + teneroEvery.String(), "PACER_SWEEP_EVERY=" + sweepEvery.String(),
		`PACER_SCHEDULES={"rollup":{"cron":"` + rollupCron + `","catchup":"coalesce"}}`,
	}
	addSubscriber(t, bin, env, receiver)
	// The operator's page and /metrics are on the operator listener (SPEC
	// §7), on an address of its own (the default one may be taken).
	workerMetrics, apiAddr, adminAddr := freeAddr(t), freeAddr(t), freeAddr(t)
	startPacer(t, bin, "worker", append(env, "PACER_METRICS_ADDR="+workerMetrics), "worker", "--http=")
	startPacer(t, bin, "api", append(env, "PACER_HTTP_ADDR="+apiAddr, "PACER_ADMIN_ADDR="+adminAddr), "serve")

	eventually(t, 60*time.Second, "the scheduler runs", func() bool { _, err := statusOrErr(s); return err == nil })
	// The watchers: a `pacer status --watch` at its shortest interval, with
	// its own client metrics.
	watch := startPacer(t, bin, "watch", env, "status", "--watch", "--every=10s")
	// And the same reads in process, on a client that counts its calls:
	// what a watcher costs.
	watcher := newCountingWatcher(t, s.sched.WorkflowID)
	wctx, stopWatcher := context.WithCancel(ctx)
	defer stopWatcher()
	go watcher.run(wctx, 10*time.Second)
	start := time.Now()
	wall := time.Duration(hours) * time.Hour / time.Duration(scale)
	pageEvery := pageRefresh(t, adminAddr)
	t.Logf("measuring %d simulated hours: %s of real time, tenero every %s, sweep every %s, rollup %q, page every %s, /metrics every %s",
		hours, wall, teneroEvery, sweepEvery, rollupCron, pageEvery, scrapeEvery)
	scrapes, pages := 0, 0
	nextScrape, nextPage := start, start
	for time.Since(start) < wall {
		now := time.Now()
		if !now.Before(nextScrape) {
			code, _, err := httpGet("http://" + adminAddr + "/metrics")
			require.NoError(t, err)
			require.Equal(t, 200, code)
			scrapes++
			nextScrape = now.Add(scrapeEvery)
		}
		if !now.Before(nextPage) {
			code, _, err := httpGet("http://" + adminAddr + "/")
			require.NoError(t, err)
			require.Equal(t, 200, code)
			pages++
			nextPage = now.Add(pageEvery)
		}
		time.Sleep(time.Second)
	}
	client := metricsOf(t, workerMetrics, adminAddr)
	watchOut := watch.out.String()
	require.Contains(t, watchOut, "next wake", "status --watch showed the scheduler")

	h := countHistory(t, s)
	days := h.span.Hours() * float64(scale) / 24
	perDay := func(n float64) string { return strconv.FormatFloat(n/days, 'f', 0, 64) }
	op := func(name string) float64 {
		v, _ := metricSum(client, "temporal_request_total", `operation="`+name+`"`)
		return v
	}
	heartbeats := op("RecordActivityTaskHeartbeat")
	apiQueries := op("QueryWorkflow")
	stopWatcher()
	watchQueries := float64(watcher.calls("QueryWorkflow"))
	signals := float64(h.signals)
	updates := op("UpdateWorkflowExecution")
	actions := float64(h.timers+h.attempts+h.continued) + heartbeats + signals + updates + apiQueries + watchQueries

	// The floor from the configuration over the measured span (simulated
	// time): each task's run at the start, then its runs as configured —
	// the sweep's as its month budget allows, deliver one after each rollup.
	span := h.span * time.Duration(scale) // simulated
	every := map[string]time.Duration{workflows.ActivityRefreshTenero: workflows.DefaultTeneroEvery,
		workflows.ActivitySweep: workflows.DefaultSweepEvery}
	cfgRuns := map[string]float64{}
	for a, d := range every {
		cfgRuns[a] = 1 + float64(span/d) // a run at the start, then one per period
	}
	// A cron task runs at its fire times only: the configured spec's fires
	// within the measured span (real time, as the cron runs), however the
	// span falls on the hour.
	cfgRuns[workflows.ActivityRollup] = float64(cronFires(t, rollupCron, h.first, h.last))
	// The sweep runs at its cadence or, when its budget or its agents say
	// so, later: its runs are then the ones it made.
	sweepOwnPace := float64(h.perTask[workflows.ActivitySweep]) < cfgRuns[workflows.ActivitySweep]*9/10
	if sweepOwnPace {
		cfgRuns[workflows.ActivitySweep] = float64(h.perTask[workflows.ActivitySweep])
	}
	cfgRuns[workflows.ActivityDeliver] = 1 + cfgRuns[workflows.ActivityRollup]
	// Wake-ups: one timer per run after the first ones, except deliver's (a
	// rollup's end starts it) and, as tenero's wake-ups align with the
	// sweep's (SPEC §3.6), one timer for both where they can share: tenero
	// on the sweep's grid while the sweep runs at its cadence, and at its
	// own pace at least as many wake-ups as the more frequent of the two;
	// plus the timer armed for the next run when the measure ends.
	cfgWakeups := max(cfgRuns[workflows.ActivitySweep], cfgRuns[workflows.ActivityRefreshTenero]) - 1 +
		cfgRuns[workflows.ActivityRollup] + 1
	if !sweepOwnPace {
		cfgWakeups = cfgRuns[workflows.ActivitySweep] - 1 + cfgRuns[workflows.ActivityRollup] + 1
	}
	var cfgRunTotal float64
	for _, n := range cfgRuns {
		cfgRunTotal += n
	}
	floor := cfgWakeups + cfgRunTotal + float64(h.heartbeatsNeeded)
	ratio := actions / floor

	var b strings.Builder
	fmt.Fprintf(&b, "Measured by `make cost` on %s: the default cadences ÷%d (tenero every %s, the sweep every %s, rollup %q, deliver after each rollup to 1 subscriber), "+
		"Hiro month-bound (%d requests a month), an operator's page fetched every %s (%d fetches), a `pacer status --watch --every=10s`, "+
		"%.1f simulated hours (%s real), one worker, one `pacer serve` scraped every %s (%d scrapes). Per simulated day:\n\n",
		time.Now().UTC().Format("2006-01-02"), scale, teneroEvery, sweepEvery, rollupCron, monthQuota, pageEvery, pages,
		h.span.Hours()*float64(scale), h.span.Round(time.Second), scrapeEvery, scrapes)
	fmt.Fprintln(&b, "| billed action | measured | floor (configuration) | from |")
	fmt.Fprintln(&b, "|---|--:|--:|---|")
	fmt.Fprintf(&b, "| timers | %s | %s | history: TimerStarted (%s fired without starting a run); floor: one per distinct due instant (sweep at its own pace: %v) |\n",
		perDay(float64(h.timers)), perDay(cfgWakeups), perDay(float64(h.timers-h.wakeups)), sweepOwnPace)
	for _, a := range []string{workflows.ActivityRefreshTenero, workflows.ActivitySweep, workflows.ActivityRollup, workflows.ActivityDeliver} {
		fmt.Fprintf(&b, "| %s activities | %s | %s | history: scheduled (attempts %s) |\n", a, perDay(float64(h.perTask[a])),
			perDay(cfgRuns[a]), perDay(float64(h.attemptsPerTask[a])))
	}
	fmt.Fprintf(&b, "| heartbeats | %s | %s | worker: RecordActivityTaskHeartbeat requests; floor: one per 96 s of a run |\n", perDay(heartbeats), perDay(float64(h.heartbeatsNeeded)))
	fmt.Fprintf(&b, "| signals | %s | 0 | history |\n", perDay(signals))
	fmt.Fprintf(&b, "| updates | %s | 0 | clients: UpdateWorkflowExecution requests |\n", perDay(updates))
	fmt.Fprintf(&b, "| queries: API, page (%d fetches), /metrics | %s | 0 | `pacer serve`: QueryWorkflow requests (status from the memo, by description) |\n", pages, perDay(apiQueries))
	fmt.Fprintf(&b, "| queries: `status --watch` | %s | 0 | the watcher's QueryWorkflow requests |\n", perDay(watchQueries))
	fmt.Fprintf(&b, "| continue-as-new | %s | 0 | history: runs of the chain − 1 |\n", perDay(float64(h.continued)))
	fmt.Fprintf(&b, "| **total** | **%s** | **%s** | **×%.3f the floor** |\n\n", perDay(actions), perDay(floor), ratio)
	fmt.Fprintf(&b, "Not billed, for the record: %s describes (the API's status and metrics, the watcher, the workers' keep-alive), "+
		"%s memo upserts, %s version markers, %s history events a day.\n",
		perDay(op("DescribeWorkflowExecution")+float64(watcher.calls("DescribeWorkflowExecution"))), perDay(float64(h.memos)), perDay(float64(h.markers)), perDay(float64(h.events)))
	out := os.Getenv("COST_OUT")
	if out == "" {
		out = "/tmp/pacer-cost.md"
	}
	require.NoError(t, os.WriteFile(out, []byte(b.String()), 0o644))
	t.Logf("wrote %s:\n%s", out, b.String())
	require.LessOrEqual(t, ratio, 1.1, "measured cost above 1.1× the floor")
}

// cronFires counts the fires of a cron spec after from, up to to.
func cronFires(t *testing.T, spec string, from, to time.Time) int {
	t.Helper()
	sp, err := cron.ParseSpec([]byte(`{"cron":"` + spec + `"}`))
	require.NoError(t, err)
	sched, err := cron.New(sp)
	require.NoError(t, err)
	n := 0
	for _, f := range sched.Between(from, to) {
		if !f.Skip {
			n++
		}
	}
	return n
}

// costMonthQuota is the simulated Hiro month quota: far below what the sped
// up sweep would spend, so month pacing decides when it runs.
const costMonthQuota = 30_000

// addSubscriber registers the receiver for hourly rollups through the CLI.
func addSubscriber(t *testing.T, bin string, env []string, r *webhooktest.Receiver) {
	t.Helper()
	cmd := exec.Command(bin, "subscribers", "add", "--url", r.URL, "--events", "hourly", "--json")
	cmd.Env = append([]string{"PATH=/usr/bin:/bin"}, env...)
	out, err := cmd.Output()
	require.NoError(t, err, "pacer subscribers add: %s", out)
	var sub struct{ Secret string }
	require.NoError(t, json.Unmarshal(out, &sub))
	r.SetSecret(sub.Secret)
}

// pageRefresh is the operator's page's own refresh interval, read from the
// page as a browser would.
func pageRefresh(t *testing.T, apiAddr string) time.Duration {
	t.Helper()
	code, body, err := httpGet("http://" + apiAddr + "/")
	require.NoError(t, err)
	require.Equal(t, 200, code)
	m := regexp.MustCompile(`http-equiv="refresh" content="(\d+)"`).FindStringSubmatch(body)
	require.NotNil(t, m, "the page says how often it refreshes")
	n, err := strconv.Atoi(m[1])
	require.NoError(t, err)
	return time.Duration(n) * time.Second
}

// countingWatcher reads the status as `pacer status --watch` does
// (worker.StatusShared), on a client that counts its gRPC calls by method.
type countingWatcher struct {
	tc         client.Client
	workflowID string
	mu         sync.Mutex
	n          map[string]int
}

func newCountingWatcher(t *testing.T, workflowID string) *countingWatcher {
	t.Helper()
	w := &countingWatcher{workflowID: workflowID, n: map[string]int{}}
	count := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		w.mu.Lock()
		w.n[path.Base(method)]++
		w.mu.Unlock()
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	tc, err := client.Dial(client.Options{HostPort: temporalHostPort,
		ConnectionOptions: client.ConnectionOptions{DialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(count)}}})
	require.NoError(t, err)
	t.Cleanup(tc.Close)
	w.tc = tc
	return w
}

func (w *countingWatcher) run(ctx context.Context, every time.Duration) {
	for {
		_, _ = worker.StatusShared(ctx, w.tc, w.workflowID)
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
	}
}

func (w *countingWatcher) calls(method string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n[method]
}

// historyCount is what the scheduler's histories say it did.
type historyCount struct {
	span                              time.Duration
	first, last                       time.Time
	timers, runs, attempts, continued int
	wakeups, heartbeatsNeeded         int
	signals, memos, markers, events   int
	perTask, attemptsPerTask          map[string]int
}

// countHistory reads every run of the scheduler's chain.
func countHistory(t *testing.T, s *stack) historyCount {
	t.Helper()
	ctx := context.Background()
	resp, err := s.tc.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
		Query: fmt.Sprintf("WorkflowId = '%s'", s.sched.WorkflowID),
	})
	require.NoError(t, err)
	h := historyCount{perTask: map[string]int{}, attemptsPerTask: map[string]int{}}
	types := map[int64]string{}
	var first, last time.Time
	hbEvery := time.Duration(float64(workflows.DefaultHeartbeatTimeout) * 0.8)
	// COST_HISTORY names a file that gets every event, one line each, to
	// see where actions went.
	var dump *os.File
	if path := os.Getenv("COST_HISTORY"); path != "" {
		f, err := os.Create(path)
		require.NoError(t, err)
		defer f.Close()
		dump = f
	}
	for _, e := range resp.GetExecutions() {
		it := s.tc.GetWorkflowHistory(ctx, s.sched.WorkflowID, e.GetExecution().GetRunId(), false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		timersFired := 0 // since the last workflow task completed
		byTimer := map[int64]int{}
		started := map[int64]time.Time{}
		for it.HasNext() {
			ev, err := it.Next()
			require.NoError(t, err)
			h.events++
			at := ev.GetEventTime().AsTime()
			if dump != nil {
				fmt.Fprintf(dump, "%d %s %s %v\n", ev.GetEventId(), at.Format("15:04:05.000"), ev.GetEventType(), ev.GetAttributes())
			}
			if first.IsZero() || at.Before(first) {
				first = at
			}
			if at.After(last) {
				last = at
			}
			switch ev.GetEventType() {
			case enumspb.EVENT_TYPE_TIMER_STARTED:
				h.timers++
			case enumspb.EVENT_TYPE_TIMER_FIRED:
				timersFired++
			case enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
				byTimer[ev.GetEventId()] = timersFired
				timersFired = 0
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
				a := ev.GetActivityTaskScheduledEventAttributes()
				h.runs++
				h.attempts++
				h.perTask[a.GetActivityType().GetName()]++
				h.attemptsPerTask[a.GetActivityType().GetName()]++
				types[ev.GetEventId()] = a.GetActivityType().GetName()
				// The timers that fired before the workflow task that
				// scheduled a run woke it (two due a moment apart may fire
				// into one task); counted once, with its first run.
				wft := a.GetWorkflowTaskCompletedEventId()
				h.wakeups += byTimer[wft]
				byTimer[wft] = 0
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
				// Written when the attempt ends, with its number: retries
				// count; a run still in flight at the end counts once.
				a := ev.GetActivityTaskStartedEventAttributes()
				h.attempts += int(a.GetAttempt()) - 1
				h.attemptsPerTask[types[a.GetScheduledEventId()]] += int(a.GetAttempt()) - 1
				started[a.GetScheduledEventId()] = at
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED, enumspb.EVENT_TYPE_ACTIVITY_TASK_FAILED, enumspb.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT:
				id := ev.GetActivityTaskCompletedEventAttributes().GetScheduledEventId() +
					ev.GetActivityTaskFailedEventAttributes().GetScheduledEventId() +
					ev.GetActivityTaskTimedOutEventAttributes().GetScheduledEventId()
				if s, ok := started[id]; ok {
					h.heartbeatsNeeded += int(at.Sub(s) / hbEvery)
				}
			case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
				h.signals++
			case enumspb.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED:
				h.memos++
			case enumspb.EVENT_TYPE_MARKER_RECORDED:
				h.markers++
			case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
				h.continued++
			}
		}
	}
	h.span, h.first, h.last = last.Sub(first), first, last
	return h
}
