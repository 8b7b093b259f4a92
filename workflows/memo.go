package workflows

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/cron"
	"github.com/pacer-dev/pacer/internal/schedule"
)

// Memo is what the scheduler keeps in its workflow memo: the state that
// changes between runs and that others must read without a status query,
// which is a billed action on Temporal Cloud. DescribeWorkflowExecution
// returns it, open or closed, for free: the API's metrics read it at every
// scrape, and a worker restarting a terminated scheduler lays it over the
// state the last run started with, so that a pause or an open breaker
// survives even a terminate.
type Memo struct {
	// At is the workflow time of this memo: how current a restart's pause
	// and breakers are.
	At          time.Time           `json:"at"`
	PausedUntil *time.Time          `json:"pausedUntil"`
	Tasks       map[string]MemoTask `json:"tasks"`
	// Pauses are the pause windows, per task or global;
	// a restart lays them over the older state it starts from.
	Pauses []schedule.Pause `json:"pauses,omitempty"`
}

// MemoTask is one task in the memo.
type MemoTask struct {
	ConsecutiveFailures int        `json:"consecutiveFailures"`
	BreakerUntil        *time.Time `json:"breakerUntil,omitempty"`
	BreakerTrips        int        `json:"breakerTrips,omitempty"`
	// What pacing decided; absent in a run without pacing.
	Batch    int            `json:"batch,omitempty"`
	Interval pacer.Duration `json:"interval,omitempty"`
	Zone     string         `json:"zone,omitempty"`
	// Broken is the panic that fenced the task off (SPEC §3.8), if any.
	Broken string `json:"broken,omitempty"`
}

// memo is the scheduler's memo now.
func (s *scheduler) memo(now time.Time) Memo {
	m := Memo{At: now, PausedUntil: utc(s.state.PausedUntil), Tasks: map[string]MemoTask{}, Pauses: s.state.Pauses}
	for _, t := range s.state.Tasks {
		mt := MemoTask{ConsecutiveFailures: t.ConsecutiveFailures, BreakerUntil: utc(t.BreakerUntil), BreakerTrips: t.BreakerTrips}
		if t.Broken != nil {
			mt.Broken = t.Broken.Message
		}
		if p := s.pacingStatus(t.Name); p != nil {
			mt.Batch, mt.Zone = p.Batch, string(p.Zone)
			mt.Interval = t.Every
		}
		m.Tasks[t.Name] = mt
	}
	return m
}

// MemoStatusKey is the memo field holding what the status document is
// made of (Snapshot): views read it with DescribeWorkflowExecution and
// compute the document with the same decision at their own clock, so the
// API's status, the operator's page and `pacer status --watch` share one
// source that costs no query however many watch (SPEC §7).
const MemoStatusKey = "pacerStatus"

// StatusMemo is the memo field MemoStatusKey: the Snapshot as gzipped
// JSON (a few kilobytes, past what the SDK lets a memo hold without a
// warning).
type StatusMemo struct {
	Gzip []byte `json:"gzip"`
}

// Snapshot is what the status document is computed from: the run's
// config in force and carried state, as of its last change.
type Snapshot struct {
	WorkflowID string     `json:"workflowId"`
	RunID      string     `json:"runId"`
	At         time.Time  `json:"at"`
	Config     Config     `json:"config"`
	State      State      `json:"state"`
	Stopping   *StopInput `json:"stopping,omitempty"`
	Holding    bool       `json:"holding,omitempty"`
}

// Status is the status document at now, by the decision the scheduler
// runs: what a status query at now would answer but the history length,
// and the next wake-up as the decision wants it.
func (sn Snapshot) Status(now time.Time) Status {
	s := &scheduler{cfg: sn.Config, state: sn.State, stopping: sn.Stopping, holding: sn.Holding,
		tasks: map[string]*schedule.Task{}, crons: map[string]*cron.Schedule{}}
	for _, t := range s.state.Tasks {
		s.tasks[t.Name] = t
		if spec, ok := s.cfg.schedule(t.Name); ok && spec.IsCron() && t.Cron != nil {
			if sched, err := cron.New(spec); err == nil {
				s.crons[t.Name] = sched
			}
		}
	}
	st := s.statusAt(sn.WorkflowID, sn.RunID, now)
	if at, ok := s.view().Wake(now); ok {
		st.NextWakeAt = utc(&at)
	}
	return st
}

// changed marks the memo stale: a run started or ended, or an operator's
// message changed something. The loop writes it before it waits.
func (s *scheduler) changed() { s.memoStale = true }

// upsertMemo writes the memo and the snapshot in one upsert, when
// something changed since the last: a memo upsert is a history event,
// though not a billed action. Whether it happens depends on what happened
// (changed), never on the documents' contents, so a new status field
// changes no history.
func (s *scheduler) upsertMemo(ctx workflow.Context) {
	if !s.memoStale {
		return
	}
	s.memoStale = false
	now := workflow.Now(ctx).UTC()
	info := workflow.GetInfo(ctx)
	raw, err := json.Marshal(Snapshot{WorkflowID: info.WorkflowExecution.ID, RunID: info.WorkflowExecution.RunID, At: now,
		Config: s.cfg, State: s.state, Stopping: s.stopping, Holding: s.holding})
	if err != nil {
		s.logger.Error("scheduler.memo_failed", "error", err.Error())
		return
	}
	var zipped bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&zipped, gzip.BestCompression)
	_, _ = zw.Write(raw)
	_ = zw.Close()
	if err := workflow.UpsertMemo(ctx, map[string]any{MemoKey: s.memo(now), MemoStatusKey: StatusMemo{Gzip: zipped.Bytes()}}); err != nil {
		s.logger.Warn("scheduler.memo_failed", "error", err.Error())
	}
}
