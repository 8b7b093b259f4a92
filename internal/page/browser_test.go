package page_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/activities"
	"github.com/pacer-dev/pacer/internal/api"
	"github.com/pacer-dev/pacer/internal/catalog"
	"github.com/pacer-dev/pacer/internal/discovery"
	"github.com/pacer-dev/pacer/internal/logging"
	"github.com/pacer-dev/pacer/internal/sim"
	"github.com/pacer-dev/pacer/internal/testenv"
	"github.com/pacer-dev/pacer/worker"
	"github.com/pacer-dev/pacer/workflows"
)

// ChromiumEnv names the browser the page's browser test drives; by default
// it is Debian's chromium, which make test installs.
const ChromiumEnv = "PACER_TEST_CHROMIUM"

// ScreenshotsEnv names the directory the browser test saves its
// screenshots in (default: a fresh directory under the system's temporary
// directory, printed in the test's log).
const ScreenshotsEnv = "PACER_TEST_SCREENSHOTS"

func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv(ChromiumEnv); p != "" {
		return p
	}
	for _, name := range []string{"/usr/bin/chromium", "chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatalf("no Chromium: the page's browser test drives Debian's chromium. Run `make test` (it installs it: apt-get install -y chromium) or set %s to a Chromium binary", ChromiumEnv)
	return ""
}

// browserStack is what `make dev` runs, in one test: Postgres, the
// simulator with its agents written in, a Temporal dev server, a worker
// with the scheduler, and the API served over HTTP.
type browserStack struct {
	d           *db
	world       *sim.World
	tc          client.Client
	sched       worker.Scheduler
	url         string
	statusCalls atomic.Int32
}

func newBrowserStack(t *testing.T) *browserStack {
	t.Helper()
	ctx := context.Background()
	s := &browserStack{d: newDB(t)}
	log := zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))

	// A small world with history in the last day and a keyed Hiro plan,
	// so both upstreams report a month quota.
	world := sim.New(sim.Config{Seed: 21, Hiro: sim.HiroConfig{Agents: 12}})
	simSrv := httptest.NewServer(world)
	t.Cleanup(simSrv.Close)
	s.world = world.World()

	tmp, err := testenv.StartTemporal(ctx)
	require.NoError(t, err, "a Temporal dev server")
	t.Cleanup(tmp.Stop)
	s.tc, err = client.Dial(client.Options{HostPort: tmp.HostPort, Logger: logging.Temporal(log)})
	require.NoError(t, err)
	t.Cleanup(s.tc.Close)

	acts := activities.New(activities.Options{Discovery: discovery.Config{Mode: "agents"}, Store: s.d.st, Logger: log,
		TeneroBaseURL: simSrv.URL, HiroBaseURL: simSrv.URL, HiroAPIKey: "sim-key-not-a-secret",
		CompetitionStart: world.World().CompetitionStart()})
	id := "page-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	s.sched = worker.Scheduler{WorkflowID: id, TaskQueue: id}
	w := worker.New(s.tc, id, acts)
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	_, err = worker.EnsureRunning(ctx, s.tc, s.sched)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.tc.TerminateWorkflow(context.Background(), id, "", "test over") })

	h := api.New(api.Options{Store: s.d.st, Catalog: catalog.Default(), Logger: log, Verifier: acts.FastVerifier,
		HiroBudget: acts.Budget,
		Status: func(ctx context.Context) (workflows.Status, error) {
			s.statusCalls.Add(1)
			return worker.Status(ctx, s.tc, id)
		},
		// Longer than the test: every view must share one query.
		StatusTTL: time.Hour,
	})
	// The page is on the operator listener (SPEC §7).
	srv := httptest.NewServer(h.Operator())
	t.Cleanup(srv.Close)
	s.url = srv.URL + "/"
	return s
}

// fill runs the scheduler's tasks for real, then pauses it so the data the
// page shows holds still, and adds what the stack does not make by itself
// in a few seconds: a failed run, a stale price, deliveries.
func (s *browserStack) fill(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	// The scheduler runs each task once as it starts; the agents come
	// after, so the refreshes below do the work and their results are the
	// ones the ledger keeps.
	require.Eventually(t, func() bool {
		st, err := worker.Status(ctx, s.tc, s.sched.WorkflowID)
		return err == nil && st.LastTeneroRunAt != nil && st.LastSweepRunAt != nil &&
			!st.Tasks[pacer.TaskTenero].Running && !st.Tasks[pacer.TaskSweep].Running
	}, 30*time.Second, 50*time.Millisecond, "the scheduler's first runs")
	require.NoError(t, s.world.Seed(ctx, s.d.st))
	for _, task := range []string{pacer.TaskTenero, pacer.TaskSweep} {
		_, err := worker.RefreshNow(ctx, s.tc, s.sched.WorkflowID, task)
		require.NoError(t, err, "refresh %s", task)
	}
	require.NoError(t, worker.Signal(ctx, s.tc, s.sched.WorkflowID, workflows.SignalPause, map[string]string{"for": "1h"}))
	require.Eventually(t, func() bool {
		st, err := worker.Status(ctx, s.tc, s.sched.WorkflowID)
		return err == nil && st.PausedUntil != nil && !st.Tasks[pacer.TaskTenero].Running && !st.Tasks[pacer.TaskSweep].Running
	}, 30*time.Second, 50*time.Millisecond, "the scheduler pauses")

	d := s.d
	d.run(run{task: pacer.TaskTenero, nominal: time.Now().Add(-2 * time.Hour), status: pacer.RunFailed, took: time.Second,
		finished: true, class: string(pacer.ClassServerError), result: map[string]any{"requests": 3}})
	d.exec(`update token_prices set fetched_at = now() - interval '3 hours' where token_id = 'stx'`)
	if d.has("subscribers") && d.has("deliveries") {
		d.subscriber("hooks-a", "https://ops:"+urlPassword+"@a.example.com/in?"+urlToken, subSecret, "active")
		d.subscriber("hooks-b", "https://b.example.com/in", "whsec_b", "active")
		for i, status := range []string{"pending", "pending", "retrying", "exhausted", "delivered"} {
			next := time.Now().Add(time.Duration(i+1) * time.Minute)
			d.delivery("hooks-a", status, time.Now().Truncate(time.Hour).Add(-time.Duration(i+1)*time.Hour), &next)
		}
		d.delivery("hooks-b", "exhausted", time.Now().Truncate(time.Hour).Add(-time.Hour), nil)
	}
}

// figures are the page's marked figures: data-k → text (repeated keys keep
// every value, in page order).
type figures map[string][]string

func (f figures) one(t *testing.T, key string) string {
	t.Helper()
	v := f[key]
	require.Len(t, v, 1, "figure %s", key)
	return v[0]
}

// expected is what Postgres says each figure must be, by the test's own
// queries.
type expected map[string]int64

func oracle(t *testing.T, d *db) expected {
	t.Helper()
	e := expected{}
	month := `finished_at >= date_trunc('month', now(), 'UTC')`
	for upstream, task := range map[string]string{"tenero": pacer.TaskTenero, "hiro": pacer.TaskSweep} {
		e["budget."+upstream+".spent"] = d.count(`select coalesce(sum((result->>'requests')::int), 0) from task_runs
where task = $1 and `+month, task)
		e["budget."+upstream+".perday"] = d.count(`select coalesce(sum((result->>'requests')::int), 0) from task_runs
where task = $1 and finished_at > now() - interval '24 hours'`, task)
		// The month gauge: the budget shared through Postgres where there
		// is one with a month quota, else the newest run's report with what
		// pacer spent before it.
		gauge := "budget." + upstream + ".month"
		if d.has("upstream_budget_state") && d.count(`select count(*) from upstream_budget_state
where upstream = $1 and state->'month'->'remaining' is not null and state->'month'->'limit' is not null`, upstream) == 1 {
			e[gauge+".left"] = d.count(`select (state->'month'->>'remaining')::bigint from upstream_budget_state where upstream = $1`, upstream)
			e[gauge+".capacity"] = d.count(`select (state->'month'->>'limit')::bigint from upstream_budget_state where upstream = $1`, upstream)
			continue
		}
		e[gauge+".left"] = d.count(`select (result->>'monthRemaining')::bigint from task_runs
where task = $1 and `+month+` and result->>'monthRemaining' is not null order by finished_at desc limit 1`, task)
		e[gauge+".capacity"] = e[gauge+".left"] + e["budget."+upstream+".spent"]
	}
	for _, task := range []string{pacer.TaskTenero, pacer.TaskSweep} {
		e["task."+task+".runs24h"] = d.count(`select count(*) from task_runs where task = $1 and nominal_at > now() - interval '23 hours'`, task)
	}
	tracked := `select jsonb_array_elements_text(value::jsonb) from competition_state where key = 'tenero_tracked_tokens'`
	e["prices.tracked"] = d.count(`select count(*) from (` + tracked + `) t`)
	e["prices.missing"] = d.count(`select count(*) from (` + tracked + `) t(id) where not exists (select 1 from token_prices p where p.token_id = t.id)`)
	e["prices.stale"] = d.count(`select count(*) from (` + tracked + `) t(id) join token_prices p on p.token_id = t.id
where p.fetched_at < now() - interval '65 minutes'`)
	e["prices.fresh"] = e["prices.tracked"] - e["prices.missing"] - e["prices.stale"]
	e["ledger.last48h"] = d.count(`select count(*) from swaps
where burn_block_time >= extract(epoch from date_trunc('hour', now()) - interval '47 hours')`)
	e["delay.all.swaps"] = d.count(`select count(*) from swaps where burn_block_time >= extract(epoch from now() - interval '24 hours')`)
	if d.has("agent_ingest") {
		for _, tier := range []string{"hot", "warm", "cold"} {
			e["agents."+tier+".agents"] = d.count(`select count(*) from agent_ingest where tier = $1`, tier)
			e["agents."+tier+".due"] = d.count(`select count(*) from agent_ingest where tier = $1 and (next_run_at is null or next_run_at <= now())`, tier)
		}
	}
	if d.has("deliveries") {
		for _, status := range []string{"pending", "retrying", "exhausted"} {
			e["deliveries."+status] = d.count(`select count(*) from deliveries where status = $1`, status)
			for _, sub := range []string{"hooks-a", "hooks-b"} {
				e["sub."+sub+"."+status] = d.count(`select count(*) from deliveries where subscriber_id = $1 and status = $2`, sub, status)
			}
		}
	}
	return e
}

// read takes what the page shows: its marked figures, from the DOM.
const readFigures = `(() => {
  const out = {};
  for (const e of document.querySelectorAll('[data-k]')) (out[e.dataset.k] ||= []).push(e.textContent.trim());
  return out;
})()`

func TestPageInChromium(t *testing.T) {
	t.Parallel()
	browser := chromium(t)
	s := newBrowserStack(t)
	s.fill(t)

	shots := os.Getenv(ScreenshotsEnv)
	if shots == "" {
		var err error
		shots, err = os.MkdirTemp("", "pacer-page-screenshots-")
		require.NoError(t, err)
	}
	require.NoError(t, os.MkdirAll(shots, 0o755))
	t.Logf("screenshots of the page: %s", shots)

	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(browser),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1100, 900),
	}
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 90*time.Second)
	defer cancel()

	// Every request the page makes: only the page itself may be fetched.
	var mu sync.Mutex
	var requested []string
	require.NoError(t, chromedp.Listen(ctx, func(ev any) {
		if e, ok := ev.(*network.EventRequestWillBeSent); ok {
			mu.Lock()
			requested = append(requested, e.Request.URL)
			mu.Unlock()
		}
	}), "start %s", browser)

	// A figure that changes between the database's reading and the page's
	// (an hour boundary passes) is read again, at most twice; a wrong one
	// fails.
	var (
		got     figures
		want    expected
		refresh string
		views   int
	)
	for range 3 {
		before := oracle(t, s.d)
		views++
		require.NoError(t, chromedp.Do(ctx,
			chromedp.Navigate(s.url),
			chromedp.WaitVisible(chromedp.ID("deliveries")),
		))
		attr, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.CSS(`meta[http-equiv="refresh"]`), "content"))
		require.NoError(t, err)
		refresh = attr.Value
		raw, err := chromedp.Run(ctx, chromedp.Evaluate[map[string][]string](readFigures))
		require.NoError(t, err)
		got, want = raw, before
		if equalExpected(before, oracle(t, s.d)) {
			break
		}
	}
	require.NoError(t, matches(got, want))
	require.Equal(t, "15", refresh)

	// What the scheduler's status says, and what only the database knows.
	require.Equal(t, "paused", got.one(t, "scheduler.state"))
	require.Equal(t, "ok", got.one(t, "task.tenero.outcome"))
	require.Equal(t, "ok", got.one(t, "task.sweep.outcome"))
	require.Equal(t, "paused", got.one(t, "task.tenero.reason"))
	require.Positive(t, want["budget.tenero.spent"])
	require.Positive(t, want["budget.hiro.spent"])
	require.Positive(t, want["ledger.last48h"], "the world has swaps in the last two days")
	require.Equal(t, int64(1), want["prices.stale"])
	if s.d.has("agent_ingest") {
		require.NotContains(t, got, "agents.absent")
	} else {
		require.Contains(t, got.one(t, "agents.absent"), "not available yet")
	}
	if !s.d.has("deliveries") {
		require.Contains(t, got.one(t, "absent"), "not available yet")
	}

	// The screenshots a person looks at: the whole page and each section.
	full, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(shots, "page.png"), full, 0o644))
	for _, section := range []string{"scheduler", "budgets", "prices", "ledger", "deliveries"} {
		shot, err := chromedp.Run(ctx, chromedp.Screenshot(chromedp.ID(section)))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(shots, section+".png"), shot, 0o644))
	}

	// Nothing but the page was fetched; nothing secret was shown.
	mu.Lock()
	for _, u := range requested {
		require.True(t, u == s.url || strings.HasPrefix(u, "data:"), "the page fetched %s", u)
	}
	mu.Unlock()
	html, err := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("html")))
	require.NoError(t, err)
	for _, secret := range []string{subSecret, urlPassword, urlToken, "sim-key-not-a-secret"} {
		require.NotContains(t, html, secret)
	}

	// Every view shared the API's one cached status: one Temporal query.
	require.EqualValues(t, 1, s.statusCalls.Load(), "%d page views made one status query", views)
}

func equalExpected(a, b expected) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// matches compares each expected figure with the page's. A gauge reads
// "left of capacity": its two numbers are the figures key.left and
// key.capacity.
func matches(got figures, want expected) error {
	var errs []error
	num := func(text string) (int64, error) {
		return strconv.ParseInt(strings.ReplaceAll(strings.TrimSpace(text), ",", ""), 10, 64)
	}
	for key, w := range want {
		page, ok := got[key]
		if gauge, part, found := cutLast(key); found && (part == "left" || part == "capacity") {
			page, ok = got[gauge]
			if ok && len(page) == 1 {
				left, capacity, found := strings.Cut(page[0], " of ")
				text := left
				if part == "capacity" {
					text = capacity
				}
				if n, err := num(text); !found || err != nil || n != w {
					errs = append(errs, fmt.Errorf("%s: page %q, Postgres %d", key, page[0], w))
				}
				continue
			}
		}
		if !ok || len(page) != 1 {
			errs = append(errs, fmt.Errorf("%s: not on the page once (%v)", key, page))
			continue
		}
		n, err := num(page[0])
		if err != nil || n != w {
			errs = append(errs, fmt.Errorf("%s: page %q, Postgres %d", key, page[0], w))
		}
	}
	return errors.Join(errs...)
}

// cutLast splits a figure key at its last dot.
func cutLast(key string) (before, after string, found bool) {
	i := strings.LastIndex(key, ".")
	if i < 0 {
		return key, "", false
	}
	return key[:i], key[i+1:], true
}
