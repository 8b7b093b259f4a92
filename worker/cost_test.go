//go:build cost

package worker_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/pacer-dev/pacer/internal/sim"
	"github.com/pacer-dev/pacer/internal/testenv"
	"github.com/pacer-dev/pacer/workflows"
)

// TestMeasuredCost is `make cost`: the real stack — the dev server,
// Postgres, the simulator, one `pacer worker` and one `pacer serve` that
// is scraped like Prometheus — runs at the default cadences scaled by
// COST_SCALE (default 30: tenero every 10 s, the sweep every 2 s, so an
// hour passes in two minutes; the runs take real time, which a larger scale
// would make longer than their cadence, unlike at the default cadence) for
// COST_HOURS simulated hours (default 6). It then
// counts every billed action from the workflow's real history (all runs of
// the chain) and from the processes' client metrics, per simulated day,
// against the floor: one timer per wake-up, one activity per run, and the
// heartbeats liveness needs. The table goes to COST_OUT (default
// /tmp/pacer-cost.md).
func TestMeasuredCost(t *testing.T) {
	ctx := context.Background()
	scale := envInt(t, "COST_SCALE", 30)
	hours := envInt(t, "COST_HOURS", 6)
	scrapeEvery := 15 * time.Second
	bin := testenv.PacerBinary(t)

	s := newStack(t, workflows.Config{})
	// Limits far from binding, scaled worlds apart: the budgets are in real
	// time, the cadences are not, and pacing must not be what the figures
	// measure. The agents come from the simulator's world.
	unlimited := sim.Limits{PerMinute: 1 << 30, PerMonth: 1 << 30}
	s.sim = sim.New(sim.Config{Seed: 7, Tenero: sim.TeneroConfig{Anonymous: unlimited},
		Hiro: sim.HiroConfig{Agents: 12, Anonymous: unlimited}})
	hs := httptest.NewServer(s.sim)
	t.Cleanup(hs.Close)
	require.NoError(t, s.sim.World().Seed(ctx, s.st))

	teneroEvery := workflows.DefaultTeneroEvery / time.Duration(scale)
	sweepEvery := workflows.DefaultSweepEvery / time.Duration(scale)
	env := []string{
		"TEMPORAL_ADDRESS=" + temporalHostPort, "TEMPORAL_NAMESPACE=default",
		"PACER_TASK_QUEUE=" + s.sched.TaskQueue, "PACER_WORKFLOW_ID=" + s.sched.WorkflowID,
		"DATABASE_URL=" + s.dbURL, "TENERO_BASE_URL=" + hs.URL, "HIRO_BASE_URL=" + hs.URL,
		"PACER_HIRO_PER_MINUTE=1000000", "PACER_LOG_LEVEL=warn",
		"PACER_TENERO_EVERY=" + teneroEvery.String(), "PACER_SWEEP_EVERY=" + sweepEvery.String(),
	}
	workerMetrics, apiAddr := freeAddr(t), freeAddr(t)
	startPacer(t, bin, "worker", append(env, "PACER_METRICS_ADDR="+workerMetrics), "worker", "--http=")
	startPacer(t, bin, "api", append(env, "PACER_HTTP_ADDR="+apiAddr), "serve")

	eventually(t, 60*time.Second, "the scheduler runs", func() bool { _, err := statusOrErr(s); return err == nil })
	start := time.Now()
	wall := time.Duration(hours) * time.Hour / time.Duration(scale)
	t.Logf("measuring %d simulated hours: %s of real time, tenero every %s, sweep every %s, /metrics scraped every %s",
		hours, wall, teneroEvery, sweepEvery, scrapeEvery)
	scrapes := 0
	for time.Since(start) < wall {
		time.Sleep(scrapeEvery)
		code, _, err := httpGet("http://" + apiAddr + "/metrics")
		require.NoError(t, err)
		require.Equal(t, 200, code)
		scrapes++
	}
	client := metricsOf(t, workerMetrics, apiAddr)

	h := countHistory(t, s)
	days := h.span.Hours() * float64(scale) / 24
	perDay := func(n float64) string { return strconv.FormatFloat(n/days, 'f', 0, 64) }
	op := func(name string) float64 {
		v, _ := metricSum(client, "temporal_request_total", `operation="`+name+`"`)
		return v
	}
	heartbeats, queries := op("RecordActivityTaskHeartbeat"), op("QueryWorkflow")
	signals := float64(h.signals)
	updates := op("UpdateWorkflowExecution")
	actions := float64(h.timers+h.attempts+h.continued) + heartbeats + signals + updates + queries
	floor := float64(h.wakeups+h.runs) + float64(h.heartbeatsNeeded)
	ratio := actions / floor

	var b strings.Builder
	fmt.Fprintf(&b, "Measured by `make cost` on %s: the default cadences ÷%d (tenero every %s, the sweep every %s), "+
		"%.1f simulated hours (%s real), one worker, one `pacer serve` scraped every %s (%d scrapes). Per simulated day:\n\n",
		time.Now().UTC().Format("2006-01-02"), scale, teneroEvery, sweepEvery, h.span.Hours()*float64(scale), h.span.Round(time.Second),
		scrapeEvery, scrapes)
	fmt.Fprintln(&b, "| billed action | measured | floor | from |")
	fmt.Fprintln(&b, "|---|--:|--:|---|")
	fmt.Fprintf(&b, "| timers | %s | %s | history: TimerStarted; floor: wake-ups that started a run |\n", perDay(float64(h.timers)), perDay(float64(h.wakeups)))
	fmt.Fprintf(&b, "| activity attempts | %s | %s | history: ActivityTaskStarted attempts; floor: runs (tenero %s, sweep %s) |\n",
		perDay(float64(h.attempts)), perDay(float64(h.runs)), perDay(float64(h.perTask[workflows.ActivityRefreshTenero])), perDay(float64(h.perTask[workflows.ActivitySweep])))
	fmt.Fprintf(&b, "| heartbeats | %s | %s | worker: RecordActivityTaskHeartbeat requests; floor: one per 96 s of a run |\n", perDay(heartbeats), perDay(float64(h.heartbeatsNeeded)))
	fmt.Fprintf(&b, "| signals | %s | 0 | history |\n", perDay(signals))
	fmt.Fprintf(&b, "| updates | %s | 0 | clients: UpdateWorkflowExecution requests |\n", perDay(updates))
	fmt.Fprintf(&b, "| queries | %s | 0 | clients: QueryWorkflow requests (the API's metrics read the memo) |\n", perDay(queries))
	fmt.Fprintf(&b, "| continue-as-new | %s | 0 | history: runs of the chain − 1 |\n", perDay(float64(h.continued)))
	fmt.Fprintf(&b, "| **total** | **%s** | **%s** | **×%.3f the floor** |\n\n", perDay(actions), perDay(floor), ratio)
	fmt.Fprintf(&b, "Not billed, for the record: %s describes (the API's metrics and the workers' keep-alive), "+
		"%s memo upserts, %s version markers, %s history events a day.\n",
		perDay(op("DescribeWorkflowExecution")), perDay(float64(h.memos)), perDay(float64(h.markers)), perDay(float64(h.events)))
	out := os.Getenv("COST_OUT")
	if out == "" {
		out = "/tmp/pacer-cost.md"
	}
	require.NoError(t, os.WriteFile(out, []byte(b.String()), 0o644))
	t.Logf("wrote %s:\n%s", out, b.String())
	require.LessOrEqual(t, ratio, 1.1, "measured cost above 1.1× the floor")
}

func envInt(t *testing.T, key string, def int) int {
	t.Helper()
	v := os.Getenv(key)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	require.NoError(t, err, key)
	require.Positive(t, n, key)
	return n
}

// historyCount is what the scheduler's histories say it did.
type historyCount struct {
	span                              time.Duration
	timers, runs, attempts, continued int
	wakeups, heartbeatsNeeded         int
	signals, memos, markers, events   int
	perTask                           map[string]int
}

// countHistory reads every run of the scheduler's chain.
func countHistory(t *testing.T, s *stack) historyCount {
	t.Helper()
	ctx := context.Background()
	resp, err := s.tc.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
		Query: fmt.Sprintf("WorkflowId = '%s'", s.sched.WorkflowID),
	})
	require.NoError(t, err)
	h := historyCount{perTask: map[string]int{}}
	var first, last time.Time
	hbEvery := time.Duration(float64(workflows.DefaultHeartbeatTimeout) * 0.8)
	for _, e := range resp.GetExecutions() {
		it := s.tc.GetWorkflowHistory(ctx, s.sched.WorkflowID, e.GetExecution().GetRunId(), false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		timerFired := false // since the last workflow task completed
		byTimer := map[int64]bool{}
		started := map[int64]time.Time{}
		for it.HasNext() {
			ev, err := it.Next()
			require.NoError(t, err)
			h.events++
			at := ev.GetEventTime().AsTime()
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
				timerFired = true
			case enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
				byTimer[ev.GetEventId()] = timerFired
				timerFired = false
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
				a := ev.GetActivityTaskScheduledEventAttributes()
				h.runs++
				h.attempts++
				h.perTask[a.GetActivityType().GetName()]++
				if wft := a.GetWorkflowTaskCompletedEventId(); byTimer[wft] {
					h.wakeups++
					byTimer[wft] = false // one timer wakes every run it starts
				}
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
				// Written when the attempt ends, with its number: retries
				// count; a run still in flight at the end counts once.
				a := ev.GetActivityTaskStartedEventAttributes()
				h.attempts += int(a.GetAttempt()) - 1
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
	h.span = last.Sub(first)
	return h
}
