package page

import (
	"context"
	_ "embed"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The operator's side of the page (issue 21): whether the scheduler's
// workflow tasks keep failing, the subscribers' health, and the last
// operator actions from the audit log.

// SchedulerHealth is what the workers' keep-alive reads of the scheduler's
// workflow tasks (a description: no billed action).
type SchedulerHealth struct {
	// Failing says its workflow tasks keep failing; Attempt is the
	// pending task's attempt, Since when it was first scheduled.
	Failing bool
	Attempt int
	Since   *time.Time
	// Version is the deployment version the run is pinned to.
	Version string
}

// maxActions is how many operator actions the page shows.
const maxActions = 12

// OperationsSection is the scheduler's workflow task health, the
// subscribers that are failing or disabled, and the last operator actions.
type OperationsSection struct {
	Section
	// Tasks is empty when no health source is wired.
	Tasks      string
	TasksLevel Level
	Version    string

	Active, Failing, Disabled string
	Unhealthy                 []HealthRow
	Actions                   []ActionRow
	Level                     Level
}

// HealthRow is a subscriber that is failing or disabled.
type HealthRow struct {
	ID, Host, State, Streak, Reason string
	Since                           Moment
	Level                           Level
}

// ActionRow is one audit log entry, without its before and after.
type ActionRow struct {
	At                    Moment
	Actor, Action, Target string
}

type operationsData struct {
	absent                    string
	active, failing, disabled int64
	unhealthy                 []healthData
	actions                   []actionData
}

type healthData struct {
	id, status, rawURL, reason string
	failingSince, disabledAt   *time.Time
	streak                     int64
}

type actionData struct {
	at                    time.Time
	actor, action, target string
}

func (p *Page) loadOperations(ctx context.Context, pool *pgxpool.Pool) (operationsData, error) {
	for _, table := range []string{"subscribers", "audit_log"} {
		ok, err := p.tables.has(ctx, pool, table)
		if err != nil {
			return operationsData{}, fmt.Errorf("%s: %w", table, err)
		}
		if !ok {
			return operationsData{absent: table}, nil
		}
	}
	var d operationsData
	if err := pool.QueryRow(ctx, `
select count(*) filter (where status = 'active'),
       count(*) filter (where status = 'active' and failing_since is not null),
       count(*) filter (where status = 'disabled')
from subscribers where deleted_at is null`).Scan(&d.active, &d.failing, &d.disabled); err != nil {
		return d, fmt.Errorf("subscriber health: %w", err)
	}
	rows, _ := pool.Query(ctx, `
select id, status, url, coalesce(disabled_reason, ''), failing_since, disabled_at, failure_streak
from subscribers
where deleted_at is null and (status <> 'active' or failing_since is not null)
order by status = 'active', coalesce(disabled_at, failing_since), id
limit $1`, maxSubscribers)
	var err error
	d.unhealthy, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (healthData, error) {
		var x healthData
		return x, r.Scan(&x.id, &x.status, &x.rawURL, &x.reason, &x.failingSince, &x.disabledAt, &x.streak)
	})
	if err != nil {
		return d, fmt.Errorf("subscriber health: %w", err)
	}
	rows, _ = pool.Query(ctx, `select at, actor, action, coalesce(target, '') from audit_log order by id desc limit $1`, maxActions)
	d.actions, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (actionData, error) {
		var x actionData
		return x, r.Scan(&x.at, &x.actor, &x.action, &x.target)
	})
	if err != nil {
		return d, fmt.Errorf("audit log: %w", err)
	}
	return d, nil
}

func buildOperations(d operationsData, h *SchedulerHealth, now time.Time) OperationsSection {
	var s OperationsSection
	s.Level = LevelOK
	if h != nil {
		s.Version = h.Version
		s.Tasks, s.TasksLevel = "healthy", LevelOK
		if h.Failing {
			s.Tasks = fmt.Sprintf("FAILING: attempt %d, since %s", h.Attempt, moment(h.Since, now).Rel)
			s.TasksLevel, s.Level = LevelBad, LevelBad
		}
	}
	if d.absent != "" {
		s.absent(d.absent)
		return s
	}
	s.Active, s.Failing, s.Disabled = count(d.active), count(d.failing), count(d.disabled)
	for _, x := range d.unhealthy {
		row := HealthRow{ID: x.id, Host: hostOf(x.rawURL), Streak: count(x.streak), Reason: x.reason}
		if x.status == "active" {
			row.State, row.Since, row.Level = "failing", moment(x.failingSince, now), LevelWarn
		} else {
			row.State, row.Since, row.Level = "disabled", moment(x.disabledAt, now), LevelBad
		}
		s.Unhealthy = append(s.Unhealthy, row)
	}
	if d.disabled > 0 && s.Level == LevelOK {
		s.Level = LevelWarn
	}
	for _, a := range d.actions {
		at := a.at
		s.Actions = append(s.Actions, ActionRow{At: moment(&at, now), Actor: a.actor, Action: a.action, Target: a.target})
	}
	return s
}

//go:embed operations.html
var operationsHTML string
