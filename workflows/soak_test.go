package workflows

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/evidence"
	"github.com/pacer-dev/pacer/internal/fault"
)

// The soak runs the scheduler for a month of virtual time (soakDays), with operators' messages sprinkled over it and upstreams that
// fail now and then, through every continue-as-new. It checks what a
// month of production would show: each run's history stays bounded, the
// state a run hands over is the state it had, and no message is lost: every
// run the scheduler starts is one the cadence, a back-off, a pause or an
// explicit request accounts for, at the moment the model says.
// soakDays is the soak's length: PACER_SOAK_DAYS days (`make evidence`
// runs the month, 30), else 5, which still crosses a dozen continue-as-new
// hand-overs and every kind of message, in a fraction of make test's time.
var soakDays = func() int {
	if d, err := strconv.Atoi(os.Getenv("PACER_SOAK_DAYS")); err == nil && d > 0 {
		return d
	}
	return 5
}()

const (
	// The cadences are three times the defaults' so that the month costs a
	// few seconds under the race detector; nothing in the loop depends on
	// their size.
	soakTeneroEvery = 3 * DefaultTeneroEvery
	soakSweepEvery  = 3 * DefaultSweepEvery
	// soakMaxHistory is far below the default so that the month spans many
	// runs; soakHistorySlack is what one loop iteration may add past it.
	soakMaxHistory   = 400
	soakHistorySlack = 60
	// soakRunSlack bounds how late a due run may start: a run in flight while
	// the scheduler drains for continue-as-new (a transport failure retried
	// for 15 s) holds back the other task's due start until the hand-over.
	soakRunSlack = 20 * time.Second
)

// soakMessage is one message an operator sends during the soak.
type soakMessage struct {
	at      time.Duration // since the soak started
	update  bool
	name    string
	payload string // "" sends no payload
	// What a correct scheduler makes of it; malformed messages have neither.
	pauseFor time.Duration
	resume   bool
	tasks    []string
	sent     bool
}

// soakRun is one run of a task as the fake activity saw it.
type soakRun struct {
	start, finish time.Time
	backoff       time.Duration
}

// soakWorld is the upstreams, the operators and the record of what ran.
type soakWorld struct {
	start    time.Time
	messages []*soakMessage

	mu   sync.Mutex
	runs map[string][]soakRun
}

// malformedSignals are payloads a correct scheduler drops with a log line.
var malformedSignals = []struct{ name, payload string }{
	{SignalPause, `{"for":5}`},
	{SignalPause, `{"for":"-3m"}`},
	{SignalPause, `{"for":"0s"}`},
	{SignalPause, `{"until":"2001-01-01T00:00:00Z"}`},
	{SignalPause, `{"until":"2999-01-01T00:00:00Z"}`},
	{SignalPause, `{"for":"721h"}`},
	{SignalPause, `{"for":"1m","until":"2999-01-01T00:00:00Z"}`},
	{SignalPause, `{"fro":"1m"}`},
	{SignalPause, `"1m"`},
	{SignalPause, ``},
	{SignalRefresh, `{"task":"nope"}`},
	{SignalRefresh, `{"task":7}`},
	{SignalRefresh, `{}`},
	{SignalRefresh, `null`},
}

// newSoakWorld draws the month's messages from a fixed seed. Every time
// carries random milliseconds so that no message lands on the exact
// instant a timer fires, where the order of the two would be arbitrary.
func newSoakWorld(start time.Time, seed uint64) *soakWorld {
	rng := rand.New(rand.NewPCG(seed, 0x50a4))
	w := &soakWorld{start: start, runs: map[string][]soakRun{}}
	tasks := []string{pacer.TaskTenero, pacer.TaskSweep, pacer.TaskAll}
	selected := func(task string) []string {
		if task == pacer.TaskAll {
			return []string{pacer.TaskTenero, pacer.TaskSweep}
		}
		return []string{task}
	}
	for at := 17 * time.Minute; at < time.Duration(soakDays)*24*time.Hour; at += time.Duration(20+rng.IntN(160)) * time.Minute {
		m := &soakMessage{at: at + time.Duration(1+rng.IntN(59_998))*time.Millisecond}
		switch k := rng.IntN(10); {
		case k < 2:
			d := time.Duration(10+rng.IntN(170)) * time.Minute
			m.name, m.pauseFor = SignalPause, d
			m.payload = `{"for":"` + d.String() + `"}`
			if k == 1 {
				m.payload = `{"until":"` + start.Add(m.at).Add(d).Truncate(time.Second).Add(time.Second).Format(time.RFC3339) + `"}`
				m.pauseFor = start.Add(m.at).Add(d).Truncate(time.Second).Add(time.Second).Sub(start.Add(m.at))
			}
		case k == 2:
			m.name, m.resume = SignalResume, true
		case k < 5:
			task := tasks[rng.IntN(len(tasks))]
			m.name, m.payload, m.tasks = SignalRefresh, `{"task":"`+task+`"}`, selected(task)
		case k < 7:
			task := tasks[rng.IntN(len(tasks))]
			m.update, m.name, m.payload, m.tasks = true, UpdateRefreshNow, `{"task":"`+task+`"}`, selected(task)
		case k == 7:
			m.update, m.name, m.payload = true, UpdateRefreshNow, `{"task":"prices"}`
		default:
			bad := malformedSignals[rng.IntN(len(malformedSignals))]
			m.name, m.payload = bad.name, bad.payload
		}
		w.messages = append(w.messages, m)
	}
	return w
}

func (w *soakWorld) record(task string, r soakRun) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.runs[task] = append(w.runs[task], r)
}

// activities returns the fake tasks for one run's environment. The tenero
// upstream rate-limits every 41st run (a month quota once), and every 67th
// fails at the transport level through all of Temporal's retries; every
// 29th sweep meets a server error.
func (w *soakWorld) activities(env *testsuite.TestWorkflowEnvironment) (tenero, sweep any) {
	var teneroRuns, sweepRuns int
	var teneroStart time.Time // the first attempt's start of the run in flight
	tenero = func(ctx context.Context, _ pacer.TeneroInput) (pacer.TeneroResult, error) {
		now := env.Now()
		info := activity.GetInfo(ctx)
		if info.Attempt == 1 {
			w.mu.Lock()
			teneroRuns = len(w.runs[pacer.TaskTenero]) + 1
			w.mu.Unlock()
			teneroStart = now
		}
		res := pacer.TeneroResult{Run: pacer.Run{StartedAt: now}, TokensAttempted: 3, Succeeded: 3}
		var err error
		var backoff time.Duration
		switch {
		case teneroRuns == 500:
			backoff = fault.MonthQuotaBackoff
		case teneroRuns%41 == 0:
			backoff = fault.MinuteQuotaBackoff
		case teneroRuns%67 == 0:
			err = temporal.NewApplicationError("connection refused", string(pacer.ClassTransport))
		}
		if backoff > 0 {
			res.RateLimited, res.RateLimitBackoffMs, res.Succeeded = true, backoff.Milliseconds(), 1
			err = temporal.NewNonRetryableApplicationError("quota spent", string(pacer.ClassRateLimit), nil, res)
		}
		if err == nil || backoff > 0 || info.Attempt == 3 {
			w.record(pacer.TaskTenero, soakRun{start: teneroStart, finish: now, backoff: backoff})
		}
		return res, err
	}
	sweep = func(context.Context, pacer.SweepInput) (pacer.SweepResult, error) {
		now := env.Now()
		w.mu.Lock()
		sweepRuns = len(w.runs[pacer.TaskSweep]) + 1
		w.mu.Unlock()
		w.record(pacer.TaskSweep, soakRun{start: now, finish: now})
		if sweepRuns%29 == 0 {
			return pacer.SweepResult{}, temporal.NewNonRetryableApplicationError("502", string(pacer.ClassServerError), nil)
		}
		return pacer.SweepResult{Scanned: 2, Found: 1, Inserted: 1}, nil
	}
	return tenero, sweep
}

// soakGeneration is what one run of the chain left behind.
type soakGeneration struct {
	historyLength int
	final         Status
	carried       *SchedulerInput
	updates       int
}

// runGeneration runs one workflow run from start until it continues as
// new (or the soak ends), modelling its history length from the events the
// test environment reports, as the server would count them.
func (w *soakWorld) runGeneration(t *testing.T, start time.Time, in SchedulerInput, end time.Time) (soakGeneration, time.Time) {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.SetStartTime(start)
	env.SetTestTimeout(time.Minute)
	Register(env)
	tenero, sweep := w.activities(env)
	env.RegisterActivityWithOptions(tenero, activity.RegisterOptions{Name: ActivityRefreshTenero})
	env.RegisterActivityWithOptions(sweep, activity.RegisterOptions{Name: ActivitySweep})

	var gen soakGeneration
	history := 3 // started, first workflow task
	grow := func(n int) {
		history += n
		env.SetCurrentHistoryLength(history)
	}
	// An activity is scheduled, started and completed, and wakes a workflow
	// task; a timer is started, then fired (with a workflow task) or
	// cancelled; a signal or an update adds its own events and a task.
	env.SetOnActivityCompletedListener(func(*activity.Info, converter.EncodedValue, error) { grow(6) })
	env.SetOnTimerScheduledListener(func(string, time.Duration) { grow(1) })
	env.SetOnTimerFiredListener(func(string) { grow(4) })
	env.SetOnTimerCanceledListener(func(string) { grow(1) })

	for _, m := range w.messages {
		if m.sent || w.start.Add(m.at).Before(start) {
			continue
		}
		env.RegisterDelayedCallback(func() {
			m.sent = true
			grow(4)
			if !m.update {
				if m.payload == "" {
					env.SignalWorkflow(m.name, nil)
				} else {
					env.SignalWorkflow(m.name, json.RawMessage(m.payload))
				}
				return
			}
			gen.updates++
			env.UpdateWorkflow(m.name, fmt.Sprintf("u-%d", m.at), &testsuite.TestUpdateCallback{
				OnReject: func(err error) {
					require.Empty(t, m.tasks, "a valid refreshNow was rejected: %v", err)
				},
				OnAccept: func() { require.NotEmpty(t, m.tasks, "an invalid refreshNow %s was accepted", m.payload) },
				OnComplete: func(v any, err error) {
					require.NoError(t, err)
					res := v.(RefreshNowResult)
					for _, task := range m.tasks {
						switch task {
						case pacer.TaskTenero:
							require.NotNil(t, res.Tenero, "refreshNow %s answered without its tenero run", m.payload)
						case pacer.TaskSweep:
							require.NotNil(t, res.Sweep, "refreshNow %s answered without its sweep run", m.payload)
						}
					}
				},
			}, json.RawMessage(m.payload))
		}, w.start.Add(m.at).Sub(start))
	}
	env.RegisterDelayedCallback(env.CancelWorkflow, end.Sub(start))
	env.ExecuteWorkflow(WorkflowType, in)

	require.True(t, env.IsWorkflowCompleted())
	gen.historyLength = history
	v, err := env.QueryWorkflow(QueryStatus)
	require.NoError(t, err)
	require.NoError(t, v.Get(&gen.final))
	werr := env.GetWorkflowError()
	var can *workflow.ContinueAsNewError
	if errors.As(werr, &can) {
		var next SchedulerInput
		require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
		gen.carried = &next
	} else {
		require.True(t, temporal.IsCanceledError(werr), "run ended with %v", werr)
	}
	return gen, env.Now()
}

func TestSoakThirtyDaysOfTicking(t *testing.T) {
	t.Parallel()
	w := newSoakWorld(t0, 30)
	end := t0.Add(time.Duration(soakDays) * 24 * time.Hour)
	cfg := Config{TeneroEvery: pacer.Duration(soakTeneroEvery), SweepEvery: pacer.Duration(soakSweepEvery), MaxHistoryEvents: soakMaxHistory}
	in := SchedulerInput{Config: cfg}
	now := t0
	var gens []soakGeneration
	for {
		gen, stopped := w.runGeneration(t, now, in, end)
		gens = append(gens, gen)
		require.LessOrEqual(t, gen.historyLength, soakMaxHistory+soakHistorySlack,
			"run %d grew its history past the bound", len(gens))
		require.Equal(t, len(gens)-1, gen.final.Generation)
		now = stopped
		if gen.carried == nil {
			break
		}
		requireCarried(t, gen.final, *gen.carried)
		in = *gen.carried
		require.Less(t, len(gens), 10_000, "runaway continue-as-new")
	}
	require.False(t, now.Before(end), "the soak stopped at %v, before the month was over", now)

	unsent := 0
	for _, m := range w.messages {
		if !m.sent {
			unsent++
			t.Errorf("message at %v was never sent", m.at)
		}
	}
	evidence.Check(t, "soak.messages_unsent", float64(unsent), evidence.Exactly, 0, "count")
	pauses := w.pauseWindows()
	for _, task := range []string{pacer.TaskTenero, pacer.TaskSweep} {
		every := soakTeneroEvery
		if task == pacer.TaskSweep {
			every = soakSweepEvery
		}
		w.requireRunsExplained(t, task, every, pauses)
	}

	var updates, malformed, signals int
	for _, m := range w.messages {
		switch {
		case m.update:
			updates++
		default:
			signals++
		}
		if m.pauseFor == 0 && !m.resume && m.tasks == nil {
			malformed++
		}
	}
	t.Logf("figures: %d days, %d runs of the workflow (continue-as-new), max history %d events, %d tenero runs, %d sweep runs, %d signals, %d updates, %d malformed messages, %d pause windows",
		soakDays, len(gens), maxHistory(gens), len(w.runs[pacer.TaskTenero]), len(w.runs[pacer.TaskSweep]),
		signals, updates, malformed, len(pauses))
	evidence.Check(t, "soak.max_history_events", float64(maxHistory(gens)), evidence.AtMost, soakMaxHistory+soakHistorySlack, "count")
	evidence.Check(t, "soak.continue_as_new_runs", float64(len(gens)), evidence.AtLeast, 2, "count")
}

func maxHistory(gens []soakGeneration) int {
	m := 0
	for _, g := range gens {
		m = max(m, g.historyLength)
	}
	return m
}

// requireCarried checks that what a run hands over is what its status said
// last: nothing of the scheduling state is lost or invented at the seam.
func requireCarried(t *testing.T, final Status, next SchedulerInput) {
	t.Helper()
	st := next.State
	require.NotNil(t, st)
	require.Equal(t, final.Generation, st.Generation)
	requireSameTime(t, final.PausedUntil, st.PausedUntil, "pausedUntil")
	require.Equal(t, final.LastTeneroResult, st.LastTeneroResult)
	require.Equal(t, final.LastSweepResult, st.LastSweepResult)
	require.Len(t, st.Tasks, len(final.Tasks))
	for _, task := range st.Tasks {
		f := final.Tasks[task.Name]
		require.False(t, f.Running, "%s handed over while running", task.Name)
		require.False(t, task.Requested, "%s handed over with a pending request", task.Name)
		require.Equal(t, f.Runs, task.Started, task.Name)
		require.Equal(t, task.Started, task.Finished, task.Name)
		require.Equal(t, final.ConsecutiveFailures[task.Name], task.ConsecutiveFailures, task.Name)
		requireSameTime(t, f.LastRunAt, task.LastRunAt, task.Name+" lastRunAt")
		requireSameTime(t, final.NextRunAfter[task.Name], task.NextRunAfter, task.Name+" nextRunAfter")
		if f.LastError == nil {
			require.Nil(t, task.LastError, task.Name)
		} else {
			require.NotNil(t, task.LastError, task.Name)
			require.Equal(t, f.LastError.Class, task.LastError.Class)
			require.True(t, f.LastError.At.Equal(task.LastError.At))
		}
	}
}

func requireSameTime(t *testing.T, want, got *time.Time, what string) {
	t.Helper()
	if want == nil {
		require.Nil(t, got, what)
		return
	}
	require.NotNil(t, got, what)
	require.True(t, want.Equal(*got), "%s: %v != %v", what, *want, *got)
}

// window is a span during which the scheduler is paused.
type window struct{ from, to time.Time }

// pauseWindows replays the valid pause and resume messages: a pause holds
// from its signal to its end, a later pause replaces it, a resume ends it.
func (w *soakWorld) pauseWindows() []window {
	var out []window
	var open *window
	for _, m := range w.messages {
		at := w.start.Add(m.at)
		if open != nil && !at.Before(open.to) {
			out, open = append(out, *open), nil
		}
		switch {
		case m.pauseFor > 0:
			if open != nil {
				open.to = at
				out = append(out, *open)
			}
			open = &window{from: at, to: at.Add(m.pauseFor)}
		case m.resume && open != nil:
			open.to = at
			out, open = append(out, *open), nil
		}
	}
	if open != nil {
		out = append(out, *open)
	}
	return out
}

// afterPauses moves t past every pause window it falls in.
func afterPauses(t time.Time, pauses []window) time.Time {
	for _, p := range pauses {
		if !t.Before(p.from) && t.Before(p.to) {
			t = p.to
		}
	}
	return t
}

// requireRunsExplained checks every run of a task against the model: a run
// follows an explicit request at once (or when the run before it ends), and
// otherwise starts when the cadence and any back-off make it due, moved past
// pauses. And every request is followed by a run.
func (w *soakWorld) requireRunsExplained(t *testing.T, task string, every time.Duration, pauses []window) {
	t.Helper()
	runs := w.runs[task]
	require.NotEmpty(t, runs)
	sort.Slice(runs, func(i, j int) bool { return runs[i].start.Before(runs[j].start) })
	require.True(t, runs[0].start.Equal(w.start), "the first %s run starts at once", task)

	var requests []time.Time
	for _, m := range w.messages {
		if slices.Contains(m.tasks, task) {
			requests = append(requests, w.start.Add(m.at))
		}
	}
	for _, r := range requests {
		i := sort.Search(len(runs), func(i int) bool { return !runs[i].start.Before(r) })
		require.Less(t, i, len(runs), "%s request at %v never ran", task, r)
		require.LessOrEqual(t, runs[i].start.Sub(r), soakRunSlack, "%s request at %v ran only at %v", task, r, runs[i].start)
	}

	var resumes []time.Time
	for _, m := range w.messages {
		if m.resume {
			resumes = append(resumes, w.start.Add(m.at))
		}
	}
	// nextRunAfter is the last back-off an upstream asked for: it holds
	// until it passes, whatever explicit runs happen meanwhile, or until
	// an operator's resume clears it.
	var nextRunAfter, backoffSet time.Time
	for k := 1; k < len(runs); k++ {
		prev, run := runs[k-1], runs[k]
		if prev.backoff > 0 {
			nextRunAfter, backoffSet = prev.finish.Add(prev.backoff), prev.finish
		}
		for _, r := range resumes {
			if r.After(backoffSet) && r.Before(nextRunAfter) && !r.After(run.start) {
				nextRunAfter = r
			}
		}
		requested := false
		for _, r := range requests {
			if r.After(prev.start) && !r.After(run.start) {
				requested = true
				want := r
				if prev.finish.After(want) {
					want = prev.finish
				}
				require.True(t, run.start.Equal(want), "%s run at %v: requested at %v, want it at %v", task, run.start, r, want)
				break
			}
		}
		if requested {
			continue
		}
		due := prev.start.Add(every)
		if nextRunAfter.After(due) {
			due = nextRunAfter
		}
		due = afterPauses(due, pauses)
		require.False(t, run.start.Before(due), "%s run at %v before it was due at %v", task, run.start, due)
		// A wake-up may wait up to a tenth of the cadence to join another
		// task's (schedule.View.Decide aligns them: one timer, two runs).
		require.LessOrEqual(t, run.start.Sub(due), soakRunSlack+every/10, "%s run at %v, due at %v: a tick was lost", task, run.start, due)
	}
	last := runs[len(runs)-1]
	due := afterPauses(last.start.Add(max(every, last.finish.Add(last.backoff).Sub(last.start))), pauses)
	require.False(t, due.Before(w.start.Add(time.Duration(soakDays)*24*time.Hour-soakRunSlack)), "%s stopped running at %v", task, last.start)
}
