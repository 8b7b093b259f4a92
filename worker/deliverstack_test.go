//go:build deliverstack

package worker_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/pacer-dev/pacer/internal/webhooktest"
	"github.com/pacer-dev/pacer/workflows"
)

// The ladder and Retry-After of the real-stack check: the production
// ladder (1m,5m,15m,1h,2h) scaled down to seconds, its first step long
// enough that ±20% is more than a deliver run's scheduling (a timer, a
// workflow task, the ladder's own ±10% jitter); the attempt timeout stays
// the production 10 s. Retry-After is longer than the first step, so it
// is what the 429 retries wait.
var (
	dsLadder     = []time.Duration{5 * time.Second, 10 * time.Second, 15 * time.Second}
	dsRetryAfter = 7 * time.Second
)

const dsCron = `{"rollup":{"cron":"* * * * *","catchup":"backfill"}}`

// dsReport is what one stack's scenario found.
type dsReport struct {
	name     string
	subs     int
	outcomes []*dsOutcome
	actions  dsActions
	kill     *killReport
}

// The issue-12 check on the real stack (make deliver-check), three
// schedulers side by side on one dev server, each with its own schema,
// `pacer worker` and `pacer serve`, the rollup on `* * * * *`:
//
//   - failures: 100 subscribers, 10 each failing for a while with 5xx,
//     timeouts, slow bodies and 429 + Retry-After, 10 answering 410, one down
//     for longer than the ladder (90 s);
//   - kills: 100 subscribers, 20 of them slow (their answer takes 6 s), and
//     the worker killed with SIGKILL three times while a deliver run has a
//     POST in flight, a new worker started each time;
//   - baseline: 10 healthy subscribers.
//
// Then: nothing lost, no webhook-id twice where no worker was killed (and
// only POSTs in flight at a kill sent again where one was), every retry on
// its ladder step, healthy delay, and one Deliver activity per deliver run
// from the workflow histories.
func TestDeliveriesOnTheRealStack(t *testing.T) {
	var reports []*dsReport
	t.Run("stacks", func(t *testing.T) {
		for _, run := range []func(*testing.T) *dsReport{deliverUnderFailures, deliverThroughKills, deliverBaseline} {
			r := &dsReport{}
			reports = append(reports, r)
			t.Run(fmt.Sprint(len(reports)), func(t *testing.T) {
				t.Parallel()
				*r = *run(t)
			})
		}
	})
	// The figures are printed even when a check failed: they show how.
	reports = slices.DeleteFunc(reports, func(r *dsReport) bool { return r.name == "" })
	var b strings.Builder
	fmt.Fprintf(&b, "figures: ladder %s, Retry-After %s, attempt timeout 10s, rollup `* * * * *`\n",
		dsOptions{ladder: dsLadder}.ladderEnv(), dsRetryAfter)
	fmt.Fprintf(&b, "| stack | receivers | subscribers | deliveries | delivered | exhausted (pulled) | lost | POSTs | retries | on step ±20%% (worst) | deferred by the 50-retry cap | duplicates | bad signatures |\n")
	fmt.Fprintf(&b, "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range reports {
		for _, o := range r.outcomes {
			ladder, deferred := "—", "—"
			if r.kill == nil {
				ladder, deferred = fmt.Sprintf("%d (%.1f%%)", o.onStep, 100*o.worstLadder), fmt.Sprint(o.deferred)
			}
			fmt.Fprintf(&b, "| %s | %s | %d | %d | %d | %d (%d) | %d | %d | %d | %s | %s | %d | %d |\n", r.name, o.mode, o.subscribers,
				o.expected, o.delivered, o.exhausted, o.pulled, o.lost, o.arrivals, o.retries, ladder, deferred, o.duplicates, o.badSigs)
		}
	}
	fmt.Fprintf(&b, "\n| stack | healthy deliveries | delay p50 | delay p99 | max |\n|---|---|---|---|---|\n")
	for _, r := range reports {
		var delays []time.Duration
		for _, o := range r.outcomes {
			delays = append(delays, o.delays...)
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s |\n", r.name, len(delays), pct(delays, 0.5), pct(delays, 0.99), pct(delays, 1))
	}
	for _, r := range reports {
		k := r.kill
		if k == nil {
			continue
		}
		fmt.Fprintf(&b, "\n| SIGKILLs | POSTs in flight at a kill | sent again (same webhook-id) | resent after the kill p50 / max | answered, then sent again | of them answered just before a kill | other duplicates |\n|---|---|---|---|---|---|---|\n")
		fmt.Fprintf(&b, "| %d | %d | %d | %s / %s | %d | %d | %d |\n", k.kills, k.inFlight, k.resent,
			pct(k.resendAfter, 0.5), pct(k.resendAfter, 1), k.dups, k.explained, k.dups-k.explained)
	}
	fmt.Fprintf(&b, "\n| stack | subscribers | deliver runs (ledger) | Deliver activities scheduled (history) | of them retried | activities per run | POSTs | POSTs per activity | workflow runs |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range reports {
		a := r.actions
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %.2f | %d | %.1f | %d |\n", r.name, r.subs, a.runs, a.scheduled, a.retried,
			float64(a.scheduled)/float64(a.runs), a.attempted, float64(a.attempted)/float64(a.scheduled), a.workflowRn)
	}
	t.Log(b.String())
}

// deliverUnderFailures: 100 subscribers, 51 of them misbehaving.
func deliverUnderFailures(t *testing.T) *dsReport {
	d := newDeliveryStack(t, dsOptions{
		schedules: dsCron,
		ladder:    dsLadder,
		groups: []dsGroup{
			{n: 49},
			// Each group fails its first attempts and then recovers within
			// the ladder: 5xx twice, a timeout or slow body once (the 10 s
			// attempt timeout), 429 twice.
			{n: 10, b: webhooktest.Behaviour{Mode: webhooktest.ServerError, FailFor: 3 * time.Second}},
			{n: 10, b: webhooktest.Behaviour{Mode: webhooktest.Timeout, FailFor: 11 * time.Second}},
			{n: 10, b: webhooktest.Behaviour{Mode: webhooktest.SlowBody, FailFor: 11 * time.Second}},
			{n: 10, b: webhooktest.Behaviour{Mode: webhooktest.TooManyRequests, RetryAfter: dsRetryAfter, FailFor: 5 * time.Second}},
			{n: 10, b: webhooktest.Behaviour{Mode: webhooktest.Gone}},
			// Down for longer than the whole ladder (and its attempts), then back.
			{n: 1, b: webhooktest.Behaviour{Mode: webhooktest.Down, FailFor: 90 * time.Second}},
		},
		marks: 3,
	})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go d.markHours(ctx, t, d.o.marks)
	eventually(t, 8*time.Minute, "every marked hour delivered or exhausted", func() bool {
		return len(d.markedHours()) == d.o.marks && d.settled(t)
	})
	d.quiesce(t)
	r := &dsReport{name: "failures", subs: len(d.members), outcomes: d.outcomes(t, true)}
	for _, o := range r.outcomes {
		require.Zero(t, o.lost, "%s: deliveries lost", o.mode)
		require.Zero(t, o.duplicates, "%s: webhook-ids that arrived again once answered", o.mode)
		if o.mode == webhooktest.OK {
			require.LessOrEqual(t, pct(o.delays, 0.99), 60*time.Second, "healthy delay p99")
		}
	}
	r.actions = d.actions(t)
	require.Equal(t, r.actions.runs, r.actions.scheduled, "one Deliver activity per deliver run")
	return r
}

// deliverBaseline: 10 healthy subscribers, for the delay and the actions
// per run against 100.
func deliverBaseline(t *testing.T) *dsReport {
	d := newDeliveryStack(t, dsOptions{schedules: dsCron, ladder: dsLadder, groups: []dsGroup{{n: 10}}, marks: 3})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go d.markHours(ctx, t, d.o.marks)
	eventually(t, 8*time.Minute, "every marked hour delivered", func() bool {
		return len(d.markedHours()) == d.o.marks && d.settled(t)
	})
	d.quiesce(t)
	r := &dsReport{name: "baseline", subs: len(d.members), outcomes: d.outcomes(t, true)}
	for _, o := range r.outcomes {
		require.Zero(t, o.lost)
		require.Zero(t, o.duplicates)
	}
	r.actions = d.actions(t)
	require.Equal(t, r.actions.runs, r.actions.scheduled, "one Deliver activity per deliver run")
	return r
}

// killReport is what the kills did to the deliveries.
type killReport struct {
	kills int
	// inFlight counts POSTs a kill cut off (their receiver saw the sender
	// hang up), resent those that arrived again later under the same
	// webhook-id, resendAfter how long after the kill.
	inFlight, resent int
	resendAfter      []time.Duration
	// dups counts webhook-ids that arrived again after an answered
	// arrival, explained those whose answer went out just before a kill
	// (in the second or two between the receiver's answer and its record).
	dups, explained int
}

// dsSlowHold is how long the kill stack's slow receivers take to answer:
// inside the 10 s attempt timeout, long enough to be caught by a kill.
const dsSlowHold = 6 * time.Second

// deliverThroughKills: SIGKILL the worker three times mid deliver run.
func deliverThroughKills(t *testing.T) *dsReport {
	d := newDeliveryStack(t, dsOptions{
		schedules: dsCron,
		ladder:    dsLadder,
		// A killed attempt is retried once its heartbeat lapses: 30 s here
		// rather than the default 2 minutes, to keep the check short.
		heartbeat: 30 * time.Second,
		groups: []dsGroup{
			{n: 80},
			{n: 20, b: webhooktest.Behaviour{Mode: webhooktest.SlowBody, Hold: dsSlowHold}},
		},
	})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go d.markHours(ctx, t, 30)

	var slow []*dsMember
	for _, m := range d.members {
		if m.b.Mode == webhooktest.SlowBody {
			slow = append(slow, m)
		}
	}
	for k := 1; k <= 3; k++ {
		var inFlight []string
		eventually(t, 4*time.Minute, "a deliver run with a slow POST in flight", func() bool {
			if !deliverStarted(t, d.s) {
				return false
			}
			inFlight = inFlight[:0]
			for _, m := range slow {
				for _, a := range m.r.Arrivals() {
					if a.End.IsZero() {
						inFlight = append(inFlight, a.ID)
					}
				}
			}
			return len(inFlight) > 0
		})
		w := d.workers[len(d.workers)-1]
		require.NoError(t, w.cmd.Process.Signal(syscall.SIGKILL))
		d.mu.Lock()
		d.kills = append(d.kills, time.Now())
		d.mu.Unlock()
		w.exitCode(t, 10*time.Second)
		t.Logf("SIGKILL %d with %d slow POSTs in flight", k, len(inFlight))
		d.startWorker(t)
		eventually(t, 4*time.Minute, "the POSTs in flight at the kill delivered", func() bool {
			rows := d.rows(t)
			for _, id := range inFlight {
				if rows[id].Status != "delivered" {
					return false
				}
			}
			return true
		})
	}
	cancel()
	eventually(t, 4*time.Minute, "every marked hour delivered", func() bool { return d.settled(t) })
	d.quiesce(t)
	r := &dsReport{name: "kills", subs: len(d.members), outcomes: d.outcomes(t, false)}
	for _, o := range r.outcomes {
		require.Zero(t, o.lost, "%s: deliveries lost", o.mode)
	}
	r.kill = d.killReport(t)
	require.Equal(t, r.kill.inFlight, r.kill.resent, "every POST a kill cut off was sent again")
	require.Equal(t, r.kill.explained, r.kill.dups, "duplicates only where an answer was in flight at a kill")
	r.actions = d.actions(t)
	require.Equal(t, r.actions.runs, r.actions.scheduled, "one Deliver activity per deliver run")
	return r
}

// deliverStarted says a Deliver activity is running.
func deliverStarted(t *testing.T, s *stack) bool {
	desc, err := s.tc.DescribeWorkflowExecution(context.Background(), s.sched.WorkflowID, "")
	if err != nil {
		return false
	}
	for _, pa := range desc.GetPendingActivities() {
		if pa.GetActivityType().GetName() == workflows.ActivityDeliver && pa.GetState() == enumspb.PENDING_ACTIVITY_STATE_STARTED {
			return true
		}
	}
	return false
}

// killReport reads the receivers' arrivals against the kill times.
func (d *deliveryStack) killReport(t *testing.T) *killReport {
	t.Helper()
	d.mu.Lock()
	kills := slices.Clone(d.kills)
	d.mu.Unlock()
	k := &killReport{kills: len(kills)}
	near := func(at time.Time, before, after time.Duration) (time.Time, bool) {
		for _, kill := range kills {
			if !at.Before(kill.Add(-before)) && !at.After(kill.Add(after)) {
				return kill, true
			}
		}
		return time.Time{}, false
	}
	for _, m := range d.members {
		answered := func(a webhooktest.Arrival) bool {
			// A slow answer is whole once it was written for its full hold;
			// the receiver cannot see whether the sender read it.
			return a.Acked || (m.b.Mode == webhooktest.SlowBody && a.End.Sub(a.At) >= dsSlowHold-100*time.Millisecond)
		}
		for _, as := range m.r.ByID() {
			for i, a := range as {
				if answered(a) && i < len(as)-1 {
					k.dups++
					if _, ok := near(a.End, 2*time.Second, 100*time.Millisecond); ok {
						k.explained++
					}
					break
				}
			}
			for i, a := range as {
				if answered(a) {
					continue
				}
				// Cut off: the sender hung up at a kill.
				kill, ok := near(a.End, 100*time.Millisecond, 500*time.Millisecond)
				if !ok || a.At.After(kill) {
					continue
				}
				k.inFlight++
				if i < len(as)-1 {
					k.resent++
					k.resendAfter = append(k.resendAfter, as[i+1].At.Sub(kill))
				}
			}
		}
	}
	return k
}

func pct(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.999999) - 1
	return s[min(max(i, 0), len(s)-1)].Round(10 * time.Millisecond)
}
