package workflows

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/pacer-dev/pacer"
)

// finalizeRuns records the workflow times finalize ran at.
type finalizeRuns struct {
	mu sync.Mutex
	at []time.Duration
}

func (r *finalizeRuns) add(d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.at = append(r.at, d)
}

func (r *finalizeRuns) get() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Duration(nil), r.at...)
}

// SPEC §13: finalize is due at the earliest grace end of a round not yet
// final, then every minute while one waits (its result says when); with
// no round left it is dormant until a refresh of it (the rounds CLI and
// the admin API send one after adding a round).
func TestFinalizeRunsWhenItsResultSaysAndSleepsOtherwise(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	var runs finalizeRuns
	graceEnds := t0.Add(30 * time.Minute)
	h.finalize.set(func(call int32) (pacer.FinalizeResult, error) {
		now := h.env.Now()
		runs.add(now.Sub(t0))
		switch {
		case call == 1: // no round yet
			return pacer.FinalizeResult{}, nil
		case now.Before(graceEnds): // the round added at 10m: its grace runs
			return pacer.FinalizeResult{NextDueAt: &graceEnds,
				Waiting: &pacer.RoundWait{Round: "r1", Reason: pacer.WaitGrace, BehindSeconds: int64(graceEnds.Sub(now) / time.Second)}}, nil
		case now.Before(t0.Add(32 * time.Minute)): // completeThrough behind the round's end
			next := now.Add(time.Minute)
			return pacer.FinalizeResult{NextDueAt: &next,
				Waiting: &pacer.RoundWait{Round: "r1", Reason: pacer.WaitCompleteThrough, BehindSeconds: 40}}, nil
		default:
			return pacer.FinalizeResult{Finalized: []string{"r1"}}, nil
		}
	})
	h.at(5*time.Minute, func() {
		st := h.status(t).Tasks[pacer.TaskFinalize]
		require.Equal(t, "idle", st.Waiting, "no round: dormant")
		require.Nil(t, st.NextDueAt)
	})
	h.at(10*time.Minute, func() { h.signal(SignalRefresh, `{"task":"finalize"}`) })
	h.at(31*time.Minute+30*time.Second, func() {
		st := h.status(t)
		require.Equal(t, &pacer.RoundWait{Round: "r1", Reason: pacer.WaitCompleteThrough, BehindSeconds: 40},
			st.Tasks[pacer.TaskFinalize].Round)
		require.Equal(t, t0.Add(32*time.Minute), *st.Tasks[pacer.TaskFinalize].NextDueAt)
	})
	h.runFor(t, 3*time.Hour, SchedulerInput{})
	require.Equal(t, []time.Duration{0, 10 * time.Minute, 30 * time.Minute, 31 * time.Minute, 32 * time.Minute}, runs.get())
	require.Equal(t, []string{"r1"}, h.status(t).LastFinalizeResult.Finalized)
}

// A finalize run that failed as a whole says nothing of the rounds: it is
// tried again a minute on, and the status keeps the round it waited for.
func TestFinalizeRetriesAMinuteAfterAFailedRun(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	var runs finalizeRuns
	h.finalize.set(func(call int32) (pacer.FinalizeResult, error) {
		runs.add(h.env.Now().Sub(t0))
		if call == 2 {
			return pacer.FinalizeResult{}, temporal.NewNonRetryableApplicationError("database down", string(pacer.ClassTransport), nil)
		}
		next := h.env.Now().Add(10 * time.Minute)
		return pacer.FinalizeResult{NextDueAt: &next, Waiting: &pacer.RoundWait{Round: "r1", Reason: pacer.WaitGrace}}, nil
	})
	h.at(10*time.Minute+30*time.Second, func() {
		st := h.status(t)
		require.Equal(t, "r1", st.Tasks[pacer.TaskFinalize].Round.Round, "the last round known")
		require.NotEmpty(t, st.LastFinalizeResult.Error)
	})
	h.runFor(t, 12*time.Minute, SchedulerInput{})
	require.Equal(t, []time.Duration{0, 10 * time.Minute, 11 * time.Minute}, runs.get())
}

// SPEC §11: the chainhook task runs every PACER_CHAINHOOK_EVERY, and only
// when the deployment manages the hook.
func TestChainhookRunsOnlyWhenManaged(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name      string
		every     time.Duration
		wantCalls int32
	}{
		{name: "managed every 2m", every: 2 * time.Minute, wantCalls: 6}, // 0, 2, …, 10
		{name: "not managed", wantCalls: 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			h.at(time.Minute, func() {
				_, ok := h.status(t).Tasks[pacer.TaskChainhook]
				require.Equal(t, tt.every > 0, ok)
			})
			h.runFor(t, 11*time.Minute, SchedulerInput{Config: Config{ChainhookEvery: pacer.Duration(tt.every)}})
			require.Equal(t, tt.wantCalls, h.chainhook.calls.Load())
		})
	}
}

// Issue 41.5: a due time or a back-off an activity returns is bounded
// (maxAhead): a defect that answers "year 2300" delays the task a day,
// not for good.
func TestActivityAnswersAreCapped(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	var runs finalizeRuns
	h.finalize.set(func(call int32) (pacer.FinalizeResult, error) {
		runs.add(h.env.Now().Sub(t0))
		far := time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC)
		return pacer.FinalizeResult{NextDueAt: &far}, nil
	})
	far := time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC)
	h.sweep.next = func() time.Time { return far }
	h.tenero.set(func(call int32) (pacer.TeneroResult, error) {
		return pacer.TeneroResult{Run: pacer.Run{RateLimitBackoffMs: int64(200 * 365 * 24 * time.Hour / time.Millisecond)}}, nil
	})
	h.runFor(t, 49*time.Hour, SchedulerInput{})
	require.Equal(t, []time.Duration{0, 24 * time.Hour, 48 * time.Hour}, runs.get())
	require.EqualValues(t, 3, h.sweep.calls.Load(), "0, 24h, 48h")
	require.EqualValues(t, 3, h.tenero.calls.Load(), "0, 24h, 48h")
}

// Revision 4: a finalize run that finalized a round wakes deliver at once,
// since its round.finalized deliveries are queued (SPEC §10.2); a run of
// revision 3 leaves them to the next rollup's wake (the hour's :05).
func TestFinalizedRoundWakesDeliver(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name     string
		revision workflow.Version
		want     []time.Duration
	}{
		{name: "revision 4", revision: 4, want: []time.Duration{0, 2 * time.Minute, 5 * time.Minute}},
		{name: "revision 3", revision: 3, want: []time.Duration{0, 5 * time.Minute}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			h.env.OnGetVersion(ChangeID, RevisionFloor, RevisionCurrent).Return(tt.revision)
			h.finalize.set(func(call int32) (pacer.FinalizeResult, error) {
				if call == 1 { // r1's grace ends at 2m
					next := t0.Add(2 * time.Minute)
					return pacer.FinalizeResult{NextDueAt: &next, Waiting: &pacer.RoundWait{Round: "r1", Reason: pacer.WaitGrace}}, nil
				}
				return pacer.FinalizeResult{Finalized: []string{"r1"}}, nil
			})
			var deliveries finalizeRuns
			h.deliver.set(func(int32) (pacer.DeliverResult, error) {
				deliveries.add(h.env.Now().Sub(t0))
				return pacer.DeliverResult{}, nil
			})
			h.runFor(t, 6*time.Minute, SchedulerInput{})
			require.EqualValues(t, 2, h.finalize.calls.Load())
			require.Equal(t, tt.want, deliveries.get())
		})
	}
}
