//go:build catchup

package worker_test

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/cron"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/internal/testenv"
	"github.com/pacer-dev/pacer/workflows"
)

// policyStack is one scheduler, its database and its worker processes,
// running the rollup every minute under one catch-up policy.
type policyStack struct {
	policy cron.Catchup
	s      *stack
	env    []string
	procs  []*proc
}

func (p *policyStack) start(t *testing.T, bin string) *proc {
	w := startPacer(t, bin, fmt.Sprintf("%s-worker-%d", p.policy, len(p.procs)+1), p.env, "worker", "--http=")
	p.procs = append(p.procs, w)
	return w
}

func (p *policyStack) ledger(t *testing.T) []store.TaskRun {
	runs, err := p.s.st.TaskRuns(context.Background(), pacer.TaskRollup, time.Now().Add(-time.Hour), 1000)
	require.NoError(t, err)
	return runs
}

// completions counts, across every process the policy ran, the rollup
// runs that completed for each nominal time (the activity's
// rollup.completed log line, written before its ledger row turns ok).
func (p *policyStack) completions() map[time.Time]int {
	re := regexp.MustCompile(`"rollup\.completed".*?"nominalAt":\s*"([^"]+)"`)
	n := map[time.Time]int{}
	for _, w := range p.procs {
		for _, m := range re.FindAllStringSubmatch(w.out.String(), -1) {
			if at, err := time.Parse(time.RFC3339Nano, m[1]); err == nil {
				n[at.UTC()]++
			}
		}
	}
	return n
}

// untilSecond sleeps until the wall clock's seconds read s: stops and
// restarts then land well clear of a minute's occurrence and its on-time
// window, so which occurrences were missed is plain.
func untilSecond(s int) {
	now := time.Now()
	next := now.Truncate(time.Minute).Add(time.Duration(s) * time.Second)
	if !next.After(now) {
		next = next.Add(time.Minute)
	}
	time.Sleep(time.Until(next))
}

// The schedules issue's real-stack check (make catchup): five schedulers
// on one Temporal dev server, each with its own Postgres schema and one
// `pacer worker` process, run the rollup on `* * * * *` under skip, latest,
// all, coalesce and backfill. Every worker is stopped (SIGTERM) for
// CATCHUP_OUTAGE (default 5m), then one worker per scheduler starts again;
// the backfill scheduler's worker is killed with SIGKILL three times
// while it backfills. The ledger must then show each policy's outcome for
// every minute of the outage, and no occurrence may have completed twice.
func TestCatchUpOnTheRealStack(t *testing.T) {
	outage := 5 * time.Minute
	if v := os.Getenv("CATCHUP_OUTAGE"); v != "" {
		d, err := time.ParseDuration(v)
		require.NoError(t, err)
		outage = d
	}
	bin := testenv.PacerBinary(t)
	var stacks []*policyStack
	for _, policy := range cron.Catchups {
		s := newStack(t, workflows.Config{})
		stacks = append(stacks, &policyStack{policy: policy, s: s, env: []string{
			"TEMPORAL_ADDRESS=" + temporalHostPort, "TEMPORAL_NAMESPACE=default",
			"PACER_TASK_QUEUE=" + s.sched.TaskQueue, "PACER_WORKFLOW_ID=" + s.sched.WorkflowID,
			"DATABASE_URL=" + s.dbURL, "TENERO_BASE_URL=" + s.simU, "HIRO_BASE_URL=" + s.simU,
			"PACER_TENERO_EVERY=1h", "PACER_SWEEP_EVERY=1h", "PACER_LOG_LEVEL=info",
			fmt.Sprintf(`PACER_SCHEDULES={"rollup":{"cron":"* * * * *","catchup":%q}}`, policy),
		}})
	}
	for _, p := range stacks {
		p.start(t, bin)
	}
	// Each scheduler runs its first occurrence on time.
	eventually(t, 3*time.Minute, "a first on-time rollup run everywhere", func() bool {
		for _, p := range stacks {
			if !hasStatus(p.ledger(t), pacer.RunOK) {
				return false
			}
		}
		return true
	})
	untilSecond(40)
	for _, p := range stacks {
		require.NoError(t, p.procs[0].cmd.Process.Signal(syscall.SIGTERM))
	}
	for _, p := range stacks {
		p.procs[0].exitCode(t, time.Minute)
	}
	stoppedAt := time.Now()
	t.Logf("every worker stopped at %s; down for %s", stoppedAt.Format(time.TimeOnly), outage)
	time.Sleep(outage - 5*time.Second)
	untilSecond(40)
	restartAt := time.Now()
	for _, p := range stacks {
		w := p.start(t, bin)
		if p.policy != cron.CatchupBackfill {
			continue
		}
		// Kill the worker three times while it backfills: each time once
		// the ledger shows another occurrence of the outage started.
		for kill := 1; kill <= 3; kill++ {
			// Polled tightly: a backfill run takes well under a second.
			seen := countSince(p.ledger(t), stoppedAt)
			for deadline := time.Now().Add(2 * time.Minute); countSince(p.ledger(t), stoppedAt) <= seen; {
				require.True(t, time.Now().Before(deadline), "the backfill did not move on")
				time.Sleep(5 * time.Millisecond)
			}
			require.NoError(t, w.cmd.Process.Signal(syscall.SIGKILL))
			w.exitCode(t, 10*time.Second)
			t.Logf("backfill: SIGKILL %d after %d occurrences of the outage reached the ledger", kill, seen+1)
			w = p.start(t, bin)
		}
	}
	// Every scheduler catches up and runs the next minute on time.
	eventually(t, 4*time.Minute, "every scheduler caught up", func() bool {
		for _, p := range stacks {
			st, err := statusOrErr(p.s)
			if err != nil {
				return false
			}
			r := st.Tasks[pacer.TaskRollup]
			if r.Running || r.Occurrences == nil || r.Occurrences.Queued > 0 || r.Occurrences.Pending > 0 {
				return false
			}
			if !hasOKAfter(p.ledger(t), restartAt) {
				return false
			}
		}
		return true
	})

	var report strings.Builder
	fmt.Fprintf(&report, "figures: outage %s (workers stopped %s, restarted %s)\n", outage,
		stoppedAt.Format(time.TimeOnly), restartAt.Format(time.TimeOnly))
	fmt.Fprintf(&report, "| policy | missed | ran | skipped | coalesced | completed twice | worker processes |\n|---|---|---|---|---|---|---|\n")
	for _, p := range stacks {
		runs := p.ledger(t)
		// The minutes the outage covered: nominal times after the stop, due
		// before the restart (more than cron.OnTime before it).
		var gap []store.TaskRun
		seen := map[time.Time]bool{}
		for _, r := range runs {
			at := r.NominalAt.UTC()
			require.False(t, seen[at], "%s: %s twice in the ledger", p.policy, at)
			seen[at] = true
			if at.After(stoppedAt) && at.Before(restartAt.Add(-cron.OnTime)) {
				gap = append(gap, r)
			}
		}
		// Every minute from the first to the last is in the ledger.
		first, last := runs[0].NominalAt.UTC(), runs[len(runs)-1].NominalAt.UTC()
		for at := first; !at.After(last); at = at.Add(time.Minute) {
			require.True(t, seen[at], "%s: minute %s missing from the ledger", p.policy, at.Format(time.TimeOnly))
		}
		require.GreaterOrEqual(t, len(gap), int(outage/time.Minute)-1, "%s: the outage's minutes", p.policy)
		latest := gap[len(gap)-1]
		count := map[string]int{}
		for i, r := range gap {
			count[r.Status]++
			want, reason := pacer.RunOK, ""
			switch p.policy {
			case cron.CatchupSkip:
				want, reason = pacer.RunSkipped, pacer.SkipCatchup
			case cron.CatchupLatest:
				if i < len(gap)-1 {
					want, reason = pacer.RunSkipped, pacer.SkipCatchup
				}
			case cron.CatchupCoalesce:
				if i < len(gap)-1 {
					want = pacer.RunCoalesced
					require.Equal(t, latest.NominalAt.UTC(), r.CoalescedInto.UTC(), "%s: coalesced into the latest", p.policy)
				}
			}
			require.Equal(t, want, r.Status, "%s: %s", p.policy, r.NominalAt.UTC().Format(time.TimeOnly))
			require.Equal(t, reason, r.Reason, "%s: %s", p.policy, r.NominalAt.UTC().Format(time.TimeOnly))
		}
		if p.policy == cron.CatchupCoalesce {
			require.NotNil(t, latest.MissedCount)
			require.Equal(t, len(gap), *latest.MissedCount, "the coalesced run counts the minutes it stands for")
		}
		twice := 0
		for at, n := range p.completions() {
			if n > 1 {
				twice++
				t.Errorf("%s: the occurrence at %s completed %d times", p.policy, at.Format(time.TimeOnly), n)
			}
		}
		fmt.Fprintf(&report, "| %s | %d | %d | %d | %d | %d | %d |\n", p.policy, len(gap), count[pacer.RunOK],
			count[pacer.RunSkipped], count[pacer.RunCoalesced], twice, len(p.procs))
	}
	t.Log(report.String())
}

func hasStatus(runs []store.TaskRun, status string) bool {
	for _, r := range runs {
		if r.Status == status {
			return true
		}
	}
	return false
}

func hasOKAfter(runs []store.TaskRun, at time.Time) bool {
	for _, r := range runs {
		if r.Status == pacer.RunOK && r.NominalAt.After(at) {
			return true
		}
	}
	return false
}

// countSince counts the ledger's rows for nominal times after at that a
// run started (running or finished).
func countSince(runs []store.TaskRun, at time.Time) int {
	n := 0
	for _, r := range runs {
		if r.NominalAt.After(at) && r.StartedAt != nil {
			n++
		}
	}
	return n
}
