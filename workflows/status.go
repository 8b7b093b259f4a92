package workflows

import (
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/cron"
	"github.com/pacer-dev/pacer/internal/schedule"
)

// Status is the document the status query returns (SPEC §3). Times are UTC;
// absent times are null.
type Status struct {
	WorkflowID       string              `json:"workflowId"`
	RunID            string              `json:"runId"`
	Now              time.Time           `json:"now"`
	PausedUntil      *time.Time          `json:"pausedUntil"`
	LastTeneroRunAt  *time.Time          `json:"lastTeneroRunAt"`
	LastTeneroResult *pacer.TeneroResult `json:"lastTeneroResult"`
	LastSweepRunAt   *time.Time          `json:"lastSweepRunAt"`
	LastSweepResult  *pacer.SweepResult  `json:"lastSweepResult"`
	// The rollup and deliver tasks' last results (SPEC §10); null in a
	// run that began before those tasks, or before their first run.
	LastRollupResult  *pacer.RollupResult  `json:"lastRollupResult"`
	LastDeliverResult *pacer.DeliverResult `json:"lastDeliverResult"`
	// The finalize and chainhook tasks' last results (SPEC §13, §11);
	// null before their first run, or in a run of an older revision.
	LastFinalizeResult  *pacer.FinalizeResult  `json:"lastFinalizeResult"`
	LastChainhookResult *pacer.ChainhookResult `json:"lastChainhookResult"`
	// Deliveries counts the deliveries by status as the last deliver run
	// left them (SPEC §3.2); null before it.
	Deliveries *DeliveryCounts `json:"deliveries"`
	// ConsecutiveFailures and NextRunAfter have one key per task.
	ConsecutiveFailures map[string]int        `json:"consecutiveFailures"`
	NextRunAfter        map[string]*time.Time `json:"nextRunAfter"`
	NextWakeAt          *time.Time            `json:"nextWakeAt"`
	Tasks               map[string]TaskStatus `json:"tasks"`
	// Generation counts continue-as-new runs; HistoryLength is this run's.
	Generation    int `json:"generation"`
	HistoryLength int `json:"historyLength"`
	// Config is the configuration in force (reconfigure changes it).
	Config Config `json:"config"`
	// Stopping is set once a stop was asked for: the run completes when
	// the runs in flight end.
	Stopping *StopInput `json:"stopping,omitempty"`
}

// TaskStatus is one task's entry in Status.Tasks.
type TaskStatus struct {
	Every     string     `json:"every"`
	Running   bool       `json:"running"`
	Requested bool       `json:"requested"`
	LastRunAt *time.Time `json:"lastRunAt"`
	NextDueAt *time.Time `json:"nextDueAt"`
	// Waiting is the decision's reason (schedule.View.Decide, SPEC §3.6):
	// why the task is not running sooner than NextDueAt — cadence, cron,
	// budget (pacing before the one decision), backoff, breaker, paused,
	// idle (nothing to do until something wakes it; NextDueAt null),
	// stopping, held — or running, requested, hinted, due.
	Waiting   string             `json:"waiting"`
	LastError *schedule.RunError `json:"lastError"`
	Runs      int64              `json:"runs"`
	// Breaker is the task's circuit breaker: open until probeAt.
	Breaker BreakerStatus `json:"breaker"`
	// PacedUntil is when the upstream's budget next allows a run.
	PacedUntil *time.Time `json:"pacedUntil"`
	// PausedUntil is the end of the pause in force for this task: its own
	// (pause --task) or the scheduler's.
	PausedUntil *time.Time `json:"pausedUntil,omitempty"`
	// Broken is the panic of the task's scheduling code that fenced it off
	// (waiting "broken"): the other tasks run on; resume retries it.
	Broken *schedule.RunError `json:"broken,omitempty"`
	// Round is the round finalize waits for (SPEC §13): its id, why
	// (grace or completeThrough) and how far behind; finalize only.
	Round *pacer.RoundWait `json:"round,omitempty"`
	// Hinted says a hint asked for a sweep that has not started yet.
	Hinted bool `json:"hinted,omitempty"`
	// Pacing is what the adaptive controller decided and the upstream's
	// budget; null in a run that began before adaptive pacing.
	Pacing *pacer.PaceStatus `json:"pacing"`
	// Schedule is the task's schedule ({"every":…} or a cron spec, SPEC
	// §3.4); null for deliver, which runs while deliveries are due.
	Schedule *cron.Spec `json:"schedule"`
	// Occurrences is set for a cron task.
	Occurrences *Occurrences `json:"occurrences,omitempty"`
	// Missed and Coalesced count a cron task's occurrences (SPEC §3.2);
	// zero for an interval task, which has no occurrences to miss.
	Missed    int64 `json:"missed"`
	Coalesced int64 `json:"coalesced"`
}

// OnDemand reports whether the task has no schedule of its own: it runs
// when something makes it due (deliver).
func (t TaskStatus) OnDemand() bool { return t.Schedule == nil && t.Every == "0s" }

// DeliveryCounts are the deliveries by status (SPEC §10.3).
type DeliveryCounts struct {
	Pending   int        `json:"pending"`
	Retrying  int        `json:"retrying"`
	Exhausted int        `json:"exhausted"`
	AsOf      *time.Time `json:"asOf"`
}

// Occurrences are a cron task's occurrences in the status document beyond
// TaskStatus's missed and coalesced counts.
type Occurrences struct {
	// NextAt is the nominal time of the next occurrence not decided yet.
	NextAt *time.Time `json:"nextAt"`
	// Queued runs are decided and not started (a backfill in progress);
	// Pending passed occurrences wait for the next run to record them.
	Queued  int `json:"queued"`
	Pending int `json:"pending"`
	// Skipped counts occurrences passed without a run since the schedule
	// began (paused, catchup_skip, dst_gap).
	Skipped int64 `json:"skipped"`
}

// BreakerStatus is a task's circuit breaker in the status document.
type BreakerStatus struct {
	Open      bool       `json:"open"`
	ProbeAt   *time.Time `json:"probeAt"`
	Trips     int        `json:"trips"`
	Threshold int        `json:"threshold"`
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// status is the status query's answer.
func (s *scheduler) status(ctx workflow.Context) Status {
	info := workflow.GetInfo(ctx)
	st := s.statusAt(info.WorkflowExecution.ID, info.WorkflowExecution.RunID, workflow.Now(ctx))
	st.HistoryLength = info.GetCurrentHistoryLength()
	if at, ok := s.nextWake(); ok {
		st.NextWakeAt = utc(&at)
	}
	return st
}

// statusAt is the status document at now, its history length and next
// wake-up aside: what a query answers and a memo's reader computes.
func (s *scheduler) statusAt(workflowID, runID string, now time.Time) Status {
	st := Status{
		WorkflowID:          workflowID,
		RunID:               runID,
		Now:                 now.UTC(),
		PausedUntil:         utc(s.state.PausedUntil),
		LastTeneroResult:    s.state.LastTeneroResult,
		LastSweepResult:     s.state.LastSweepResult,
		LastRollupResult:    s.state.LastRollupResult,
		LastDeliverResult:   s.state.LastDeliverResult,
		LastFinalizeResult:  s.state.LastFinalizeResult,
		LastChainhookResult: s.state.LastChainhookResult,
		ConsecutiveFailures: map[string]int{},
		NextRunAfter:        map[string]*time.Time{},
		Tasks:               map[string]TaskStatus{},
		Generation:          s.state.Generation,
		Config:              s.cfg,
		Stopping:            s.stopping,
	}
	v := s.view()
	for _, t := range s.state.Tasks {
		st.ConsecutiveFailures[t.Name] = t.ConsecutiveFailures
		st.NextRunAfter[t.Name] = utc(t.NextRunAfter)
		// The decision's answer and the inputs it read (SPEC §3.6).
		d := v.Decide(t, st.Now)
		ts := TaskStatus{
			Every:     t.Every.String(),
			Running:   t.Running(),
			Requested: t.Requested,
			LastRunAt: utc(t.LastRunAt),
			Waiting:   d.Reason,
			LastError: t.LastError,
			Runs:      t.Started,
			Breaker: BreakerStatus{Open: t.BreakerOpen(), ProbeAt: utc(d.Breaker), Trips: t.BreakerTrips,
				Threshold: s.cfg.breaker().Threshold},
			PacedUntil:  utc(d.Budget),
			PausedUntil: utc(d.PausedUntil),
			Broken:      t.Broken,
			Hinted:      t.HintedAt != nil,
			Pacing:      s.pacingStatus(t.Name),
		}
		if !d.At.IsZero() {
			ts.NextDueAt = utc(&d.At)
		}
		if r := s.state.LastFinalizeResult; t.Name == pacer.TaskFinalize && r != nil {
			ts.Round = r.Waiting
		}
		s.scheduleStatus(&ts, t, st.Now)
		st.Tasks[t.Name] = ts
	}
	if r := s.state.LastDeliverResult; r != nil {
		st.Deliveries = &DeliveryCounts{Pending: r.Pending, Retrying: r.Retrying, Exhausted: r.ExhaustedTotal,
			AsOf: utc(&r.StartedAt)}
	}
	if t := s.tasks[pacer.TaskTenero]; t != nil {
		st.LastTeneroRunAt = utc(t.LastRunAt)
	}
	if t := s.tasks[pacer.TaskSweep]; t != nil {
		st.LastSweepRunAt = utc(t.LastRunAt)
	}
	return st
}

// scheduleStatus fills in a task's schedule and, for a cron task, its
// occurrences.
func (s *scheduler) scheduleStatus(ts *TaskStatus, t *schedule.Task, now time.Time) {
	if sched := s.crons[t.Name]; sched != nil && t.Cron != nil {
		spec, c := sched.Spec(), t.Cron
		ts.Schedule = &spec
		ts.Occurrences = &Occurrences{Queued: len(c.Queue), Skipped: c.Counts.Skipped}
		for _, p := range c.Pending {
			ts.Occurrences.Pending += max(p.Count, 1)
		}
		after := c.Last
		if after.IsZero() {
			after = now
		}
		if f, ok := sched.Next(after); ok {
			ts.Occurrences.NextAt = utc(&f.At)
		}
		ts.Missed, ts.Coalesced = c.Counts.Missed, c.Counts.Coalesced
		return
	}
	if t.Every > 0 {
		ts.Schedule = &cron.Spec{Every: time.Duration(t.Every)}
	}
}

// nextWake is when the earliest armed timer fires.
func (s *scheduler) nextWake() (time.Time, bool) {
	var at time.Time
	for _, a := range s.armed {
		if at.IsZero() || a.at.Before(at) {
			at = a.at
		}
	}
	return at, !at.IsZero()
}

// setDetails keeps a one-line summary on the Web UI's workflow page.
func (s *scheduler) setDetails(ctx workflow.Context) {
	var b strings.Builder
	if s.state.PausedUntil != nil {
		fmt.Fprintf(&b, "PAUSED until %s", s.state.PausedUntil.UTC().Format(time.RFC3339))
	} else {
		b.WriteString("running")
	}
	if at, ok := s.nextWake(); ok {
		fmt.Fprintf(&b, "; next wake %s", at.UTC().Format(time.RFC3339))
	}
	for _, t := range s.state.Tasks {
		fmt.Fprintf(&b, "; %s: ", t.Name)
		switch {
		case t.Running():
			b.WriteString("running")
		case t.LastRunAt == nil:
			b.WriteString("not run yet")
		case t.BreakerOpen():
			fmt.Fprintf(&b, "BREAKER OPEN after %d failures (last %s), probe at %s", t.ConsecutiveFailures,
				t.LastError.Class, t.BreakerUntil.UTC().Format(time.RFC3339))
		case t.ConsecutiveFailures > 0 && t.LastError != nil:
			fmt.Fprintf(&b, "%d failure(s), last %s", t.ConsecutiveFailures, t.LastError.Class)
		default:
			fmt.Fprintf(&b, "ok at %s", t.LastRunAt.UTC().Format(time.RFC3339))
		}
	}
	workflow.SetCurrentDetails(ctx, b.String())
}
