package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pacer-dev/pacer/internal/rollup"
)

// Delivery statuses (SPEC §6).
const (
	DeliveryPending   = "pending"
	DeliveryRetrying  = "retrying"
	DeliveryDelivered = "delivered"
	DeliveryExhausted = "exhausted"
)

// DeliveryStatuses lists every status, in lifecycle order.
var DeliveryStatuses = []string{DeliveryPending, DeliveryRetrying, DeliveryDelivered, DeliveryExhausted}

// DeliveryRetention is how long a delivered or exhausted delivery stays
// pullable through GET /api/deliveries/{id}.
const DeliveryRetention = 35 * 24 * time.Hour

// Delivery is one row of deliveries.
type Delivery struct {
	ID            string          `json:"id"`
	SubscriberID  string          `json:"subscriberId"`
	Event         string          `json:"event"`
	PeriodStart   time.Time       `json:"periodStart"`
	PeriodEnd     time.Time       `json:"periodEnd"`
	Status        string          `json:"status"`
	Attempts      int             `json:"attempts"`
	NextAttemptAt *time.Time      `json:"nextAttemptAt"`
	LastAttemptAt *time.Time      `json:"lastAttemptAt"`
	LastStatus    *int            `json:"lastStatus"`
	LastError     string          `json:"lastError,omitempty"`
	CreatedAt     time.Time       `json:"createdAt"`
	DeliveredAt   *time.Time      `json:"deliveredAt"`
	Replaces      string          `json:"replaces,omitempty"` // the delivery this one corrects; empty for an original
	Payload       json.RawMessage `json:"payload,omitempty"`
}

const utcStamp = `'YYYY-MM-DD"T"HH24:MI:SS"Z"'`

// payloadDataSQL is the "data" of a delivery body for the row t
// (period_start, period_end, complete, and the subscriber's tokens and
// agents filters): the period's rollups through the filters, the
// competition totals always. $2 is the period kind.
const payloadDataSQL = `jsonb_build_object(
    'period', $2::text,
    'periodStart', to_char(t.period_start at time zone 'UTC', ` + utcStamp + `),
    'periodEnd', to_char(t.period_end at time zone 'UTC', ` + utcStamp + `),
    'complete', t.complete,
    'tokens', coalesce((
        select jsonb_object_agg(r.subject, r.data) from rollups r
        where r.period = $2::text and r.period_start = t.period_start and r.subject_kind = 'token'
          and (t.tokens is null or r.subject = any(t.tokens))), '{}'::jsonb),
    'agents', coalesce((
        select jsonb_object_agg(r.subject, r.data) from rollups r
        where r.period = $2::text and r.period_start = t.period_start and r.subject_kind = 'agent'
          and (t.agents is null or r.subject = any(t.agents))), '{}'::jsonb),
    'competition', (
        select r.data from rollups r
        where r.period = $2::text and r.period_start = t.period_start
          and r.subject_kind = 'competition' and r.subject = '` + rollup.CompetitionSubject + `'))`

// emitSQL creates the deliveries of one event that are due to exist: one
// per active subscriber that wants the event and period of the rollups
// computed since Since (for daily, complete ones only) that ended after
// the subscriber was created. A subscriber with a daily delivery still
// retrying gets no new daily one (SPEC §10.3). The id is
// webhook.DeliveryID, derived from (subscriber, event, period); the
// payload is the period's rollups through the subscriber's filters, frozen
// now so that every attempt and every pull sends the same bytes. $5 narrows
// it to one subscriber (null: all) and $6 bounds the periods' end (a
// recovery's range; else now).
const emitSQL = `
with subs as (
    select s.id, s.tokens, s.agents, s.created_at from subscribers s
    where s.status = 'active' and $1::text = any(s.events) and ($5::text is null or s.id = $5)
      and ($1::text <> 'daily' or not exists (
          select 1 from deliveries r
          where r.subscriber_id = s.id and r.event = 'daily' and r.status = 'retrying'))
),
periods as (
    select c.period_start, c.period_end, c.complete from rollups c
    where c.period = $2::text and c.subject_kind = 'competition' and c.subject = '` + rollup.CompetitionSubject + `'
      and c.period_end > $4::timestamptz and c.period_end <= least($3::timestamptz, $6::timestamptz)
      and ($1::text <> 'daily' or c.complete)
),
todo as (
    select subs.id, subs.tokens, subs.agents, p.period_start, p.period_end, p.complete
    from subs cross join periods p
    where p.period_end > subs.created_at
      and not exists (select 1 from deliveries d
                      where d.subscriber_id = subs.id and d.event = $1::text and d.period_start = p.period_start)
)
insert into deliveries (id, subscriber_id, event, period_start, period_end, payload, status, attempts, next_attempt_at, created_at)
select t.id || '-' || $1::text || '-' || to_char(t.period_start at time zone 'UTC', 'YYYYMMDD"T"HH24MI"Z"'),
    t.id, $1::text, t.period_start, t.period_end,
    jsonb_build_object(
        'type', 'rollup.' || $1::text,
        'timestamp', to_char($3::timestamptz at time zone 'UTC', ` + utcStamp + `),
        'data', ` + payloadDataSQL + `),
    'pending', 0, $3::timestamptz, $3::timestamptz
from todo t
on conflict (subscriber_id, event, period_start) where replaces is null do nothing`

// correctionsSQL creates the corrections of one period whose rollups were
// just recomputed: for each active subscriber's last delivery of the
// period (the one no other delivery replaces: the original, or its latest
// correction), whatever its status, a new delivery when the period's
// figures through the subscriber's filters (tokens, agents, competition)
// differ from the ones it carries. A daily one only while the day is
// complete. The id is the original's with "-c<n>" appended, n counting
// the corrections of the period from 1; the body is an ordinary one of
// the event's type with "correction": true and "replaces": the id of the
// delivery it corrects. $1 event, $2 period kind, $3 now, $4 period start.
const correctionsSQL = `
with t as (
    select d.id as head_id, d.payload -> 'data' as sent, s.id, s.tokens, s.agents,
           d.period_start, d.period_end, c.complete
    from deliveries d
    join subscribers s on s.id = d.subscriber_id and s.status = 'active'
    join rollups c on c.period = $2::text and c.period_start = d.period_start
         and c.subject_kind = 'competition' and c.subject = '` + rollup.CompetitionSubject + `'
    where d.event = $1::text and d.period_start = $4::timestamptz
      and not exists (select 1 from deliveries x where x.replaces = d.id)
      and ($1::text <> 'daily' or c.complete)
),
fresh as (
    select t.head_id, t.sent, t.id, t.period_start, t.period_end, ` + payloadDataSQL + ` as data
    from t
)
insert into deliveries (id, subscriber_id, event, period_start, period_end, payload, status, attempts, next_attempt_at, created_at, replaces)
select regexp_replace(f.head_id, '-c[0-9]+$', '') || '-c' || (coalesce(substring(f.head_id from '-c([0-9]+)$')::int, 0) + 1),
    f.id, $1::text, f.period_start, f.period_end,
    jsonb_build_object(
        'type', 'rollup.' || $1::text,
        'timestamp', to_char($3::timestamptz at time zone 'UTC', ` + utcStamp + `),
        'correction', true,
        'replaces', f.head_id,
        'data', f.data),
    'pending', 0, $3::timestamptz, $3::timestamptz, f.head_id
from fresh f
where f.data -> 'tokens' is distinct from f.sent -> 'tokens'
   or f.data -> 'agents' is distinct from f.sent -> 'agents'
   or f.data -> 'competition' is distinct from f.sent -> 'competition'
on conflict do nothing`

// emitCorrections creates the corrections of one recomputed period (see
// correctionsSQL) and returns how many it created.
func emitCorrections(ctx context.Context, tx pgx.Tx, p rollup.Period, now time.Time) (int, error) {
	event := rollup.EventOf(p.Kind)
	tag, err := tx.Exec(ctx, correctionsSQL, event, p.Kind, now, p.Start)
	if err != nil {
		return 0, fmt.Errorf("emit %s corrections: %w", event, err)
	}
	return int(tag.RowsAffected()), nil
}

// EmitDeliveries creates the deliveries of event for periods that ended in
// (since, now] and returns how many it created.
func (s *Store) EmitDeliveries(ctx context.Context, event string, now, since time.Time) (int, error) {
	period := rollup.Hour
	if event == rollup.EventDaily {
		period = rollup.Day
	}
	tag, err := s.pool.Exec(ctx, emitSQL, event, period, now, since, nil, now)
	if err != nil {
		return 0, fmt.Errorf("emit %s deliveries: %w", event, err)
	}
	return int(tag.RowsAffected()), nil
}

// DueKey is a position in the due set's keyset order: deliveries of
// healthy subscribers first, then by next attempt time and id.
type DueKey struct {
	Suspect       bool
	NextAttemptAt time.Time
	ID            string
}

// DueQuery reads one page of the due set.
type DueQuery struct {
	Now time.Time
	// After is the last key of the previous page (nil: from the start).
	After *DueKey
	// Busy are subscribers whose attempts already fill their share.
	Busy []string
	// FirstAttemptsOnly leaves retries out (the run's retries are spent).
	FirstAttemptsOnly bool
	Limit             int
}

// DueDelivery is a due delivery as the due set lists it. URL, Secret and
// Body are filled in by ClaimDeliveries, for the ones claimed: a page of
// the due set stays small however large the payloads.
type DueDelivery struct {
	DueKey
	SubscriberID string
	Event        string
	PeriodEnd    time.Time
	Attempts     int
	// Correction says it corrects an earlier delivery of its period.
	Correction bool

	URL    string
	Secret string
	// PreviousSecret is a rotated secret still in its overlap (empty
	// otherwise): the delivery carries both signatures.
	PreviousSecret string
	Body           []byte
}

// dueSQL pages through the due set by keyset, never OFFSET: rows leave and
// re-enter it as they are attempted. A suspect subscriber (one whose
// endpoint is failing) sorts after every healthy one, so its attempts never
// hold up theirs.
const dueSQL = `
select (s.failing_since is not null) as suspect, d.next_attempt_at, d.id,
       d.subscriber_id, d.event, d.period_end, d.attempts, d.replaces is not null
from deliveries d join subscribers s on s.id = d.subscriber_id
where d.status in ('pending', 'retrying') and d.next_attempt_at <= $1
  and s.status = 'active'
  and (d.claimed_until is null or d.claimed_until <= $1)
  and d.subscriber_id <> all($2::text[])
  and (not $3 or d.attempts = 0)
  and ((s.failing_since is not null), d.next_attempt_at, d.id) > ($4::bool, $5::timestamptz, $6::text)
order by (s.failing_since is not null), d.next_attempt_at, d.id
limit $7`

// DueDeliveries reads one page of deliveries due at q.Now.
func (s *Store) DueDeliveries(ctx context.Context, q DueQuery) ([]DueDelivery, error) {
	after := DueKey{NextAttemptAt: time.Unix(0, 0)}
	if q.After != nil {
		after = *q.After
	}
	busy := q.Busy
	if busy == nil {
		busy = []string{}
	}
	rows, _ := s.pool.Query(ctx, dueSQL, q.Now, busy, q.FirstAttemptsOnly,
		after.Suspect, after.NextAttemptAt, after.ID, q.Limit)
	due, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (DueDelivery, error) {
		var d DueDelivery
		err := row.Scan(&d.Suspect, &d.NextAttemptAt, &d.ID, &d.SubscriberID, &d.Event, &d.PeriodEnd, &d.Attempts, &d.Correction)
		return d, err
	})
	if err != nil {
		return nil, fmt.Errorf("read due deliveries: %w", err)
	}
	return due, nil
}

// ClaimDeliveries leases due deliveries until `until`, just before they
// are sent, so that no other run sends them meanwhile (a worker that lost
// its heartbeat may still be running), and fills in what sending them
// needs, in picks' order. One is left out when it was delivered,
// rescheduled or claimed by another run since it was read, or its
// subscriber disabled.
func (s *Store) ClaimDeliveries(ctx context.Context, picks []DueDelivery, now, until time.Time) ([]DueDelivery, error) {
	ids := make([]string, len(picks))
	for i, p := range picks {
		ids[i] = p.ID
	}
	rows, _ := s.pool.Query(ctx, `
update deliveries d set claimed_until = $3
from subscribers s
where d.id = any($1) and s.id = d.subscriber_id and s.status = 'active'
  and d.status in ('pending', 'retrying') and d.next_attempt_at <= $2
  and (d.claimed_until is null or d.claimed_until <= $2)
returning d.id, s.url, s.secret, case when s.previous_secret_until > $2 then s.previous_secret else '' end,
    d.payload::text`, ids, now, until)
	type claim struct {
		url, secret, previous string
		body                  []byte
	}
	claimed := map[string]claim{}
	var id, url, secret, previous, body string
	_, err := pgx.ForEachRow(rows, []any{&id, &url, &secret, &previous, &body}, func() error {
		claimed[id] = claim{url, secret, previous, []byte(body)}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("claim deliveries: %w", err)
	}
	out := make([]DueDelivery, 0, len(claimed))
	for _, p := range picks {
		if c, ok := claimed[p.ID]; ok {
			p.URL, p.Secret, p.PreviousSecret, p.Body = c.url, c.secret, c.previous, c.body
			out = append(out, p)
		}
	}
	return out, nil
}

// ReleaseDelivery gives a claim back unused (the run was cancelled before
// the attempt had an outcome).
func (s *Store) ReleaseDelivery(ctx context.Context, id string) error {
	if _, err := s.pool.Exec(ctx, `update deliveries set claimed_until = null where id = $1`, id); err != nil {
		return fmt.Errorf("release delivery %s: %w", id, err)
	}
	return nil
}

// RecordDelivered records a successful attempt and clears its subscriber's
// failing mark. It applies whatever the delivery's status: a 2xx is the
// truth even if the subscriber was disabled meanwhile.
func (s *Store) RecordDelivered(ctx context.Context, id string, at time.Time, status int) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := lockSubscriberOf(ctx, tx, id); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `
with d as (
    update deliveries set status = 'delivered', attempts = attempts + 1, delivered_at = $2,
        last_attempt_at = $2, last_status = $3, last_error = null, next_attempt_at = null, claimed_until = null
    where id = $1
    returning subscriber_id
)
update subscribers set failing_since = null, failure_streak = 0
where id = (select subscriber_id from d) and (failing_since is not null or failure_streak > 0)`, id, at, status)
		return err
	})
	if err != nil {
		return fmt.Errorf("record delivery %s: %w", id, err)
	}
	return nil
}

// lockSubscriberOf locks the subscriber of delivery id before the
// delivery's row is written: every transaction that writes both takes the
// subscriber first (a disable exhausts all of its deliveries), so that two
// never wait on each other.
func lockSubscriberOf(ctx context.Context, tx pgx.Tx, id string) error {
	_, err := tx.Exec(ctx, `
select 1 from deliveries d join subscribers s on s.id = d.subscriber_id where d.id = $1 for update of s`, id)
	return err
}

// Failure is a failed attempt to record.
type Failure struct {
	ID           string
	SubscriberID string
	At           time.Time
	Status       int // 0: no answer
	Error        string
	// Next is when to try again; nil exhausts the delivery.
	Next *time.Time
	// DisableAfter is PACER_DISABLE_AFTER: a subscriber whose every
	// attempt has failed for this long is disabled (0: never).
	DisableAfter time.Duration
}

// RecordFailed records a failed attempt, at once (SPEC §10.3): the
// delivery goes on the ladder (retrying) or is exhausted, and its
// subscriber is marked failing and its failure streak grows. A subscriber
// failing every attempt for f.DisableAfter is disabled with its reason,
// audited as pacer's doing, in the same transaction (SPEC §10.2);
// disabled says it was.
func (s *Store) RecordFailed(ctx context.Context, f Failure) (disabled bool, err error) {
	status := DeliveryRetrying
	if f.Next == nil {
		status = DeliveryExhausted
	}
	var code *int
	if f.Status != 0 {
		code = &f.Status
	}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := lockSubscriberOf(ctx, tx, f.ID); err != nil {
			return err
		}
		var since *time.Time
		var streak int
		var subStatus string
		err := tx.QueryRow(ctx, `
with d as (
    update deliveries set status = $2, attempts = attempts + 1, last_attempt_at = $3,
        last_status = $4, last_error = $5, next_attempt_at = $6, claimed_until = null
    where id = $1 and status in ('pending', 'retrying')
    returning subscriber_id
)
update subscribers set failing_since = coalesce(failing_since, $3), failure_streak = failure_streak + 1
where id = (select subscriber_id from d)
returning failing_since, failure_streak, status`, f.ID, status, f.At, code, f.Error, f.Next).Scan(&since, &streak, &subStatus)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // delivered or exhausted meanwhile
		}
		if err != nil || f.DisableAfter <= 0 || subStatus != SubscriberActive || since == nil || f.At.Sub(*since) < f.DisableAfter {
			return err
		}
		reason := fmt.Sprintf("failed every attempt for %s (%d attempts since %s; last: %s)",
			f.At.Sub(*since).Round(time.Minute), streak, since.UTC().Format(time.RFC3339), f.Error)
		_, _, err = changeSubscriber(ctx, tx, f.SubscriberID, Change{At: f.At, Actor: ActorPacer, Action: ActionDisable},
			disableApply(f.At, reason))
		if errors.Is(err, ErrNoChange) {
			return nil
		}
		disabled = err == nil
		return err
	})
	if err != nil {
		return false, fmt.Errorf("record failed delivery %s: %w", f.ID, err)
	}
	return disabled, nil
}

// DisableSubscriber disables a subscriber whose endpoint answered 410 and
// exhausts its undelivered deliveries (they stay pullable), recording the
// attempt that got the 410. It returns how many deliveries it exhausted
// and whether it disabled the subscriber (false: already disabled).
func (s *Store) DisableSubscriber(ctx context.Context, f Failure) (exhausted int, disabled bool, err error) {
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `select 1 from subscribers where id = $1 for update`, f.SubscriberID); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `
update deliveries set attempts = attempts + 1, last_attempt_at = $2, last_status = $3
where id = $1 and status in ('pending', 'retrying')`, f.ID, f.At, f.Status); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `
select count(*) from deliveries where subscriber_id = $1 and status in ('pending', 'retrying')`,
			f.SubscriberID).Scan(&exhausted); err != nil {
			return err
		}
		_, _, err := changeSubscriber(ctx, tx, f.SubscriberID, Change{At: f.At, Actor: ActorPacer, Action: ActionDisable},
			disableApply(f.At, f.Error))
		if errors.Is(err, ErrNoChange) {
			exhausted = 0
			return nil
		}
		disabled = err == nil
		return err
	})
	if err != nil {
		return 0, false, fmt.Errorf("disable subscriber %s: %w", f.SubscriberID, err)
	}
	return exhausted, disabled, nil
}

// dueAt is when a delivery can next be attempted: its next attempt time,
// or, while an attempt holds its lease (a worker died mid-POST), when the
// lease lapses. undelivered selects the deliveries of active subscribers
// still to be delivered.
const (
	dueAt       = `greatest(d.next_attempt_at, coalesce(d.claimed_until, d.next_attempt_at))`
	undelivered = `deliveries d join subscribers s on s.id = d.subscriber_id
where d.status in ('pending', 'retrying') and s.status = 'active'`
)

// RetriesDue reports whether a delivery that already had an attempt is
// due at now: what a run that spent its retries leaves for the next.
func (s *Store) RetriesDue(ctx context.Context, now time.Time) (bool, error) {
	var due bool
	err := s.pool.QueryRow(ctx, `select exists (select 1 from `+undelivered+` and d.attempts > 0 and `+dueAt+` <= $1)`,
		now).Scan(&due)
	if err != nil {
		return false, fmt.Errorf("retries due: %w", err)
	}
	return due, nil
}

// NextDeliveryDue returns when the earliest undelivered delivery of an
// active subscriber can next be attempted (dueAt), nil when there is none.
func (s *Store) NextDeliveryDue(ctx context.Context) (*time.Time, error) {
	return s.NextDeliveryDueAfter(ctx, time.Time{})
}

// NextDeliveryDueAfter is NextDeliveryDue among those due later than now.
func (s *Store) NextDeliveryDueAfter(ctx context.Context, now time.Time) (*time.Time, error) {
	var next *time.Time
	err := s.pool.QueryRow(ctx, `select min(`+dueAt+`) from `+undelivered+` and `+dueAt+` > $1`, now).Scan(&next)
	if err != nil {
		return nil, fmt.Errorf("next delivery due: %w", err)
	}
	return next, nil
}

// DeliveryCounts counts deliveries by status (every status present).
func (s *Store) DeliveryCounts(ctx context.Context) (map[string]int, error) {
	rows, _ := s.pool.Query(ctx, `select status, count(*) from deliveries group by status`)
	counts := make(map[string]int, len(DeliveryStatuses))
	for _, st := range DeliveryStatuses {
		counts[st] = 0
	}
	var status string
	var n int
	_, err := pgx.ForEachRow(rows, []any{&status, &n}, func() error {
		counts[status] = n
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("count deliveries: %w", err)
	}
	return counts, nil
}

// PruneDeliveries deletes delivered and exhausted deliveries created before
// `before`.
func (s *Store) PruneDeliveries(ctx context.Context, before time.Time) (int64, error) {
	tag, err := s.pool.Exec(ctx, `
delete from deliveries where status in ('delivered', 'exhausted') and created_at < $1`, before)
	if err != nil {
		return 0, fmt.Errorf("prune deliveries: %w", err)
	}
	return tag.RowsAffected(), nil
}

// deliveryColumns reads a delivery aliased d.
const deliveryColumns = `d.id, d.subscriber_id, d.event, d.period_start, d.period_end, d.status, d.attempts,
    d.next_attempt_at, d.last_attempt_at, d.last_status, coalesce(d.last_error, ''), d.created_at, d.delivered_at, coalesce(d.replaces, '')`

func scanDelivery(row pgx.CollectableRow) (Delivery, error) {
	var d Delivery
	err := row.Scan(&d.ID, &d.SubscriberID, &d.Event, &d.PeriodStart, &d.PeriodEnd, &d.Status, &d.Attempts,
		&d.NextAttemptAt, &d.LastAttemptAt, &d.LastStatus, &d.LastError, &d.CreatedAt, &d.DeliveredAt, &d.Replaces)
	return d, err
}

// Deliveries lists deliveries, newest first, optionally of one status, at
// most limit of them. Payloads are left out.
func (s *Store) Deliveries(ctx context.Context, status string, limit int) ([]Delivery, error) {
	return collect(ctx, s.pool, "list deliveries", scanDelivery, `select `+deliveryColumns+` from deliveries d
where $1 = '' or d.status = $1
order by d.created_at desc, d.id desc
limit $2`, status, limit)
}

// DeliveryWithSecret reads one delivery, its payload as it is sent, and
// its subscriber's secret (to authenticate a pull).
func (s *Store) DeliveryWithSecret(ctx context.Context, id string) (Delivery, string, bool, error) {
	var d Delivery
	var secret, payload string
	err := s.pool.QueryRow(ctx, `select `+deliveryColumns+`, d.payload::text, s.secret
from deliveries d join subscribers s on s.id = d.subscriber_id
where d.id = $1`, id).Scan(&d.ID, &d.SubscriberID, &d.Event, &d.PeriodStart, &d.PeriodEnd, &d.Status, &d.Attempts,
		&d.NextAttemptAt, &d.LastAttemptAt, &d.LastStatus, &d.LastError, &d.CreatedAt, &d.DeliveredAt, &d.Replaces, &payload, &secret)
	if errors.Is(err, pgx.ErrNoRows) {
		return Delivery{}, "", false, nil
	}
	if err != nil {
		return Delivery{}, "", false, fmt.Errorf("read delivery %s: %w", id, err)
	}
	d.Payload = json.RawMessage(payload)
	return d, secret, true, nil
}

// ErrSubscriberDisabled refuses a redelivery to a disabled subscriber.
var ErrSubscriberDisabled = errors.New("its subscriber is disabled")

// Redeliver puts a delivery back in the due set at c.At with a fresh
// ladder, whatever its status, and audits it, in one transaction; found
// is false when there is no such delivery. The id, and so the
// webhook-id, stays the same.
func (s *Store) Redeliver(ctx context.Context, id string, c Change) (found bool, err error) {
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var subStatus, was string
		err := tx.QueryRow(ctx, `
select s.status, d.status from deliveries d join subscribers s on s.id = d.subscriber_id
where d.id = $1 for update of d`, id).Scan(&subStatus, &was)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		found = true
		if subStatus != SubscriberActive {
			return ErrSubscriberDisabled
		}
		if _, err := tx.Exec(ctx, `
update deliveries set status = 'pending', attempts = 0, next_attempt_at = $2, claimed_until = null,
    delivered_at = null, last_error = null
where id = $1`, id, c.At); err != nil {
			return err
		}
		e, err := c.entry(id, map[string]string{"status": was}, map[string]string{"status": DeliveryPending})
		if err != nil {
			return err
		}
		return writeAudit(ctx, tx, e)
	})
	if err != nil {
		return found, fmt.Errorf("redeliver %s: %w", id, err)
	}
	return found, nil
}
