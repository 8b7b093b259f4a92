package workflows

import (
	"log/slog"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/log"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/cron"
	"github.com/pacer-dev/pacer/internal/schedule"
)

// decideStates is how many random states the property test draws.
const decideStates = 20_000

// randomScheduler is a scheduler in a random state at now: every input the
// decision reads drawn independently (cadence, own next due work, back-off,
// breaker, budget, pauses of one task or all, hints, requests, runs in
// flight, cron queue and position, dormancy, stopping, held starts).
func randomScheduler(t *testing.T, r *rand.Rand, now time.Time) *scheduler {
	t.Helper()
	spec, err := cron.ParseSpec([]byte(`{"cron":"5 * * * *","catchup":"` + []string{"skip", "latest", "all", "coalesce", "backfill"}[r.IntN(5)] + `"}`))
	require.NoError(t, err)
	s := &scheduler{
		cfg:    Config{Schedules: cron.Schedules{pacer.TaskRollup: spec}},
		logger: log.NewStructuredLogger(slog.New(slog.DiscardHandler)),
		tasks:  map[string]*schedule.Task{},
	}
	s.defs = taskDefs
	at := func(spread time.Duration) *time.Time {
		if r.IntN(3) == 0 {
			return nil
		}
		v := now.Add(time.Duration(r.Int64N(int64(2*spread))) - spread)
		return &v
	}
	for _, d := range s.defs {
		tk := &schedule.Task{Name: d.name, Every: s.cfg.every(d.name), LastRunAt: at(2 * time.Hour),
			NextRunAfter: at(24 * time.Hour), BreakerUntil: at(time.Hour), PacedUntil: at(time.Hour),
			LastDuration: pacer.Duration(r.Int64N(int64(3 * time.Minute)))}
		if d.name != pacer.TaskRollup {
			tk.NextDueAt = at(time.Hour)
		}
		if d.name == pacer.TaskDeliver {
			tk.Dormant = r.IntN(2) == 0
		}
		if d.name == pacer.TaskSweep {
			tk.HintedAt = at(time.Minute)
		}
		tk.Requested = r.IntN(6) == 0
		tk.Started = 3
		tk.Finished = 3 - int64(r.IntN(4)/3) // a quarter run
		s.state.Tasks = append(s.state.Tasks, tk)
		s.tasks[d.name] = tk
	}
	s.compileCrons()
	c := s.tasks[pacer.TaskRollup].Cron
	if r.IntN(5) > 0 {
		c.Last = now.Add(-time.Duration(r.Int64N(int64(4 * time.Hour))))
	}
	for range r.IntN(3) {
		c.Queue = append(c.Queue, pacer.Occurrence{Task: pacer.TaskRollup, NominalAt: now.Add(-time.Duration(r.IntN(5)) * time.Hour)})
	}
	for range r.IntN(3) {
		from := now.Add(time.Duration(r.Int64N(int64(4*time.Hour))) - 2*time.Hour)
		task := []string{"", "", pacer.TaskTenero, pacer.TaskSweep, pacer.TaskRollup, pacer.TaskDeliver}[r.IntN(6)]
		s.state.Pauses = append(s.state.Pauses, schedule.Pause{Task: task, From: from,
			Until: from.Add(time.Duration(1 + r.Int64N(int64(3*time.Hour))))})
	}
	if r.IntN(10) == 0 {
		s.stopping = &StopInput{Reason: "property"}
	}
	s.holding = r.IntN(8) == 0
	return s
}

// startsNow is what the status says of a task the loop must start now: its
// next due time has come and its reason is one that starts (due, a
// request, a hint; a hint that must wait out HintGap says "hinted" with a
// later time).
func startsNow(due, now time.Time, reason string) bool {
	switch reason {
	case schedule.ReasonDue, schedule.ReasonRequested, schedule.ReasonHinted:
		return !due.After(now)
	}
	return false
}

// The status's reason and the loop's choice never differ, the timer is
// armed no later than any task that wants it, and no state leaves a task
// unable to ever run again (SPEC §3.6). Each state is checked as the loop
// sees it (after planning the cron tasks), through the same methods the
// status document, the loop and the timer use.
func TestDecisionPropertyStatusAgreesWithLoop(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(19, 3))
	now := time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)
	reasons := map[string]int{}
	for i := range decideStates {
		s := randomScheduler(t, r, now)
		s.planCrons(now)
		wake, armed := s.view().Wake(now)
		st := s.statusAt("", "", now) // the status document
		for _, tk := range s.state.Tasks {
			var due time.Time
			if at := st.Tasks[tk.Name].NextDueAt; at != nil {
				due = *at
			}
			reason := st.Tasks[tk.Name].Waiting
			reasons[reason]++
			start := s.shouldStart(tk, now) // the loop's
			require.Equal(t, startsNow(due, now, reason), start, "state %d, %s: status says %q, loop starts=%v", i, tk.Name, reason, start)
			if start {
				require.False(t, due.After(now), "state %d, %s: starts now but due at %v", i, tk.Name, due)
				if tk.Cron != nil && !tk.Requested {
					require.NotEmpty(t, tk.Cron.Queue, "state %d: a due cron task has an occurrence to take", i)
				}
				continue
			}
			d := s.view().Decide(tk, now)
			if d.Wake {
				require.True(t, armed, "state %d, %s: wants a timer, none armed", i, tk.Name)
				require.False(t, wake.After(d.At), "state %d, %s: timer at %v after its wake %v", i, tk.Name, wake, d.At)
			}
		}
		requireEveryTaskRunsAgain(t, i, s, now)
	}
	for _, want := range []string{schedule.ReasonDue, schedule.ReasonRequested, schedule.ReasonHinted, schedule.ReasonRunning,
		schedule.ReasonCadence, schedule.ReasonBackoff, schedule.ReasonBreaker, schedule.ReasonBudget, schedule.ReasonPaused,
		schedule.ReasonCron, schedule.ReasonIdle, schedule.ReasonStopping, schedule.ReasonHeld} {
		require.Positive(t, reasons[want], "no state drew the reason %q: the generator misses a case", want)
	}
	t.Logf("%d states, reasons drawn: %v", decideStates, reasons)
}

// requireEveryTaskRunsAgain follows the state forward: runs in flight end,
// a stop completes (the next run of the scheduler starts without it), held
// starts resume, and time moves to each decided wake-up. Every task must
// start within a few steps and within the longest wait an input can set
// (a 30-day pause after a 24-hour back-off), except deliver while dormant,
// which only a rollup run wakes.
func requireEveryTaskRunsAgain(t *testing.T, i int, s *scheduler, now time.Time) {
	t.Helper()
	for _, tk := range s.state.Tasks {
		tk.Finished = tk.Started
	}
	s.stopping, s.holding = nil, false
	limit := now.Add(schedule.MaxPause + 2*24*time.Hour)
	for _, tk := range s.state.Tasks {
		at := now
		for step := 0; ; step++ {
			require.Less(t, step, 12, "state %d, %s: never starts", i, tk.Name)
			s.planCrons(at)
			d := s.view().Decide(tk, at)
			if d.Start {
				break
			}
			if d.Reason == schedule.ReasonIdle && tk.Name == pacer.TaskDeliver {
				break
			}
			require.True(t, d.Wake, "state %d, %s at %v: waits (%s) for nothing that will come", i, tk.Name, at, d.Reason)
			require.True(t, d.At.After(at), "state %d, %s: wake %v not after %v", i, tk.Name, d.At, at)
			require.True(t, d.At.Before(limit), "state %d, %s: wake %v too far", i, tk.Name, d.At)
			at = d.At
		}
	}
}
