package schedule

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer"
)

var t0 = time.Date(2026, 5, 14, 12, 0, 0, 0, time.UTC)

func at(d time.Duration) *time.Time { t := t0.Add(d); return &t }

// due is when the decision next starts t on its own, with no pause.
func due(t *Task, now time.Time) time.Time {
	return View{Tasks: []*Task{t}}.Decide(t, now).At
}

// pausedTo is a view whose global pause runs from t0 to until (none when nil).
func pausedTo(until *time.Time) View {
	if until == nil {
		return View{}
	}
	return View{Pauses: []Pause{{From: t0, Until: *until}}}
}

func TestDecideStarts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		give      Task
		givePause *time.Time
		giveNow   time.Time
		want      bool
	}{
		{name: "never ran", give: Task{Every: pacer.Duration(5 * time.Minute)}, giveNow: t0, want: true},
		{name: "cadence not elapsed", give: Task{Every: pacer.Duration(5 * time.Minute), LastRunAt: at(0)}, giveNow: t0.Add(4 * time.Minute)},
		{name: "cadence elapsed", give: Task{Every: pacer.Duration(5 * time.Minute), LastRunAt: at(0)}, giveNow: t0.Add(5 * time.Minute), want: true},
		{name: "back-off wins over cadence", give: Task{Every: pacer.Duration(5 * time.Minute), LastRunAt: at(0), NextRunAfter: at(time.Hour)}, giveNow: t0.Add(10 * time.Minute)},
		{name: "back-off passed", give: Task{Every: pacer.Duration(5 * time.Minute), LastRunAt: at(0), NextRunAfter: at(time.Hour)}, giveNow: t0.Add(time.Hour), want: true},
		{name: "paused", give: Task{Every: pacer.Duration(time.Minute)}, givePause: at(time.Hour), giveNow: t0},
		{name: "pause over", give: Task{Every: pacer.Duration(time.Minute)}, givePause: at(time.Hour), giveNow: t0.Add(time.Hour), want: true},
		{name: "requested ignores pause", give: Task{Requested: true}, givePause: at(time.Hour), giveNow: t0, want: true},
		{name: "requested ignores back-off", give: Task{Requested: true, NextRunAfter: at(time.Hour)}, giveNow: t0, want: true},
		{name: "running never starts twice", give: Task{Requested: true, Started: 2, Finished: 1}, giveNow: t0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, pausedTo(tt.givePause).Decide(&tt.give, tt.giveNow).Start)
		})
	}
}

func TestBeginFinish(t *testing.T) {
	t.Parallel()
	tk := Task{Every: pacer.Duration(time.Minute), Requested: true}
	tk.Begin(t0)
	require.True(t, tk.Running())
	require.False(t, tk.Requested)
	tk.Finish(t0.Add(time.Second), Outcome{Class: "server_error", Message: "502"}, Breaker{})
	require.False(t, tk.Running())
	require.Equal(t, 1, tk.ConsecutiveFailures)
	require.Equal(t, "server_error", tk.LastError.Class)

	tk.Begin(t0.Add(time.Minute))
	tk.Finish(t0.Add(time.Minute+time.Second), Outcome{Class: "rate_limit", Backoff: 24 * time.Hour}, Breaker{})
	require.Equal(t, 2, tk.ConsecutiveFailures)
	require.Equal(t, t0.Add(time.Minute+time.Second+24*time.Hour), *tk.NextRunAfter)
	require.Equal(t, *tk.NextRunAfter, due(&tk, t0.Add(2*time.Minute)))

	tk.Begin(t0.Add(25 * time.Hour))
	tk.Finish(t0.Add(25*time.Hour), Outcome{}, Breaker{})
	require.Zero(t, tk.ConsecutiveFailures, "success resets the count")
	require.EqualValues(t, 3, tk.Started)
}

func TestPauseUntil(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, giveUntil, giveFor string
		want                     time.Time
		wantErr                  string
	}{
		{name: "for", giveFor: "30m", want: t0.Add(30 * time.Minute)},
		{name: "until", giveUntil: "2026-05-14T13:00:00Z", want: t0.Add(time.Hour)},
		{name: "until with offset", giveUntil: "2026-05-14T15:00:00+02:00", want: t0.Add(time.Hour)},
		{name: "neither", wantErr: `give "until"`},
		{name: "both", giveFor: "1m", giveUntil: "2026-05-14T13:00:00Z", wantErr: "not both"},
		{name: "bad duration", giveFor: "soon", wantErr: "not a Go duration"},
		{name: "negative", giveFor: "-1m", wantErr: "must be positive"},
		{name: "bad time", giveUntil: "tomorrow", wantErr: "not an RFC3339 time"},
		{name: "in the past", giveUntil: "2026-05-14T11:00:00Z", wantErr: "not in the future"},
		{name: "now", giveUntil: "2026-05-14T12:00:00Z", wantErr: "not in the future"},
		{name: "too far", giveFor: "721h", wantErr: "more than"},
		{name: "max", giveFor: "720h", want: t0.Add(MaxPause)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := PauseUntil(t0, tt.giveUntil, tt.giveFor)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestBreaker(t *testing.T) {
	t.Parallel()
	b := Breaker{Threshold: 3, Cooldown: time.Hour}
	tk := Task{Every: pacer.Duration(5 * time.Minute)}
	fail := Outcome{Class: "server_error"}
	now := t0
	for i := 1; i <= 2; i++ {
		tk.Begin(now)
		require.False(t, tk.Finish(now, fail, b))
		require.False(t, tk.BreakerOpen())
		now = now.Add(5 * time.Minute)
	}
	tk.Begin(now)
	require.True(t, tk.Finish(now, fail, b), "the third failure in a row trips it")
	require.True(t, tk.BreakerOpen())
	require.Equal(t, now.Add(time.Hour), due(&tk, now), "an open breaker waits a cooldown, not the cadence")
	require.False(t, View{}.Decide(&tk, now.Add(30*time.Minute)).Start)

	// A failed probe keeps it open for another cooldown without a new trip.
	now = now.Add(time.Hour)
	tk.Begin(now)
	require.False(t, tk.Finish(now, fail, b))
	require.Equal(t, now.Add(time.Hour), due(&tk, now))
	require.Equal(t, 1, tk.BreakerTrips)

	// A successful probe closes it.
	now = now.Add(time.Hour)
	tk.Begin(now)
	tk.Finish(now, Outcome{}, b)
	require.False(t, tk.BreakerOpen())
	require.Equal(t, now.Add(5*time.Minute), due(&tk, now))

	// Off when the threshold is zero.
	off := Task{}
	for range 50 {
		off.Begin(t0)
		require.False(t, off.Finish(t0, fail, Breaker{}))
	}
	require.False(t, off.BreakerOpen())
}

func TestDecideSaysWhy(t *testing.T) {
	t.Parallel()
	base := Task{Every: pacer.Duration(5 * time.Minute), LastRunAt: at(0)}
	tests := []struct {
		name       string
		give       func(*Task)
		wantAt     time.Time
		wantReason string
	}{
		{name: "cadence", give: func(*Task) {}, wantAt: t0.Add(5 * time.Minute), wantReason: ReasonCadence},
		{name: "own work due later", give: func(t *Task) { t.NextDueAt = at(7 * time.Minute) },
			wantAt: t0.Add(7 * time.Minute), wantReason: ReasonCadence},
		{name: "own work due sooner does not hurry", give: func(t *Task) { t.NextDueAt = at(time.Minute) },
			wantAt: t0.Add(5 * time.Minute), wantReason: ReasonCadence},
		{name: "back-off", give: func(t *Task) { t.NextRunAfter = at(10 * time.Minute) },
			wantAt: t0.Add(10 * time.Minute), wantReason: ReasonBackoff},
		{name: "breaker", give: func(t *Task) { t.NextRunAfter, t.BreakerUntil = at(10*time.Minute), at(time.Hour) },
			wantAt: t0.Add(time.Hour), wantReason: ReasonBreaker},
		{name: "pacing", give: func(t *Task) { t.PacedUntil = at(6 * time.Minute) },
			wantAt: t0.Add(6 * time.Minute), wantReason: ReasonBudget},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			task := base
			tt.give(&task)
			d := View{}.Decide(&task, t0)
			require.Equal(t, tt.wantAt, d.At)
			require.Equal(t, tt.wantReason, d.Reason)
		})
	}
}

// A run's end records how long it took.
func TestFinishKeepsDuration(t *testing.T) {
	t.Parallel()
	done := &Task{Every: pacer.Duration(time.Minute), LastRunAt: at(0), Started: 1, Finished: 1}
	done.Finish(t0.Add(20*time.Second), Outcome{}, Breaker{})
	require.Equal(t, pacer.Duration(20*time.Second), done.LastDuration)
}

// A dormant task never comes due on its own and sets no wake-up; a request
// still runs it, and waking it makes it due at once.
func TestDormant(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	last := now.Add(-time.Hour)
	idle := &Task{Name: "deliver", LastRunAt: &last, Dormant: true}
	busy := &Task{Name: "tenero", Every: pacer.Duration(5 * time.Minute), LastRunAt: &now}
	d := View{}.Decide(idle, now)
	require.Equal(t, ReasonIdle, d.Reason)
	require.True(t, d.At.IsZero())
	require.False(t, d.Start)
	wake, ok := View{Tasks: []*Task{idle, busy}}.Wake(now)
	require.True(t, ok)
	require.Equal(t, now.Add(5*time.Minute), wake, "only the other task sets the wake-up")
	_, ok = View{Tasks: []*Task{idle}}.Wake(now)
	require.False(t, ok, "nothing to wait for")

	idle.Requested = true
	require.True(t, View{}.Decide(idle, now).Start)

	idle.Requested, idle.Dormant = false, false
	require.True(t, View{}.Decide(idle, now).Start, "woken: due since its last run")
}

// Issue 41.2: aligning one task to another runs the other's arithmetic;
// isolated, a panic in it stays the other's. Tenero (every 10 minutes,
// last run at 0) aligns to the sweep due a minute after it: the sweep's
// arithmetic runs inside tenero's decision.
func TestAPanicInAnotherTasksArithmeticStaysItsOwn(t *testing.T) {
	t.Parallel()
	tenero := &Task{Name: "tenero", Every: pacer.Duration(10 * time.Minute), LastRunAt: at(0)}
	sweep := &Task{Name: "sweep", Every: pacer.Duration(time.Hour), LastRunAt: at(11*time.Minute - time.Hour)}
	faulty := func(task string, _ time.Time) {
		if task == "sweep" {
			panic("sweep arithmetic")
		}
	}
	healthy := View{Tasks: []*Task{tenero, sweep}, Isolated: true}
	require.Equal(t, t0.Add(11*time.Minute), healthy.Decide(tenero, t0.Add(time.Minute)).At, "tenero joins the sweep's wake")

	isolated := View{Tasks: []*Task{tenero, sweep}, Isolated: true, Fault: faulty}
	d := isolated.Decide(tenero, t0.Add(time.Minute))
	require.Equal(t, t0.Add(10*time.Minute), d.At, "no alignment to a task whose arithmetic failed")
	require.Equal(t, ReasonCadence, d.Reason)
	require.PanicsWithValue(t, "sweep arithmetic", func() { isolated.Decide(sweep, t0.Add(time.Minute)) },
		"the sweep's own decision meets its panic, where its fence is")

	shared := View{Tasks: []*Task{tenero, sweep}, Fault: faulty}
	require.Panics(t, func() { shared.Decide(tenero, t0.Add(time.Minute)) }, "revisions before 3: tenero's decision fails on the sweep's arithmetic")
}
