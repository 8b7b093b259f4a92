package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/cron"
)

// TaskRun is one row of task_runs: an occurrence of a task and what became
// of it.
type TaskRun struct {
	Task      string    `json:"task"`
	NominalAt time.Time `json:"nominalAt"`
	// Status is one of pacer.Run…; Reason says why an occurrence was
	// skipped, or "manual" for an operator's refresh.
	Status        string     `json:"status"`
	Reason        string     `json:"reason,omitempty"`
	StartedAt     *time.Time `json:"startedAt"`
	FinishedAt    *time.Time `json:"finishedAt"`
	CoalescedInto *time.Time `json:"coalescedInto,omitempty"`
	MissedCount   *int       `json:"missedCount,omitempty"`
	Attempts      int        `json:"attempts"`
	ErrorClass    string     `json:"errorClass,omitempty"`
	// Result is the run's result document as the activity returned it.
	Result json.RawMessage `json:"result,omitempty"`
}

// RunRetention is how long task_runs keeps an occurrence: long enough for a
// month of history on the operator's page and for `pacer schedule history`.
// A late wake-up looks back as far (cron.Horizon): older occurrences would
// be deleted as soon as they were written.
const RunRetention = cron.Horizon

// beginRunSQL marks an occurrence running, unless it already finished well:
// then the row is left alone and nothing is returned, and the caller does
// not run the occurrence again. A failed or interrupted occurrence may run
// again (a retried attempt of the same run); its first start is kept.
const beginRunSQL = `
insert into task_runs as r (task, nominal_at, status, reason, started_at, missed_count, attempts)
values ($1, $2, 'running', $3, now(), $4, 1)
on conflict (task, nominal_at) do update set
    status       = 'running',
    reason       = coalesce(excluded.reason, r.reason),
    started_at   = coalesce(r.started_at, excluded.started_at),
    missed_count = coalesce(excluded.missed_count, r.missed_count),
    attempts     = r.attempts + 1,
    coalesced_into = null
where r.status <> 'ok'
returning ` + taskRunColumns

// BeginRun records that occ's run starts now and returns its row: attempt
// 1 is the first start. done is true when the occurrence already finished
// ok; row is then the recorded one, whose Result the caller returns instead
// of working again.
func (s *Store) BeginRun(ctx context.Context, occ pacer.Occurrence) (row TaskRun, done bool, err error) {
	var reason *string
	if occ.Manual {
		r := pacer.ReasonManual
		reason = &r
	}
	var missed *int
	if occ.Coalesced != nil {
		missed = &occ.Coalesced.Count
	}
	rows, _ := s.pool.Query(ctx, beginRunSQL, occ.Task, occ.NominalAt, reason, missed)
	row, err = pgx.CollectExactlyOneRow(rows, scanTaskRun)
	if errors.Is(err, pgx.ErrNoRows) {
		row, found, err := s.TaskRun(ctx, occ.Task, occ.NominalAt)
		if err != nil {
			return TaskRun{}, false, err
		}
		if !found {
			return TaskRun{}, false, fmt.Errorf("begin run %s at %s: row vanished", occ.Task, occ.NominalAt.Format(time.RFC3339))
		}
		return row, true, nil
	}
	if err != nil {
		return TaskRun{}, false, fmt.Errorf("begin run %s: %w", occ.Task, err)
	}
	return row, false, nil
}

// ErrRunHeld is returned by HoldRun when another attempt of the same
// occurrence holds it: two attempts of one occurrence never run at once.
var ErrRunHeld = errors.New("another attempt of this occurrence is running")

// HoldRun takes the occurrence's lease for the length of one attempt: a
// session-level advisory lock on (task, nominal time), on a connection kept
// for the attempt. The lease lives exactly as long as the attempt's
// session: an attempt that outlived its heartbeat timeout (a worker cut
// off, a stalled process) still holds it, so its retry elsewhere finds
// ErrRunHeld instead of running the occurrence a second time; a worker
// that died drops its connection and with it the lease. release gives it
// back. The lock's key includes the schema: databases that hold several
// pacer schemas (tests) keep their leases apart.
func (s *Store) HoldRun(ctx context.Context, occ pacer.Occurrence) (release func(), err error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("hold run %s: %w", occ.Task, err)
	}
	key := occ.Task + "@" + occ.NominalAt.UTC().Format(time.RFC3339Nano)
	var held bool
	if err := conn.QueryRow(ctx, `select pg_try_advisory_lock(hashtextextended(current_schema() || ':' || $1, 3))`, key).Scan(&held); err != nil {
		conn.Release()
		return nil, fmt.Errorf("hold run %s: %w", occ.Task, err)
	}
	if !held {
		conn.Release()
		return nil, fmt.Errorf("hold run %s at %s: %w", occ.Task, occ.NominalAt.Format(time.RFC3339), ErrRunHeld)
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := conn.Exec(ctx, `select pg_advisory_unlock(hashtextextended(current_schema() || ':' || $1, 3))`, key); err != nil {
			// Unsure whether the lock is gone: close the session, which
			// drops it for certain.
			_ = conn.Conn().Close(ctx)
		}
		conn.Release()
	}, nil
}

// FinishRun records how occ's run ended: status ok or failed, the failure's
// class, and the result document. attempt is the attempt number BeginRun
// returned: an attempt that is no longer the latest writes nothing. It also
// forgets runs older than RunRetention.
func (s *Store) FinishRun(ctx context.Context, occ pacer.Occurrence, attempt int, status string, class pacer.ErrorClass, result json.RawMessage) error {
	var cls *string
	if class != "" {
		c := string(class)
		cls = &c
	}
	batch := &pgx.Batch{}
	batch.Queue(`
update task_runs set status = $3, error_class = $4, result = $5, finished_at = now()
where task = $1 and nominal_at = $2 and (attempts = $6 or $6 = 0)`, occ.Task, occ.NominalAt, status, cls, result, attempt)
	batch.Queue(`delete from task_runs where task = $1 and nominal_at < now() - $2::interval`, occ.Task, RunRetention)
	if err := s.pool.SendBatch(ctx, batch).Close(); err != nil {
		return fmt.Errorf("finish run %s: %w", occ.Task, err)
	}
	return nil
}

// recordPassedSQL writes passed occurrences in one statement and counts
// the rows it added by reason (the status, for coalesced ones).
const recordPassedSQL = `
with added as (
    insert into task_runs as r (task, nominal_at, status, reason, coalesced_into)
    select $1, p.nominal_at, p.status, nullif(p.reason, ''), p.coalesced_into
    from unnest($2::timestamptz[], $3::text[], $4::text[], $5::timestamptz[])
        as p(nominal_at, status, reason, coalesced_into)
    on conflict (task, nominal_at) do update set
        status = excluded.status, reason = excluded.reason, finished_at = coalesce(r.finished_at, now())
    where excluded.reason = 'operator' and r.status in ('failed', 'running', 'scheduled')
    returning coalesce(reason, status) as why
)
select why, count(*) from added group by why order by why`

// RecordPassed writes the occurrences that did not get a run of their own
// (skipped, or coalesced into another), a span of them (Count > 1) one row
// per occurrence. An occurrence already in the ledger keeps its row: a
// repeated wake-up never rewrites what happened. The one exception is an
// operator's skip (pacer.SkipOperator) of an occurrence that failed (or
// never finished): that is what happened to it next, so its row becomes
// the skip, keeping its attempts and error class. It returns how many rows
// it added, by reason (pacer.Skip…, or pacer.RunCoalesced).
func (s *Store) RecordPassed(ctx context.Context, task string, passed []pacer.PassedOccurrence) (map[string]int, error) {
	var (
		at             []time.Time
		into           []*time.Time
		status, reason []string
	)
	for _, p := range passed {
		for _, t := range p.Times() {
			at = append(at, t)
			status, reason, into = append(status, p.Status), append(reason, p.Reason), append(into, p.CoalescedInto)
		}
	}
	added := map[string]int{}
	if len(at) == 0 {
		return added, nil
	}
	rows, _ := s.pool.Query(ctx, recordPassedSQL, task, at, status, reason, into)
	var why string
	var n int
	_, err := pgx.ForEachRow(rows, []any{&why, &n}, func() error {
		added[why] = n
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("record passed occurrences of %s: %w", task, err)
	}
	return added, nil
}

const taskRunColumns = `task, nominal_at, status, coalesce(reason, ''), started_at, finished_at, coalesced_into,
    missed_count, attempts, coalesce(error_class, ''), result`

func scanTaskRun(row pgx.CollectableRow) (TaskRun, error) {
	var r TaskRun
	err := row.Scan(&r.Task, &r.NominalAt, &r.Status, &r.Reason, &r.StartedAt, &r.FinishedAt, &r.CoalescedInto,
		&r.MissedCount, &r.Attempts, &r.ErrorClass, &r.Result)
	return r, err
}

// TaskRun reads one occurrence; found is false when the ledger has none.
func (s *Store) TaskRun(ctx context.Context, task string, nominal time.Time) (TaskRun, bool, error) {
	rows, _ := s.pool.Query(ctx, `select `+taskRunColumns+` from task_runs where task = $1 and nominal_at = $2`, task, nominal)
	r, err := pgx.CollectExactlyOneRow(rows, scanTaskRun)
	if errors.Is(err, pgx.ErrNoRows) {
		return TaskRun{}, false, nil
	}
	if err != nil {
		return TaskRun{}, false, fmt.Errorf("read run %s: %w", task, err)
	}
	return r, true, nil
}

// TaskRuns lists a task's occurrences with a nominal time at or after since,
// oldest first, at most limit of them (the newest limit when there are more).
func (s *Store) TaskRuns(ctx context.Context, task string, since time.Time, limit int) ([]TaskRun, error) {
	rows, _ := s.pool.Query(ctx, `
select * from (
    select `+taskRunColumns+` from task_runs
    where task = $1 and nominal_at >= $2
    order by nominal_at desc limit $3
) newest order by nominal_at`, task, since, limit)
	runs, err := pgx.CollectRows(rows, scanTaskRun)
	if err != nil {
		return nil, fmt.Errorf("list runs of %s: %w", task, err)
	}
	return runs, nil
}

// LatestRuns returns each task's most recently finished run.
func (s *Store) LatestRuns(ctx context.Context) (map[string]TaskRun, error) {
	rows, _ := s.pool.Query(ctx, `
select distinct on (task) `+taskRunColumns+` from task_runs
where finished_at is not null
order by task, finished_at desc`)
	runs, err := pgx.CollectRows(rows, scanTaskRun)
	if err != nil {
		return nil, fmt.Errorf("latest runs: %w", err)
	}
	out := make(map[string]TaskRun, len(runs))
	for _, r := range runs {
		out[r.Task] = r
	}
	return out, nil
}
