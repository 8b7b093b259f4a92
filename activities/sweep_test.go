package activities_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/budget"
	"github.com/pacer-dev/pacer/internal/discovery"
	"github.com/pacer-dev/pacer/internal/ingest"
	"github.com/pacer-dev/pacer/internal/sim"
	"github.com/pacer-dev/pacer/internal/store"
)

// TestSweepVisitsCutShortResume sweeps the fault world on a budget of a
// few requests a second whose sweep lane never waits: runs end as soon as
// their share is spent, visits stop mid-way, and the next runs, started
// when the last one said, go on from there. The ledger ends exactly the
// world's, each swap inserted once. The lane's share of a window is below
// a batch of visits' first pages: before batches were trimmed to what the
// window could verify, every run listed the same seven pages and inserted
// nothing.
func TestSweepVisitsCutShortResume(t *testing.T) {
	t.Parallel()
	// With activity, the world's busy agent has hundreds of swaps: its
	// visit needs more than a window whatever the box's speed.
	f := newFaultStack(t, func(c *sim.HiroConfig) { c.Activity = true })
	ctx := context.Background()
	log := zaptest.NewLogger(t, zaptest.Level(zap.ErrorLevel))
	// A run is cut short only when its share is spent before the window
	// ends: at 4 a 2 s window a request would have to take half a second
	// for a run to go on past it (under a loaded -race run 5 a 1 s window
	// let one run finish the whole world).
	const perWindow, window = 4, 2 * time.Second
	small := budget.Config{PerMinute: perWindow, Window: window}
	// The frozen simulator says its window resets in 60 s, every time: a
	// budget that follows it (as it must) would make this test a minute
	// per run, so its reset header is dropped.
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.sim.ServeHTTP(dropReset{w}, r)
	}))
	t.Cleanup(hs.Close)
	acts := wireActivities(f.st, "hiro-small", hs.URL, log, 0, small, 0)

	want := len(f.sim.World().ExpectedSwaps(faultAt))
	inserted, runs, cutShort := 0, 0, 0
	deadline := time.Now().Add(90 * time.Second)
	for {
		res, err := runSweep(t, acts)
		require.NoError(t, err)
		runs++
		inserted += res.Inserted
		// A run spends at most what the windows it touched held: a run of
		// d touches at most ⌊d/window⌋+2 windows (it may start at the end of
		// one and cross into the next).
		windows := int(time.Duration(res.DurationMs)*time.Millisecond/window) + 2
		require.LessOrEqual(t, res.Requests, perWindow*windows, "a run spends at most the windows it spanned (%d ms)", res.DurationMs)
		var n int
		require.NoError(t, f.st.Pool().QueryRow(ctx, `select count(*) from agent_ingest where visit_top is not null`).Scan(&n))
		cutShort = max(cutShort, n)
		if res.AgentsDue == 0 {
			require.NotNil(t, res.NextDueAt)
			require.True(t, res.NextDueAt.After(time.Now()), "nobody due: the next run is for later")
			require.False(t, res.NextDueAt.After(time.Now().Add(5*time.Minute)), "a hint waits at most 5 minutes")
			break
		}
		require.NotNil(t, res.NextDueAt)
		require.False(t, res.NextDueAt.After(time.Now().Add(5*window)), "agents wait for the budget (and a batch worth running), not longer: %+v", res)
		require.True(t, time.Now().Before(deadline), "the sweep did not finish within 90 s (%d runs)", runs)
		time.Sleep(time.Until(*res.NextDueAt)) // when the workflow runs it next
	}
	// Whether a visit is still cut short when a run ends depends on the
	// box's speed (a run waits for the next window and may finish it), so
	// it is a figure; a run that could not go on from where the last one
	// stopped would not finish within the deadline above.
	require.Greater(t, runs, 2)
	require.Equal(t, want, inserted, "each swap inserted once")
	f.requireLedger(t, true)

	rows, err := f.st.ListAgentIngest(ctx, "")
	require.NoError(t, err)
	for _, a := range rows {
		require.Empty(t, a.VisitFrom, "%s finished its visit", a.Address)
		require.Nil(t, a.VisitTop)
		require.NotNil(t, a.LastVisitAt)
		require.Equal(t, store.IngestOK, a.Status)
	}
	t.Logf("figures: %d swaps in %d runs, %d requests a window of %s, %d visits cut short at a run's end", want, runs, perWindow, window, cutShort)
}

// dropReset drops the ratelimit-reset header of a response.
type dropReset struct{ http.ResponseWriter }

func (d dropReset) WriteHeader(code int) {
	d.Header().Del("ratelimit-reset")
	d.ResponseWriter.WriteHeader(code)
}

func (d dropReset) Write(b []byte) (int, error) {
	d.Header().Del("ratelimit-reset")
	return d.ResponseWriter.Write(b)
}

// TestSweepHintMakesAnAgentDue checks the due set end to end: after a
// complete sweep nobody is due; a hint makes one agent due, and the next
// run visits it alone.
func TestSweepHintMakesAnAgentDue(t *testing.T) {
	t.Parallel()
	f := newFaultStack(t)
	f.sweepUntilDone(t, f.acts)
	res, err := runSweep(t, f.acts)
	require.NoError(t, err)
	require.Zero(t, res.Scanned, "nobody is due")
	require.Zero(t, res.AgentsDue)
	total := 0
	for _, n := range res.Tiers {
		total += n
	}
	require.Equal(t, len(f.sim.World().Agents()), total)

	agent := f.sim.World().Agents()[0].STXAddress
	found, err := f.st.HintAgent(context.Background(), agent)
	require.NoError(t, err)
	require.True(t, found)
	res, err = runSweep(t, f.acts)
	require.NoError(t, err)
	require.Equal(t, 1, res.Scanned)
	require.Zero(t, res.Inserted)
}

// TestSweepPoliciesPlanFromTheBudget runs both policies over the same
// world: every agent ends visited with its next visit within the
// staleness cap.
func TestSweepPoliciesPlanFromTheBudget(t *testing.T) {
	t.Parallel()
	for _, policy := range []ingest.Policy{ingest.PolicyOptimal, ingest.PolicyTiers} {
		t.Run(string(policy), func(t *testing.T) {
			t.Parallel()
			f := newFaultStack(t)
			f.acts.Ingest.Policy = policy
			f.sweepUntilDone(t, f.acts)
			rows, err := f.st.ListAgentIngest(context.Background(), "")
			require.NoError(t, err)
			cfg := f.acts.Ingest
			for _, a := range rows {
				require.NotNil(t, a.LastVisitAt)
				wait := a.NextRunAt.Sub(*a.LastVisitAt)
				require.GreaterOrEqual(t, wait, cfg.HotEvery, a.Address)
				require.LessOrEqual(t, wait, cfg.StalenessCap(), a.Address)
				if policy == ingest.PolicyTiers {
					require.Equal(t, cfg.Interval(a.Agent, *a.LastVisitAt, ingest.Allocation{}), wait, a.Address)
				}
			}
		})
	}
}

// TestSweepReportsThePlansReason checks that the run's result (what
// status shows) carries the plan's own answer: its last step and the
// reason discovery.Plan gives for the state the run ended in.
func TestSweepReportsThePlansReason(t *testing.T) {
	t.Parallel()
	f := newFaultStack(t)
	f.sweepUntilDone(t, f.acts)
	now := time.Now()
	res, err := runSweep(t, f.acts)
	require.NoError(t, err)
	idle := discovery.Plan(discovery.Run{Now: now, Linger: now, Cap: now.Add(time.Minute)})
	require.Equal(t, string(discovery.Stop), res.Step)
	require.Equal(t, idle.Reason, res.Reason, "nothing due: the plan's reason")
	require.Equal(t, idle.StoppedBy, res.StoppedBy)

	agent := f.sim.World().Agents()[0].STXAddress
	_, err = f.st.HintAgent(context.Background(), agent)
	require.NoError(t, err)
	res, err = runActivity[pacer.SweepResult](t, f.acts, f.acts.Sweep, pacer.SweepInput{MaxRequests: 1})
	require.NoError(t, err)
	capped := discovery.Plan(discovery.Run{Now: now, Linger: now, Cap: now.Add(time.Minute), MaxRequests: 1, Spent: 1})
	require.Equal(t, capped.Reason, res.Reason, "the request cap: the plan's reason")
	require.Equal(t, pacer.StoppedMaxRequests, res.StoppedBy)
}

// A retried attempt goes on from the counts its predecessor heartbeat, not
// from how it ended: a worker handing its run back heartbeats its progress
// after the run failed as cancelled, and before issue 41.4's fix the
// survivor's successful attempt reported that failure as its own (the
// scheduler counted a failed sweep for a deploy).
func TestSweepResumedFromAHandedBackAttemptReportsItsOwnOutcome(t *testing.T) {
	t.Parallel()
	f := newFaultStack(t)
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(f.acts)
	handedBack := pacer.SweepResult{Run: pacer.Run{ErrorClass: pacer.ClassTimeout, Error: "sweep cancelled: context canceled",
		Requests: 7}, Scanned: 2, StoppedBy: pacer.StoppedError}
	env.SetHeartbeatDetails(map[string]any{"result": handedBack})
	v, err := env.ExecuteActivity(f.acts.Sweep, pacer.SweepInput{})
	require.NoError(t, err)
	var res pacer.SweepResult
	require.NoError(t, v.Get(&res))
	require.Empty(t, res.ErrorClass, res.Error)
	require.Empty(t, res.Error)
	require.NotEqual(t, pacer.StoppedError, res.StoppedBy)
	require.GreaterOrEqual(t, res.Scanned, 2, "the counts go on")
	require.Greater(t, res.Requests, 7)
}
