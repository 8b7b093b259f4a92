package bench

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/budget"
	"github.com/pacer-dev/pacer/internal/sim"
)

// TestBenchGoals runs the whole bench and holds pacer to the goals,
// so that a change to the pacing code that misses one fails here first.
func TestBenchGoals(t *testing.T) {
	t.Parallel()
	goals := Goals(RunAll())
	require.NotEmpty(t, goals)
	for _, g := range goals {
		require.True(t, g.Met, "%s: %s: got %s", g.Scenario, g.Goal, g.Got)
	}
}

func TestBenchIsDeterministic(t *testing.T) {
	t.Parallel()
	sc := Scenarios()[1] // the step: every strategy, steps measured
	var a, b bytes.Buffer
	WriteTables(&a, []Outcome{Run(sc)})
	WriteTables(&b, []Outcome{Run(sc)})
	require.Equal(t, a.String(), b.String())
}

// TestBenchArithmetic checks the harness against figures worked out by hand.
func TestBenchArithmetic(t *testing.T) {
	t.Parallel()
	var month Outcome
	for _, sc := range Scenarios() {
		if sc.Name == "tenero-starter" {
			month = Run(sc)
		}
	}
	hourly := find(month.Results, "fixed cron 1h")
	require.NotNil(t, hourly)
	// 53 tokens every hour is 1,272 a day: 10,000 last 7.86 days, and the
	// last run's first refused request comes in hour 188.
	require.NotNil(t, hourly.DryAfter)
	require.Equal(t, 188*time.Hour, hourly.DryAfter.Truncate(time.Hour))
	require.Equal(t, 0, hourly.MonthLeft)
	// One run an hour, 53 requests 6 s apart: 318 s, 3 heartbeats (one per
	// 96 s); a timer, an activity and the heartbeats, 24 times a day.
	require.InDelta(t, 24*(1+1+3)+24*11/2000.0, hourly.ActionsPerDay, 0.01)
	// The floor is the task's schedule's (tenero every 5 minutes: 288
	// wake-ups and 288 activities a day), whatever a strategy ran.
	require.InDelta(t, 288+288, hourly.FloorPerDay, 0.01)
	require.Equal(t, 11, hourly.EventsPerTick)
}

// TestCostFloorIsTheSchedules: the default cadence's floor is counted from
// its schedules (the sweep every minute, tenero every 5: 1,440 wake-ups,
// tenero's shared with the sweep's, and 1,440 + 288 activities a day), the
// same for every strategy; a strategy that costs more than 1.1× it misses
// the goal.
func TestCostFloorIsTheSchedules(t *testing.T) {
	t.Parallel()
	var def Scenario
	for _, sc := range Scenarios() {
		if sc.Name == "default" {
			def = sc
		}
	}
	def.Duration = 2 * 24 * time.Hour
	out := Run(def)
	for _, r := range out.Results {
		require.InDelta(t, 1440+1440+288, r.FloorPerDay, 0.01, r.Strategy)
	}
	p := find(out.Results, "pacer")
	require.NotNil(t, p)
	costly := Outcome{Scenario: def, Results: []Result{*p}}
	costly.Results[0].ActionsPerDay = 1.11 * p.FloorPerDay
	var goal *Goal
	for _, g := range Goals([]Outcome{costly}) {
		if strings.HasPrefix(g.Goal, "Temporal actions") {
			goal = &g
		}
	}
	require.NotNil(t, goal)
	require.False(t, goal.Met, goal.Got)
}

func TestUpstream(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		give        Hidden
		giveAt      []time.Duration // request times since the start
		wantOK      []bool
		wantMinute  []int
		wantMonthAt int // month remaining after the last request, -1 for none
	}{
		{name: "minute window resets on the minute",
			give:   Hidden{Phases: []Phase{{PerMinute: 2}}},
			giveAt: []time.Duration{0, time.Second, 2 * time.Second, time.Minute},
			wantOK: []bool{true, true, false, true}, wantMinute: []int{1, 0, 0, 1}, wantMonthAt: -1},
		{name: "a neighbour starts each minute with its share spent",
			give:   Hidden{Phases: []Phase{{PerMinute: 3, Noisy: 2}}, PerMonth: 100},
			giveAt: []time.Duration{0, time.Second},
			wantOK: []bool{true, false}, wantMinute: []int{0, 0}, wantMonthAt: 97},
		{name: "the month wins and refusals cost nothing",
			give:   Hidden{Phases: []Phase{{PerMinute: 10}}, PerMonth: 2},
			giveAt: []time.Duration{0, time.Second, 2 * time.Second, time.Minute},
			wantOK: []bool{true, true, false, false}, wantMinute: []int{9, 8, 8, 10}, wantMonthAt: 0},
		{name: "phases change the limit",
			give:   Hidden{Phases: []Phase{{PerMinute: 1}, {At: time.Minute, PerMinute: 2}}},
			giveAt: []time.Duration{0, time.Second, time.Minute, time.Minute + time.Second},
			wantOK: []bool{true, false, true, true}, wantMinute: []int{0, 0, 1, 0}, wantMonthAt: -1},
		{name: "a storm fails its share evenly, without spending",
			give:   Hidden{Phases: []Phase{{PerMinute: 10, Failing: 50}}},
			giveAt: []time.Duration{0, time.Second, 2 * time.Second, 3 * time.Second},
			wantOK: []bool{true, false, true, false}, wantMinute: []int{9, 0, 8, 0}, wantMonthAt: -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			documented := 0 // at least every phase's: the headers advertise it
			for _, p := range tt.give.Phases {
				documented = max(documented, p.PerMinute)
			}
			u := NewUpstream(tt.give, documented, start)
			var ok []bool
			var minute []int
			for _, at := range tt.giveAt {
				a := u.Take(start.Add(at))
				ok = append(ok, a.Allowed)
				minute = append(minute, a.MinuteRemaining)
			}
			require.Equal(t, tt.wantOK, ok)
			require.Equal(t, tt.wantMinute, minute)
			require.Equal(t, tt.wantMonthAt, u.Quota.MonthLeft())
		})
	}
}

func TestPercentile(t *testing.T) {
	t.Parallel()
	hist := []int{50, 40, 9, 1} // ages 0..3 minutes
	require.Equal(t, time.Duration(0), percentile(hist, 0.50))
	require.Equal(t, time.Minute, percentile(hist, 0.51))
	require.Equal(t, 2*time.Minute, percentile(hist, 0.99))
	require.Equal(t, 3*time.Minute, percentile(hist, 1))
}

// StarterPicks hands out the runs' real choices: cut runs, from states
// where tokens were checked at different times.
func TestStarterPicks(t *testing.T) {
	t.Parallel()
	picks := StarterPicks(12 * time.Hour)
	require.NotEmpty(t, picks)
	cut := 0
	for _, p := range picks {
		require.Len(t, p.Checked, 53)
		require.Len(t, p.Picked, min(p.N, 53))
		if p.N < 53 {
			cut++
		}
	}
	require.Greater(t, cut, len(picks)/2, "on the Starter plan most runs are cut")
	t.Logf("%d runs in 12 h, %d cut; run 10: n %d, picked %v", len(picks), cut, picks[10].N, picks[10].Picked)
}

// TestBudgetFollowsLimitsOfEveryShape (issue 40): a crawl that takes
// every request from pacer's budget (budget.State, as the sweep's client
// does: a request waits for the budget, and its answer is observed) on a
// keyed plan that advertises 500 a minute and enforces a hidden 30, in
// fixed minute windows, in a sliding window (30 in any 60 s) and in a
// token bucket (10, filling at 30 a minute), the headers naming the
// minute's end whatever the shape: at least 90% of the hidden limit used,
// at most 1% refused, over an hour.
func TestBudgetFollowsLimitsOfEveryShape(t *testing.T) {
	t.Parallel()
	for _, h := range []Hidden{
		{Phases: []Phase{{PerMinute: 30}}},
		{Phases: []Phase{{PerMinute: 30}}, Shape: sim.ShapeSliding},
		{Phases: []Phase{{PerMinute: 30}}, Shape: sim.ShapeBucket, Burst: 10},
	} {
		u := NewUpstream(h, 500, start)
		var st budget.State
		cfg := budget.Config{PerMinute: 450}
		ok, refused := 0, 0
		end := start.Add(time.Hour)
		for now := start; now.Before(end); {
			if d := st.Take(cfg, budget.LaneSweep, 1, now); !d.OK {
				now = now.Add(d.RetryIn)
				continue
			}
			a := u.Take(now)
			now = now.Add(latency)
			st.Observe(cfg, budget.LaneSweep, a.Obs, now)
			if a.Allowed {
				ok++
			} else {
				refused++
			}
		}
		used, share := float64(ok)/(30*60), float64(refused)/float64(ok+refused)
		t.Logf("figures: %q limit: %.1f%% of the hidden 30/min used, %.2f%% refused (%d)", h.Shape, 100*used, 100*share, refused)
		require.GreaterOrEqual(t, used, 0.90, "shape %q", h.Shape)
		require.LessOrEqual(t, share, 0.01, "shape %q", h.Shape)
	}
}

// The benchmarks' budget reads what the service's does: the simulator's
// Hiro headers for an answer, through hiro.ParseQuota and
// store.QuotaObservation (a hidden limit shows only in what is left; a
// refusal is a 429 with its retry-after).
func TestBenchReadsTheHeadersAsTheServiceDoes(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 6, 30, 23, 59, 30, 0, time.UTC)
	u := NewUpstream(Hidden{Phases: []Phase{{PerMinute: 2}}, PerMonth: 3}, 5, at)
	a := u.Take(at)
	require.Equal(t, http.StatusOK, a.Obs.Status)
	require.EqualValues(t, 5, *a.Obs.Limit, "the advertised limit")
	require.EqualValues(t, 1, *a.Obs.Remaining, "the hidden limit's rest")
	require.EqualValues(t, 30*time.Second, *a.Obs.Reset)
	require.EqualValues(t, 2, *a.Obs.MonthRemaining)
	require.EqualValues(t, 3, *a.Obs.MonthLimit)
	require.Equal(t, at, a.Obs.SentAt)
	u.Take(at)
	refused := u.Take(at.Add(time.Second))
	require.Equal(t, http.StatusTooManyRequests, refused.Obs.Status)
	require.EqualValues(t, 29*time.Second, *refused.Obs.RetryAfter)
}
