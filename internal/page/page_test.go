package page_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/budget"
	"github.com/pacer-dev/pacer/internal/catalog"
	"github.com/pacer-dev/pacer/internal/pacing"
	"github.com/pacer-dev/pacer/internal/page"
	"github.com/pacer-dev/pacer/internal/schedule"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/workflows"
)

// now is the page's clock in these tests: mid-month, mid-hour.
var now = time.Date(2026, 6, 10, 12, 7, 30, 0, time.UTC)

const (
	stx   = "stx"
	sbtc  = "SM3VDXK3WZZSA84XXFKAFAF15NNZX32CTSG82JFQ4.sbtc-token::sbtc-token"
	ststx = "SP4SZE494VC2YC5JYG7AYFQ44F5Q4PYV7DVMDPBG.ststx-token::ststx"
	// Secrets a subscriber row holds, which the page must never show.
	subSecret   = "whsec_topsecret"
	urlPassword = "hunter2"
	urlToken    = "token=abc123"
)

func ptr[T any](v T) *T { return &v }

// seedWorld fills every table the page reads with rows whose figures are
// easy to state by hand.
func seedWorld(d *db) {
	// tenero: a run every 5 minutes for two hours, each 10 requests, each
	// reporting the month's remaining quota; one failed run 3 hours ago (5
	// requests); three big runs early in the month without a report.
	for i := range 24 {
		at := now.Add(-2*time.Hour + time.Duration(i)*5*time.Minute)
		d.run(run{task: pacer.TaskTenero, nominal: at, status: pacer.RunOK, took: 2 * time.Second, finished: true,
			result: map[string]any{"requests": 10, "monthRemaining": 45000 - 10*(i+1)}})
	}
	d.run(run{task: pacer.TaskTenero, nominal: now.Add(-3 * time.Hour), status: pacer.RunFailed, took: time.Second,
		finished: true, class: string(pacer.ClassRateLimit), result: map[string]any{"requests": 5}})
	for i := range 3 {
		d.run(run{task: pacer.TaskTenero, nominal: time.Date(2026, 6, 2, i, 0, 0, 0, time.UTC), status: pacer.RunOK,
			took: time.Minute, finished: true, result: map[string]any{"requests": 1000}})
	}
	// Last month's runs count for nothing this month.
	d.run(run{task: pacer.TaskTenero, nominal: time.Date(2026, 5, 31, 23, 0, 0, 0, time.UTC), status: pacer.RunOK,
		took: time.Second, finished: true, result: map[string]any{"requests": 777, "monthRemaining": 1}})
	// sweep: every 15 minutes for six hours, 40 requests each, no month
	// quota reported; one running now.
	for i := range 24 {
		d.run(run{task: pacer.TaskSweep, nominal: now.Add(-6*time.Hour + time.Duration(i)*15*time.Minute), status: pacer.RunOK,
			took: 30 * time.Second, finished: true, result: map[string]any{"requests": 40}})
	}
	d.run(run{task: pacer.TaskSweep, nominal: now.Add(-time.Minute), status: pacer.RunRunning, took: time.Second})
	// rollup: one occurrence skipped.
	d.run(run{task: pacer.TaskRollup, nominal: now.Add(-30 * time.Minute), status: pacer.RunSkipped})

	// Prices: stx fresh, sbtc stale, ststx missing, the pegs fresh.
	d.price(stx, now.Add(-10*time.Minute))
	d.price(sbtc, now.Add(-2*time.Hour))
	for _, id := range catalog.Default().TokenSet(nil) {
		if _, peg := catalog.Default().Peg(id); peg {
			d.price(id, now.Add(-time.Minute))
		}
	}

	// Agents and their ingestion state.
	for _, a := range []string{"SPA1", "SPA2", "SPA3", "SPA4", "SPA5", "SPA6"} {
		d.agent(a)
	}
	d.ingest("SPA1", "hot", now.Add(-10*time.Minute)) // overdue
	d.ingest("SPA2", "hot", now.Add(time.Minute))     // not due
	d.ingest("SPA3", "warm", now.Add(-2*time.Minute)) // due, not overdue
	d.ingest("SPA4", "cold", now.Add(-time.Hour))     // overdue
	d.ingest("SPA5", "cold", now.Add(time.Hour))
	d.ingest("SPA6", "cold", now.Add(3*time.Hour))

	// Swaps: mined at, found after.
	d.swap("0x01", "SPA1", now.Add(-3*time.Hour), 10*time.Second, stx, sbtc)
	d.swap("0x02", "SPA1", now.Add(-4*time.Hour), 20*time.Second, stx, sbtc)
	d.swap("0x03", "SPA1", now.Add(-5*time.Hour), 30*time.Second, stx, sbtc)
	d.swap("0x04", "SPA2", now.Add(-6*time.Hour), 40*time.Second, stx, sbtc)
	d.swap("0x05", "SPA2", now.Add(-5*time.Minute), 50*time.Second, stx, sbtc)
	d.swap("0x06", "SPA3", now.Add(-30*time.Hour), 5*time.Minute, stx, sbtc) // outside the delay window
	d.swap("0x07", "SPA3", now.Add(-2*time.Hour), 2*time.Minute, stx, sbtc)
	d.swap("0x08", "SPA6", now.Add(-time.Hour), time.Hour, stx, sbtc)
	d.swap("0x09", "SPA6", now.Add(-50*time.Hour), time.Minute, stx, sbtc) // outside both windows

	// Subscribers and deliveries.
	d.subscriber("s1", "https://user:"+urlPassword+"@hooks.example.com:8443/in?"+urlToken, subSecret, "active")
	d.subscriber("s2", "https://b.example.org/x", "whsec_other", "disabled")
	d.subscriber("s4", "https://quiet.example.net/", "whsec_quiet", "active")
	d.delivery("s1", "pending", now.Add(-time.Hour), ptr(now.Add(time.Minute)))
	d.delivery("s1", "pending", now.Add(-2*time.Hour), ptr(now.Add(5*time.Minute)))
	d.delivery("s1", "retrying", now.Add(-3*time.Hour), ptr(now.Add(30*time.Second)))
	d.delivery("s1", "delivered", now.Add(-4*time.Hour), nil)
	for i := range 3 {
		d.delivery("s2", "exhausted", now.Add(-time.Duration(i+1)*24*time.Hour), nil)
	}
}

// seededStatus is a status document as the scheduler would answer it.
func seededStatus() workflows.Status {
	return workflows.Status{
		WorkflowID: "v1", RunID: "run-1", Now: now,
		ConsecutiveFailures: map[string]int{pacer.TaskTenero: 0, pacer.TaskSweep: 0, pacer.TaskRollup: 12},
		NextRunAfter:        map[string]*time.Time{pacer.TaskSweep: ptr(now.Add(4 * time.Minute))},
		Tasks: map[string]workflows.TaskStatus{
			pacer.TaskTenero: {Every: "5m0s", NextDueAt: ptr(now.Add(3 * time.Minute)), Waiting: "cadence",
				Breaker: workflows.BreakerStatus{Threshold: 12},
				Pacing:  &pacing.TaskStatus{Batch: 20}},
			pacer.TaskSweep: {Every: "1m0s", Running: true, NextDueAt: ptr(now.Add(10 * time.Minute)), Waiting: "running",
				Breaker: workflows.BreakerStatus{Threshold: 12},
				Pacing:  &pacing.TaskStatus{Batch: 20}},
			pacer.TaskRollup: {Every: "1h0m0s", NextDueAt: ptr(now.Add(time.Hour)), Waiting: "breaker",
				LastError: &schedule.RunError{Class: string(pacer.ClassServerError)},
				Breaker:   workflows.BreakerStatus{Open: true, ProbeAt: ptr(now.Add(40 * time.Minute)), Trips: 1, Threshold: 12}},
		},
		LastTeneroResult: &pacer.TeneroResult{Run: pacer.Run{MinuteRemaining: ptr(87)}},
		Generation:       3, HistoryLength: 1234,
	}
}

func newPage(d *db, status func(context.Context) (workflows.Status, error)) *page.Page {
	return page.New(page.Options{Store: d.st, Catalog: catalog.Default(), Status: status, Now: func() time.Time { return now },
		Logger: zaptest.NewLogger(d.t)})
}

func staticStatus(st workflows.Status) func(context.Context) (workflows.Status, error) {
	return func(context.Context) (workflows.Status, error) { return st, nil }
}

func TestViewShowsWhatTheDatabaseHolds(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	seedWorld(d)
	v := newPage(d, staticStatus(seededStatus())).View(t.Context())

	t.Run("scheduler", func(t *testing.T) {
		s := v.Scheduler
		require.Empty(t, s.Unavailable)
		require.Equal(t, "running", s.State)
		require.Equal(t, "generation 3, 1,234 history events", s.HistoryNote)
		require.Len(t, s.Tasks, 3)
		byName := map[string]page.TaskRow{}
		for _, r := range s.Tasks {
			byName[r.Name] = r
		}
		require.Equal(t, []string{"tenero", "sweep", "rollup"}, []string{s.Tasks[0].Name, s.Tasks[1].Name, s.Tasks[2].Name})

		tenero := byName[pacer.TaskTenero]
		require.Equal(t, "every 5m", tenero.Schedule)
		require.Equal(t, "ok", tenero.LastOutcome)
		require.Equal(t, "2s", tenero.LastTook)
		require.Equal(t, "4m 58s ago", tenero.LastRun.Rel) // the 12:02:30 run, 2 s long
		require.Equal(t, "in 3m", tenero.NextRun.Rel)
		require.Equal(t, "cadence", tenero.Reason)
		require.Equal(t, "closed", tenero.Breaker)
		require.Equal(t, 25, tenero.Runs24h)

		sweep := byName[pacer.TaskSweep]
		require.Equal(t, "running", sweep.Reason)
		require.Equal(t, 25, sweep.Runs24h)

		rollup := byName[pacer.TaskRollup]
		require.Equal(t, "breaker", rollup.Reason)
		require.Equal(t, "OPEN, probes in 40m", rollup.Breaker)
		require.Equal(t, "no run yet", rollup.LastOutcome)
		require.Equal(t, 1, rollup.Runs24h)

		// The strip: one row per task, a cell per slot with runs; the
		// failed run's slot is red, the skipped one grey.
		require.Len(t, s.Strip.Rows, 3)
		classes := map[string]int{}
		for _, row := range s.Strip.Rows {
			for _, c := range row.Cells {
				classes[row.Task+" "+c.Class]++
			}
		}
		require.Equal(t, 1, classes["tenero run-failed"])
		require.Equal(t, 9, classes["tenero run-ok"]) // 10:07:30 to 12:02:30 touches nine 15-minute slots
		require.Equal(t, 1, classes["sweep run-running"])
		require.Equal(t, 1, classes["rollup run-skipped"])
	})

	t.Run("budgets", func(t *testing.T) {
		b := v.Budgets
		require.Empty(t, b.Unavailable)
		require.Len(t, b.Upstreams, 2)
		tenero, hiro := b.Upstreams[0], b.Upstreams[1]
		require.Equal(t, "tenero", tenero.Name)
		// 24×10 + 5 + 3×1000 this month; the last run reported 44,760 left.
		require.Equal(t, "3,245", tenero.Spent)
		require.Equal(t, "245", tenero.PerDay)
		require.True(t, tenero.Month.Known)
		require.Equal(t, "44,760", tenero.Month.Value)
		require.Equal(t, "48,005", tenero.Month.Capacity)
		require.Equal(t, "93%", tenero.Month.Percent)
		require.Contains(t, tenero.RunOut, "lasts the month")
		require.Equal(t, "87", tenero.Minute.Value, "what the last run's headers said")
		require.NotEmpty(t, tenero.Chart.Pace)

		require.Equal(t, "hiro", hiro.Name)
		require.Equal(t, "960", hiro.Spent)
		require.False(t, hiro.Month.Known, "Hiro without a key reports no month quota")
		require.Empty(t, hiro.Chart.Pace)
		require.False(t, hiro.Minute.Known, "no sweep has reported its window")
	})

	t.Run("prices", func(t *testing.T) {
		p := v.Prices
		require.Empty(t, p.Unavailable)
		require.Equal(t, "8", p.Tracked)
		require.Equal(t, "6", p.Fresh)
		require.Equal(t, "1", p.Stale)
		require.Equal(t, "1", p.Missing)
		require.Equal(t, "2h", p.Oldest)
		require.Equal(t, "1h 5m", p.Target)
		require.Len(t, p.Chart.Rows, 8)
		require.Equal(t, ststx, p.Chart.Rows[0].ID, "missing first")
		require.True(t, p.Chart.Rows[0].Missing)
		require.Equal(t, sbtc, p.Chart.Rows[1].ID, "then the stalest")
		require.Equal(t, "2h", p.Chart.Rows[1].Age)
		require.Equal(t, "sbtc-token", p.Chart.Rows[1].Label)
	})

	t.Run("ledger", func(t *testing.T) {
		l := v.Ledger
		require.Empty(t, l.Unavailable)
		require.Equal(t, "8", l.Last48h)
		require.Equal(t, "1", l.LastHour)
		delays := map[string]page.DelayRow{}
		for _, r := range l.Delays {
			delays[r.Tier] = r
		}
		// hot: 10, 20, 30, 40, 50 s; warm: 120 s; cold: 3600 s.
		require.Equal(t, page.DelayRow{Tier: "hot", Swaps: "5", P50: "30s", P99: "49s", Level: page.LevelOK}, delays["hot"])
		require.Equal(t, page.DelayRow{Tier: "warm", Swaps: "1", P50: "2m", P99: "2m", Level: page.LevelOK}, delays["warm"])
		require.Equal(t, page.DelayRow{Tier: "cold", Swaps: "1", P50: "1h", P99: "1h", Level: page.LevelOK}, delays["cold"])
		// all seven: p99 = 120 + 0.94 × (3600 − 120) s.
		require.Equal(t, page.DelayRow{Tier: "all", Swaps: "7", P50: "40s", P99: "56m 31s", Level: page.LevelOK}, delays["all"])
		require.Equal(t, "all", l.Delays[len(l.Delays)-1].Tier, "the overall row comes last")

		agents := map[string]page.AgentRow{}
		for _, r := range l.Agents {
			agents[r.Tier] = r
		}
		require.Equal(t, page.AgentRow{Tier: "hot", Agents: "2", Due: "1", Overdue: "1", MaxLag: "10m", Level: page.LevelBad}, agents["hot"])
		require.Equal(t, page.AgentRow{Tier: "warm", Agents: "1", Due: "1", Overdue: "0", MaxLag: "2m", Level: page.LevelOK}, agents["warm"])
		require.Equal(t, page.AgentRow{Tier: "cold", Agents: "3", Due: "1", Overdue: "1", MaxLag: "1h", Level: page.LevelBad}, agents["cold"])
		require.Equal(t, "6", l.Registered)
		require.Equal(t, "2", l.Behind)
	})

	t.Run("deliveries", func(t *testing.T) {
		del := v.Deliveries
		require.Empty(t, del.Unavailable)
		require.Empty(t, del.Absent)
		require.Equal(t, "2", del.Pending)
		require.Equal(t, "1", del.Retrying)
		require.Equal(t, "3", del.Exhausted)
		require.Len(t, del.Subscribers, 3)
		require.Equal(t, []string{"s2", "s1", "s4"}, []string{del.Subscribers[0].ID, del.Subscribers[1].ID, del.Subscribers[2].ID},
			"the most troubled first")
		s1 := del.Subscribers[1]
		require.Equal(t, "hooks.example.com", s1.Host)
		require.Equal(t, "2", s1.Pending)
		require.Equal(t, "1", s1.Retrying)
		require.Equal(t, "in 30s", s1.NextAttempt.Rel)
		require.Equal(t, "disabled", del.Subscribers[0].Status)
		require.Equal(t, "0", del.Subscribers[2].Pending)
	})
}

func get(t *testing.T, h http.Handler) (*http.Response, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	return rec.Result(), rec.Body.String()
}

func TestPageIsSelfContainedAndHoldsNoSecret(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	seedWorld(d)
	resp, body := get(t, newPage(d, staticStatus(seededStatus())))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/html; charset=utf-8", resp.Header.Get("Content-Type"))
	require.Contains(t, body, `<meta http-equiv="refresh" content="15">`)
	for _, section := range []string{"scheduler", "budgets", "prices", "ledger", "deliveries"} {
		require.Contains(t, body, `<section id="`+section+`">`)
	}
	for _, secret := range []string{subSecret, urlPassword, urlToken, "whsec_"} {
		require.NotContains(t, body, secret)
	}
	// No script, nothing fetched from anywhere.
	require.NotContains(t, strings.ToLower(body), "<script")
	require.NotRegexp(t, `(?i)(src|href)="(https?:)?//`, body)
	require.NotContains(t, body, "@import")
	require.Contains(t, resp.Header.Get("Content-Security-Policy"), "default-src 'none'")
}

func TestPageEscapesWhatTheDatabaseHolds(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	evil := `<img src=x onerror=alert(1)>"`
	d.subscriber(evil, "https://x.example/", "s", "active")
	d.delivery(evil, "pending", now, nil)
	_, body := get(t, newPage(d, staticStatus(seededStatus())))
	require.NotContains(t, body, "<img")
	require.Contains(t, body, "&lt;img src=x onerror=alert(1)&gt;")
}

func TestSchedulerStates(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	tests := []struct {
		name      string
		give      func(*workflows.Status)
		wantState string
	}{
		{name: "running", give: func(*workflows.Status) {}, wantState: "running"},
		{name: "paused", give: func(st *workflows.Status) { st.PausedUntil = ptr(now.Add(time.Hour)) }, wantState: "paused"},
		{name: "pause over", give: func(st *workflows.Status) { st.PausedUntil = ptr(now.Add(-time.Minute)) }, wantState: "running"},
		{name: "stopping", give: func(st *workflows.Status) { st.Stopping = &workflows.StopInput{Reason: "deploy"} }, wantState: "stopping"},
		{name: "stopped", give: func(st *workflows.Status) {
			st.Stopping = &workflows.StopInput{Reason: "deploy"}
			sweep := st.Tasks[pacer.TaskSweep]
			sweep.Running = false
			st.Tasks[pacer.TaskSweep] = sweep
		}, wantState: "stopped"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := seededStatus()
			tt.give(&st)
			require.Equal(t, tt.wantState, newPage(d, staticStatus(st)).View(t.Context()).Scheduler.State)
		})
	}
}

func TestSectionsSayWhatIsNotThereYet(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	// Whatever the migrations create, these are the tables later
	// features add: without them the page still renders.
	for _, table := range []string{"deliveries", "subscribers", "agent_ingest"} {
		d.exec("drop table if exists " + table + " cascade")
	}
	v := newPage(d, func(context.Context) (workflows.Status, error) {
		return workflows.Status{}, errors.New("temporal down")
	}).View(t.Context())
	require.Equal(t, "unknown", v.Scheduler.State)
	require.Empty(t, v.Scheduler.Unavailable)
	require.Contains(t, v.Ledger.AgentsAbsent, "not available yet")
	require.Contains(t, v.Deliveries.Absent, "not available yet")
	require.Equal(t, "0", v.Ledger.Last48h)
	require.Equal(t, "8", v.Prices.Tracked)
	require.Equal(t, "8", v.Prices.Missing)
	for _, u := range v.Budgets.Upstreams {
		require.False(t, u.Minute.Known)
		require.False(t, u.Month.Known)
	}

	resp, body := get(t, newPage(d, nil))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, body, "not available yet: table agent_ingest")
	require.Contains(t, body, "not available yet: table subscribers")
}

func TestASectionThatFailsLeavesTheOthers(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	seedWorld(d)
	// A broken ledger table: the ledger says so, the rest still renders.
	d.exec("alter table swaps rename to swaps_gone")
	v := newPage(d, staticStatus(seededStatus())).View(t.Context())
	require.Contains(t, v.Ledger.Unavailable, "unavailable")
	require.NotContains(t, v.Ledger.Unavailable, "swaps", "no database error text on the page")
	require.Empty(t, v.Scheduler.Unavailable)
	require.Equal(t, "3", v.Deliveries.Exhausted)
}

func TestBudgetsCountNewRunsAtEveryView(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	seedWorld(d)
	p := newPage(d, staticStatus(seededStatus()))
	before := p.View(t.Context()).Budgets.Upstreams[0]
	require.Equal(t, "3,245", before.Spent)
	// Days that have ended are not read again; runs of the last day are.
	d.run(run{task: pacer.TaskTenero, nominal: now.Add(-time.Hour + time.Minute), status: pacer.RunOK, took: time.Second,
		finished: true, result: map[string]any{"requests": 7}})
	after := p.View(t.Context()).Budgets.Upstreams[0]
	require.Equal(t, "3,252", after.Spent)
	require.Equal(t, "252", after.PerDay)
	require.Equal(t, before.Month.Value, after.Month.Value, "the month report is still the newest run's")
}

func TestPricesFollowTheSetTheLastRunRecorded(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	seedWorld(d)
	require.NoError(t, d.st.SetTrackedTokens(t.Context(), []string{stx, ststx}))
	v := newPage(d, staticStatus(seededStatus())).View(t.Context())
	require.Equal(t, "2", v.Prices.Tracked)
	require.Equal(t, "1", v.Prices.Fresh)
	require.Equal(t, "1", v.Prices.Missing)
	require.Contains(t, v.Prices.SetNote, "the last tenero run worked from")
}

func TestHiroFiguresComeFromTheSharedBudget(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	seedWorld(d)
	hb := d.st.SharedBudget(store.UpstreamHiro, budget.Config{PerMinute: 50})
	// One answer of Hiro's: 30 left this minute, 120,000 of 150,000 this month.
	dec, err := hb.Take(t.Context(), budget.LaneSweep, 1)
	require.NoError(t, err)
	require.True(t, dec.OK)
	require.NoError(t, hb.Observe(t.Context(), budget.LaneSweep, budget.Observation{Status: 200, Cost: 1,
		Remaining: ptr(int64(30)), MonthLimit: ptr(int64(150_000)), MonthRemaining: ptr(int64(120_000))}))
	p := page.New(page.Options{Store: d.st, Catalog: catalog.Default(), Status: staticStatus(seededStatus()),
		HiroBudget: hb, Now: func() time.Time { return now }})
	hiro := p.View(t.Context()).Budgets.Upstreams[1]
	require.Equal(t, "hiro", hiro.Name)
	require.True(t, hiro.Month.Known)
	require.Equal(t, "120,000", hiro.Month.Value)
	require.Equal(t, "150,000", hiro.Month.Capacity)
	require.Equal(t, "80%", hiro.Month.Percent)
	require.True(t, hiro.Minute.Known)
	// The window holds what was spent and what Hiro said is left; a new
	// minute (the database's) starts whole.
	require.Equal(t, "31", hiro.Minute.Capacity)
	require.Contains(t, []string{"30", "31"}, hiro.Minute.Value)
	require.NotEmpty(t, hiro.Chart.Pace, "a known quota has an even pace")
}
