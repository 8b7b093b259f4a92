package workflows

import (
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/pacing"
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
	// Waiting says in one word why the task is not running now and what
	// NextDueAt comes from: cadence, pacing, backoff, breaker or paused; or
	// running, requested, or due (it starts at the next wake).
	Waiting   string             `json:"waiting"`
	LastError *schedule.RunError `json:"lastError"`
	Runs      int64              `json:"runs"`
	// Breaker is the task's circuit breaker: open until probeAt.
	Breaker BreakerStatus `json:"breaker"`
	// PacedUntil is when the upstream's budget next allows a run.
	PacedUntil *time.Time `json:"pacedUntil"`
	// Pacing is what the adaptive controller decided and the upstream's
	// budget; null in a run that began before adaptive pacing.
	Pacing *pacing.TaskStatus `json:"pacing"`
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

func (s *scheduler) status(ctx workflow.Context) Status {
	info := workflow.GetInfo(ctx)
	st := Status{
		WorkflowID:          info.WorkflowExecution.ID,
		RunID:               info.WorkflowExecution.RunID,
		Now:                 workflow.Now(ctx).UTC(),
		PausedUntil:         utc(s.state.PausedUntil),
		LastTeneroResult:    s.state.LastTeneroResult,
		LastSweepResult:     s.state.LastSweepResult,
		ConsecutiveFailures: map[string]int{},
		NextRunAfter:        map[string]*time.Time{},
		Tasks:               map[string]TaskStatus{},
		Generation:          s.state.Generation,
		HistoryLength:       info.GetCurrentHistoryLength(),
		Config:              s.cfg,
		Stopping:            s.stopping,
	}
	if s.timer != nil {
		st.NextWakeAt = utc(&s.timerAt)
	}
	for _, t := range s.state.Tasks {
		st.ConsecutiveFailures[t.Name] = t.ConsecutiveFailures
		st.NextRunAfter[t.Name] = utc(t.NextRunAfter)
		due, waiting := s.waiting(t, st.Now)
		st.Tasks[t.Name] = TaskStatus{
			Every:     t.Every.String(),
			Running:   t.Running(),
			Requested: t.Requested,
			LastRunAt: utc(t.LastRunAt),
			NextDueAt: utc(&due),
			Waiting:   waiting,
			LastError: t.LastError,
			Runs:      t.Started,
			Breaker: BreakerStatus{Open: t.BreakerOpen(), ProbeAt: utc(t.BreakerUntil), Trips: t.BreakerTrips,
				Threshold: s.cfg.breaker(s.gates.breaker).Threshold},
			PacedUntil: utc(t.PacedUntil),
			Pacing:     s.pacingStatus(t.Name, st.Now),
		}
	}
	if t := s.tasks[pacer.TaskTenero]; t != nil {
		st.LastTeneroRunAt = utc(t.LastRunAt)
	}
	if t := s.tasks[pacer.TaskSweep]; t != nil {
		st.LastSweepRunAt = utc(t.LastRunAt)
	}
	return st
}

// waiting is when a task next runs on its own and why not sooner (one
// word, see TaskStatus.Waiting).
func (s *scheduler) waiting(t *schedule.Task, now time.Time) (time.Time, string) {
	due, why := t.Due()
	if schedule.Paused(now, s.state.PausedUntil) && !s.state.PausedUntil.Before(due) {
		due, why = *s.state.PausedUntil, schedule.WaitPaused
	}
	switch {
	case t.Running():
		why = "running"
	case t.Requested:
		due, why = now, "requested"
	case !due.After(now):
		why = "due"
	}
	return due, why
}

// setDetails keeps a one-line summary on the Web UI's workflow page.
func (s *scheduler) setDetails(ctx workflow.Context) {
	var b strings.Builder
	if s.state.PausedUntil != nil {
		fmt.Fprintf(&b, "PAUSED until %s", s.state.PausedUntil.UTC().Format(time.RFC3339))
	} else {
		b.WriteString("running")
	}
	if s.timer != nil {
		fmt.Fprintf(&b, "; next wake %s", s.timerAt.UTC().Format(time.RFC3339))
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
			b.WriteString(s.lastCounts(t.Name))
		}
	}
	workflow.SetCurrentDetails(ctx, b.String())
}

// lastCounts is the short tally of a task's last successful run.
func (s *scheduler) lastCounts(task string) string {
	switch r := s.state; task {
	case pacer.TaskTenero:
		if r.LastTeneroResult != nil {
			return fmt.Sprintf(" (%d/%d tokens)", r.LastTeneroResult.Succeeded, r.LastTeneroResult.TokensAttempted)
		}
	case pacer.TaskSweep:
		if r.LastSweepResult != nil {
			return fmt.Sprintf(" (%d agents, %d new swaps)", r.LastSweepResult.Scanned, r.LastSweepResult.Inserted)
		}
	}
	return ""
}
