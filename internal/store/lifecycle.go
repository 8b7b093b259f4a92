package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pacer-dev/pacer/internal/rollup"
	"github.com/pacer-dev/pacer/internal/webhook"
)

// ErrNotFound is wrapped when the subscriber or delivery named does not
// exist.
var ErrNotFound = errors.New("not found")

// ErrNoChange is what a change's apply returns when there is nothing to
// do: nothing is written, and nothing is audited.
var ErrNoChange = errors.New("no change")

// Change says who changes something, when, and as which audit action.
type Change struct {
	At     time.Time
	Actor  string
	Action string
}

func (c Change) entry(target string, before, after any) (AuditEntry, error) {
	e := AuditEntry{At: c.At, Actor: c.Actor, Action: c.Action, Target: target}
	var err error
	if before != nil {
		if e.Before, err = json.Marshal(before); err != nil {
			return e, err
		}
	}
	if after != nil {
		if e.After, err = json.Marshal(after); err != nil {
			return e, err
		}
	}
	return e, nil
}

// AuditView is a subscriber as the audit log records it: no secret, and
// the URL without its query (which may hold the subscriber's token).
func AuditView(sub Subscriber) Subscriber {
	sub.Secret, sub.PreviousSecret, sub.PullToken = "", "", ""
	if u, err := url.Parse(sub.URL); err == nil && u.RawQuery != "" {
		u.RawQuery = "…"
		sub.URL = u.String()
	}
	return sub
}

// CreateSubscriber stores a new, active subscriber and audits it, in one
// transaction.
func (s *Store) CreateSubscriber(ctx context.Context, sub Subscriber, c Change) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `
insert into subscribers (id, url, secret, events, tokens, agents, status, created_at, pull_token_hash)
values ($1, $2, $3, $4, $5, $6, 'active', $7, $8)`,
			sub.ID, sub.URL, sub.Secret, sub.Events, sub.Tokens, sub.Agents, sub.CreatedAt, pullHash(sub.PullToken)); err != nil {
			return err
		}
		e, err := c.entry(sub.ID, nil, AuditView(sub))
		if err != nil {
			return err
		}
		return writeAudit(ctx, tx, e)
	})
	if err != nil {
		// A Postgres error's text names the constraint, never the row's
		// values, so the secret stays out of it.
		return fmt.Errorf("add subscriber %s: %w", sub.ID, err)
	}
	return nil
}

// ChangeSubscriber applies a change to subscriber id under a row lock,
// writes it back and records before and after in audit_log, in one
// transaction. apply decides (the rules are the caller's); it returns
// ErrNoChange when there is nothing to do. A subscriber that stops being
// active has its undelivered deliveries exhausted (they stay readable and
// can be recovered).
func (s *Store) ChangeSubscriber(ctx context.Context, id string, c Change, apply func(*Subscriber) error) (before, after Subscriber, err error) {
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		before, after, err = changeSubscriber(ctx, tx, id, c, apply)
		return err
	})
	if err != nil && !errors.Is(err, ErrNoChange) {
		err = fmt.Errorf("%s %s: %w", c.Action, id, err)
	}
	return before, after, err
}

func changeSubscriber(ctx context.Context, tx pgx.Tx, id string, c Change, apply func(*Subscriber) error) (before, after Subscriber, err error) {
	rows, _ := tx.Query(ctx, `select `+subscriberColumns+` from subscribers where id = $1 for update`, id)
	before, err = pgx.CollectExactlyOneRow(rows, scanSubscriber)
	if errors.Is(err, pgx.ErrNoRows) {
		return before, before, fmt.Errorf("subscriber %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return before, before, err
	}
	after = before
	after.Events = slices.Clone(before.Events)
	after.Tokens = slices.Clone(before.Tokens)
	after.Agents = slices.Clone(before.Agents)
	if err := apply(&after); err != nil {
		return before, before, err
	}
	if _, err := tx.Exec(ctx, `
update subscribers set url = $2, secret = $3, events = $4, tokens = $5, agents = $6, status = $7,
    disabled_at = $8, disabled_reason = nullif($9, ''), failing_since = $10, failure_streak = $11,
    previous_secret = nullif($12, ''), previous_secret_until = $13, deleted_at = $14,
    pull_token_hash = coalesce($15, pull_token_hash)
where id = $1`, id, after.URL, after.Secret, after.Events, after.Tokens, after.Agents, after.Status,
		after.DisabledAt, after.DisabledReason, after.FailingSince, after.FailureStreak,
		after.PreviousSecret, after.PreviousSecretUntil, after.DeletedAt, pullHash(after.PullToken)); err != nil {
		return before, before, err
	}
	if before.Status == SubscriberActive && after.Status != SubscriberActive {
		reason := "subscriber disabled: " + after.DisabledReason
		if after.DeletedAt != nil {
			reason = "subscriber removed"
		}
		if _, err := tx.Exec(ctx, `
update deliveries set status = 'exhausted', next_attempt_at = null, claimed_until = null, last_error = $2
where subscriber_id = $1 and status in ('pending', 'retrying')`, id, reason); err != nil {
			return before, before, err
		}
	}
	e, err := c.entry(id, AuditView(before), AuditView(after))
	if err != nil {
		return before, before, err
	}
	return before, after, writeAudit(ctx, tx, e)
}

// pullHash is what is stored of a pull token set on the way in (a new
// one), nil to keep the stored one.
func pullHash(token string) []byte {
	if token == "" {
		return nil
	}
	return webhook.HashPullToken(token)
}

// ActionDisable is the audit action of a subscriber disabled, by an
// operator or by pacer itself.
const ActionDisable = "subscriber.disable"

// disableApply disables an active subscriber with reason.
func disableApply(at time.Time, reason string) func(*Subscriber) error {
	return func(sub *Subscriber) error {
		if sub.Status != SubscriberActive {
			return ErrNoChange
		}
		sub.Status, sub.DisabledAt, sub.DisabledReason = SubscriberDisabled, &at, reason
		return nil
	}
}

// RecoverQuery selects the deliveries to send again (SPEC §10.2, like
// Svix's recover): one subscriber's, in the given statuses, whose period
// ended in (From, To], when they fell due.
type RecoverQuery struct {
	SubscriberID string
	Statuses     []string
	From, To     time.Time
}

// Recovered is what Recover put back in the due set.
type Recovered struct {
	Count int `json:"count"`
	// From counts them by the status they had, "missing" for those never
	// created (the subscriber was disabled when their period ended).
	From map[string]int `json:"from"`
	IDs  []string       `json:"ids"` // the first MaxRecoveredIDs of them
}

// RecoveredMissing counts the deliveries a recovery created.
const RecoveredMissing = "missing"

// MaxRecoveredIDs bounds the ids a recovery lists (and audits).
const MaxRecoveredIDs = 100

// Recover puts the selected deliveries back in the due set, due at c.At on
// a fresh ladder under the same ids, creates those of the range that were
// never created (their period ended while the subscriber was disabled, or
// outside the emission's lookback), and audits it, in one transaction.
// The subscriber must be active.
func (s *Store) Recover(ctx context.Context, q RecoverQuery, c Change) (Recovered, error) {
	out := Recovered{From: map[string]int{}, IDs: []string{}}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var status string
		var deleted bool
		err := tx.QueryRow(ctx, `select status, deleted_at is not null from subscribers where id = $1 for share`,
			q.SubscriberID).Scan(&status, &deleted)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("subscriber %s: %w", q.SubscriberID, ErrNotFound)
		}
		if err != nil {
			return err
		}
		if status != SubscriberActive {
			return ErrSubscriberDisabled
		}
		rows, _ := tx.Query(ctx, `
with old as (
    select id, status from deliveries
    where subscriber_id = $1 and status = any($2) and period_end > $3 and period_end <= $4
    for update
)
update deliveries d set status = 'pending', attempts = 0, next_attempt_at = $5, claimed_until = null,
    delivered_at = null, last_error = null
from old where d.id = old.id
returning d.id, old.status`, q.SubscriberID, q.Statuses, q.From, q.To, c.At)
		var id, was string
		if _, err := pgx.ForEachRow(rows, []any{&id, &was}, func() error {
			out.Count++
			out.From[was]++
			if len(out.IDs) < MaxRecoveredIDs {
				out.IDs = append(out.IDs, id)
			}
			return nil
		}); err != nil {
			return err
		}
		for _, e := range []struct{ event, period string }{{rollup.EventHourly, rollup.Hour}, {rollup.EventDaily, rollup.Day}} {
			rows, _ := tx.Query(ctx, emitSQL+` returning id`, e.event, e.period, c.At, q.From, q.SubscriberID, q.To)
			if _, err := pgx.ForEachRow(rows, []any{&id}, func() error {
				out.Count++
				out.From[RecoveredMissing]++
				if len(out.IDs) < MaxRecoveredIDs {
					out.IDs = append(out.IDs, id)
				}
				return nil
			}); err != nil {
				return err
			}
		}
		slices.Sort(out.IDs)
		e, err := c.entry(q.SubscriberID, q, out)
		if err != nil {
			return err
		}
		return writeAudit(ctx, tx, e)
	})
	if err != nil {
		return Recovered{}, fmt.Errorf("recover deliveries of %s: %w", q.SubscriberID, err)
	}
	return out, nil
}

// SubscriberDeliveries lists one subscriber's deliveries, newest period
// first, at most limit, payloads left out. A removed subscriber's are
// listed too: removing keeps them.
func (s *Store) SubscriberDeliveries(ctx context.Context, subscriberID, status string, limit int) ([]Delivery, error) {
	return collect(ctx, s.pool, "list deliveries of "+subscriberID, scanDelivery, `select `+deliveryColumns+` from deliveries d
where d.subscriber_id = $1 and ($2 = '' or d.status = $2)
order by d.period_start desc, d.id desc
limit $3`, subscriberID, status, limit)
}

// SubscriberHealth counts subscribers by state, for metrics and the
// operator's page.
type SubscriberHealth struct {
	Active   int `json:"active"`
	Failing  int `json:"failing"`
	Disabled int `json:"disabled"`
}

// SubscriberHealthCounts counts the subscribers not removed: active ones,
// those of them failing, and disabled ones.
func (s *Store) SubscriberHealthCounts(ctx context.Context) (SubscriberHealth, error) {
	var h SubscriberHealth
	err := s.pool.QueryRow(ctx, `
select count(*) filter (where status = 'active'),
       count(*) filter (where status = 'active' and failing_since is not null),
       count(*) filter (where status = 'disabled')
from subscribers where deleted_at is null`).Scan(&h.Active, &h.Failing, &h.Disabled)
	if err != nil {
		return h, fmt.Errorf("count subscribers: %w", err)
	}
	return h, nil
}
