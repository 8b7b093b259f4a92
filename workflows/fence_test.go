package workflows

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/schedule"
)

// Issue 41.1: a refresh of a task whose scheduling code panics, asked for
// just before its fence fires, never wedges the scheduler: the fence
// clears the request, later refreshes of it are refused (update, with the
// panic) or dropped (signal), and a stop still completes the run with the
// other tasks on their cadence.
func TestARefreshOfABrokenTaskNeverWedgesTheScheduler(t *testing.T) {
	t.Parallel()
	var faulty atomic.Bool
	h := newHarnessOpts(t, nil, &runOptions{fault: func(tk *schedule.Task) {
		if tk.Name == pacer.TaskRollup && faulty.Load() {
			panic("rollup decision went wrong")
		}
	}})
	// The refresh arrives with the fault: its request is set, then the
	// fence fires on the run it asked for.
	h.at(5*time.Minute+30*time.Second, func() {
		faulty.Store(true)
		h.signal(SignalRefresh, `{"task":"rollup"}`)
	})
	h.at(6*time.Minute, func() { h.signal(SignalRefresh, `{"task":"rollup"}`) })
	refused := h.update(7*time.Minute, UpdateRefreshNow, `{"task":"rollup"}`)
	all := h.update(8*time.Minute, UpdateRefreshNow, `{"task":"all"}`)
	h.at(9*time.Minute, func() {
		ro := h.status(t).Tasks[pacer.TaskRollup]
		require.Equal(t, schedule.ReasonBroken, ro.Waiting)
		require.False(t, ro.Requested, "the fence cleared the request")
	})
	stopped := h.update(9*time.Minute+30*time.Second, UpdateStop, `{"reason":"test"}`)
	h.at(3*time.Hour, h.env.CancelWorkflow) // a wedged stop would wait until here
	h.env.ExecuteWorkflow(WorkflowType, SchedulerInput{})

	require.True(t, h.env.IsWorkflowCompleted())
	require.NoError(t, h.env.GetWorkflowError(), "the stop completed the run")
	require.True(t, stopped.done)
	require.NoError(t, stopped.err)
	require.ErrorContains(t, refused.rejected, "rollup decision went wrong")
	require.True(t, all.done)
	require.NoError(t, all.err, "all runs the tasks that are not broken")
	res := all.result.(RefreshNowResult)
	require.NotNil(t, res.Tenero)
	require.Nil(t, res.Rollup)
	// Tenero every 5 minutes from 0 (0, 5), one more for "all" at 8.
	require.EqualValues(t, 3, h.tenero.calls.Load())
	require.Len(t, h.rollup.runs(), 1, "its 12:05 occurrence, before the fault; none after")
}

// Issue 41.2: a panic in rollup's arithmetic for instants ahead of now,
// from 2m30s on, is met first where tenero's decision looks at rollup
// (aligning its wake to it), at the sweep's run at 3m: it fences rollup
// alone, and tenero and the sweep keep their cadence.
func TestAPanicInOneTasksArithmeticFencesThatTaskAlone(t *testing.T) {
	t.Parallel()
	var faulty atomic.Bool
	var h *harness
	h = newHarnessOpts(t, nil, &runOptions{arith: func(task string, at time.Time) {
		if task == pacer.TaskRollup && faulty.Load() && at.After(h.env.Now()) {
			panic("rollup cron arithmetic went wrong")
		}
	}})
	h.at(2*time.Minute+30*time.Second, func() { faulty.Store(true) })
	h.at(30*time.Minute+30*time.Second, func() {
		st := h.status(t)
		require.Equal(t, schedule.ReasonBroken, st.Tasks[pacer.TaskRollup].Waiting)
		require.Contains(t, st.Tasks[pacer.TaskRollup].Broken.Message, "rollup cron arithmetic went wrong")
		for _, name := range []string{pacer.TaskTenero, pacer.TaskSweep, pacer.TaskDeliver, pacer.TaskFinalize} {
			require.Nil(t, st.Tasks[name].Broken, name)
		}
	})
	h.runFor(t, 31*time.Minute, SchedulerInput{})
	require.EqualValues(t, 7, h.tenero.calls.Load(), "0, 5, …, 30")
	require.EqualValues(t, 31, h.sweep.calls.Load(), "every minute from 0 to 30")
}

// Issue 41.2: the timer's summary asks every task's decision at the wake
// instant; a panic there is fenced to its task, never a failed workflow
// task. Tenero's arithmetic fails only for instants after the workflow's
// now, which the summary (and alignment) ask about and its own decision
// never does.
func TestAPanicInTheTimerSummaryIsFenced(t *testing.T) {
	t.Parallel()
	var h *harness
	h = newHarnessOpts(t, nil, &runOptions{arith: func(task string, at time.Time) {
		if task == pacer.TaskTenero && at.After(h.env.Now()) {
			panic("tenero arithmetic ahead of now")
		}
	}})
	h.at(20*time.Minute+30*time.Second, func() {
		st := h.status(t)
		require.Contains(t, st.Tasks[pacer.TaskTenero].Broken.Message, "tenero arithmetic ahead of now")
		require.Nil(t, st.Tasks[pacer.TaskSweep].Broken)
	})
	h.runFor(t, 21*time.Minute, SchedulerInput{})
	require.EqualValues(t, 21, h.sweep.calls.Load(), "every minute from 0 to 20")
}

// Issue 41.1, through the update: a refreshNow accepted for a task whose
// decision then panics (the panic planted where the task is requested)
// answers with the panic instead of waiting for a run that never starts,
// and a stop still completes the run.
func TestARefreshNowWhoseTaskBreaksAnswersWithThePanic(t *testing.T) {
	t.Parallel()
	h := newHarnessOpts(t, nil, &runOptions{fault: func(tk *schedule.Task) {
		if tk.Name == pacer.TaskRollup && tk.Requested {
			panic("rollup decision went wrong on request")
		}
	}})
	refresh := h.update(5*time.Minute+30*time.Second, UpdateRefreshNow, `{"task":"rollup"}`)
	stopped := h.update(6*time.Minute+30*time.Second, UpdateStop, `{"reason":"test"}`)
	h.at(3*time.Hour, h.env.CancelWorkflow) // a wedged stop would wait until here
	h.env.ExecuteWorkflow(WorkflowType, SchedulerInput{})

	require.NoError(t, h.env.GetWorkflowError(), "the stop completed the run")
	require.True(t, refresh.done)
	require.NoError(t, refresh.rejected, "accepted: rollup was not broken yet")
	require.ErrorContains(t, refresh.err, "rollup decision went wrong on request")
	require.True(t, stopped.done)
	require.NoError(t, stopped.err)
}
