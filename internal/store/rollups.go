package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pacer-dev/pacer/internal/rollup"
)

// RollupSpec is one period to compute.
type RollupSpec struct {
	Period rollup.Period
	// Tracked is the token set the tenero task keeps fresh: a period is
	// complete only once each of them that was observed in the period has
	// been observed after its end.
	Tracked []string
	// KnownDecimals are the catalog's decimals by contract id, used where
	// Tenero gave none.
	KnownDecimals map[string]int
	ComputedAt    time.Time
}

// RollupOutcome is what ComputeRollup wrote.
type RollupOutcome struct {
	Rows     int
	Complete bool
	// Corrections counts the deliveries created because the period's
	// figures changed after a delivery was made for it.
	Corrections int
}

// tokenRowsSQL: per token, open/high/low/close and samples from the priced
// observations in [start, end). A day closes at the last price at or
// before midnight when it is at most an hour old, else at the day's high
// (SPEC §10.1); an hour closes at its last price.
const tokenRowsSQL = `
insert into rollups (period, period_start, period_end, subject_kind, subject, data, complete, computed_at)
select $1::text, $2::timestamptz, $3::timestamptz, 'token', o.token_id,
    jsonb_build_object(
        'open',    (array_agg(o.price_usd order by o.observed_at))[1],
        'high',    max(o.price_usd),
        'low',     min(o.price_usd),
        'close',   case when $1::text = 'day' then coalesce(
                       (select m.price_usd from price_observations m
                        where m.token_id = o.token_id and m.price_usd is not null
                          and m.observed_at <= $3::timestamptz
                          and m.observed_at >= $3::timestamptz - interval '1 hour'
                        order by m.observed_at desc limit 1),
                       max(o.price_usd))
                   else (array_agg(o.price_usd order by o.observed_at desc))[1] end,
        'samples', count(*)),
    $4::boolean, $5::timestamptz
from price_observations o
where o.observed_at >= $2::timestamptz and o.observed_at < $3::timestamptz and o.price_usd is not null
group by o.token_id`

// agentRowsSQL: per agent and for the whole competition, the swaps mined in
// [start, end) and their USD volume. Each swap's amount_in is priced at the
// token_in's last price at or before its burn_block_time (under its own id,
// else under its contract id, which is how pegs are stored) and scaled by
// the token's decimals (Tenero's, else the catalog's). All of it is numeric
// arithmetic: exact, no float on the way. A swap without a price or
// decimals counts as unpriced; volumeUsd sums the priced ones and is null
// only when no swap could be priced.
const agentRowsSQL = `
with known(token_id, decimals) as (
    select * from unnest($8::text[], $9::int[])
),
s as (
    select sw.sender, sw.token_in collate "C" as token_in, sw.token_out collate "C" as token_out,
           sw.amount_in * px.price * power(10::numeric, -dec.decimals) as usd
    from swaps sw
    cross join lateral (
        select coalesce(
            (select tp.decimals from token_prices tp where tp.token_id = sw.token_in),
            (select tp.decimals from token_prices tp where tp.token_id = split_part(sw.token_in, '::', 1)),
            (select k.decimals from known k where k.token_id = split_part(sw.token_in, '::', 1))
        ) as decimals) dec
    cross join lateral (
        select coalesce(
            (select o.price_usd from price_observations o
             where o.token_id = sw.token_in and o.price_usd is not null
               and o.observed_at <= to_timestamp(sw.burn_block_time)
             order by o.observed_at desc limit 1),
            (select o.price_usd from price_observations o
             where sw.token_in like '%::%' and o.token_id = split_part(sw.token_in, '::', 1)
               and o.price_usd is not null and o.observed_at <= to_timestamp(sw.burn_block_time)
             order by o.observed_at desc limit 1)
        ) as price) px
    where sw.tx_status = 'success'
      and sw.burn_block_time >= $6 and sw.burn_block_time < $7
),
legs as (
    select sender, token_in as token from s
    union all
    select sender, token_out from s
),
traded as (
    select sender, jsonb_agg(distinct token order by token) as tokens
    from legs where token <> 'unknown'
    group by sender
)
insert into rollups (period, period_start, period_end, subject_kind, subject, data, complete, computed_at)
select $1::text, $2::timestamptz, $3::timestamptz, 'agent', s.sender,
    jsonb_build_object(
        'swaps',        count(*),
        'volumeUsd',    trim_scale(sum(s.usd)),
        'unpriced',     count(*) - count(s.usd),
        'tokensTraded', coalesce(t.tokens, '[]'::jsonb)),
    $4::boolean, $5::timestamptz
from s left join traded t on t.sender = s.sender
group by s.sender, t.tokens
union all
select $1::text, $2::timestamptz, $3::timestamptz, 'competition', '` + rollup.CompetitionSubject + `',
    jsonb_build_object(
        'swaps',        count(*),
        'volumeUsd',    case when count(*) > 0 and count(s.usd) = 0 then null
                             else coalesce(trim_scale(sum(s.usd)), 0) end,
        'unpriced',     count(*) - count(s.usd),
        'tokensTraded', coalesce((select jsonb_agg(distinct token order by token) from legs where token <> 'unknown'), '[]'::jsonb),
        'activeAgents', count(distinct s.sender)),
    $4::boolean, $5::timestamptz
from s`

// tokensCaughtUpSQL: every tracked token observed in the period has been
// observed after its end (a "no price" answer counts: Tenero was asked).
// A tracked token never observed in the period (Tenero does not know it)
// cannot hold the period back.
const tokensCaughtUpSQL = `
select not exists (
    select 1 from unnest($1::text[]) as t(token_id)
    where exists (select 1 from price_observations o
                  where o.token_id = t.token_id and o.observed_at >= $2 and o.observed_at < $3)
      and not exists (select 1 from price_observations o
                      where o.token_id = t.token_id and o.observed_at > $3))`

// sweepCaughtUpSQL: every registered agent's transactions have been listed
// successfully after the period's end, so each of its swaps mined in the
// period is in swaps (SPEC §5.1's agent_ingest).
const sweepCaughtUpSQL = `
select not exists (
    select 1 from agents a left join agent_ingest i on i.stx_address = a.stx_address
    where a.deregistered_at is null and (i.last_success_at is null or i.last_success_at <= $1))`

// ComputeRollup (re)computes one period: its rows are replaced, in one
// transaction, by rows computed from what the database holds now. Run
// twice on the same data it writes the same rows (only computed_at moves).
// When the period already has deliveries and its figures changed, the same
// transaction creates their corrections (correctionsSQL).
func (s *Store) ComputeRollup(ctx context.Context, spec RollupSpec) (RollupOutcome, error) {
	var out RollupOutcome
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) (err error) {
		out, err = recompute(ctx, tx, spec)
		return err
	})
	return out, err
}

// recompute computes a period and creates the corrections it calls for.
func recompute(ctx context.Context, tx pgx.Tx, spec RollupSpec) (RollupOutcome, error) {
	out, err := computeRollup(ctx, tx, spec)
	if err != nil {
		return out, err
	}
	out.Corrections, err = emitCorrections(ctx, tx, spec.Period, spec.ComputedAt)
	return out, err
}

// computeRollup is ComputeRollup inside the caller's transaction. A
// period once complete stays complete (SPEC §10.1: a complete day is
// final), so recomputing it after a correction never withdraws it.
func computeRollup(ctx context.Context, tx pgx.Tx, spec RollupSpec) (RollupOutcome, error) {
	p := spec.Period
	if p.Kind != rollup.Hour && p.Kind != rollup.Day {
		return RollupOutcome{}, fmt.Errorf("compute rollup: unknown period %q", p.Kind)
	}
	ids := slices.Sorted(maps.Keys(spec.KnownDecimals))
	decs := make([]int32, len(ids))
	for i, id := range ids {
		decs[i] = int32(spec.KnownDecimals[id])
	}
	var out RollupOutcome
	err := func() error {
		if p.Kind == rollup.Hour {
			// Swaps of the hour committing meanwhile either finish first
			// (this waits for them) or mark the hour (012's trigger).
			if _, err := tx.Exec(ctx, `select pg_advisory_xact_lock($1, $2)`, rollupHourLockClass, hourNumber(p.Start)); err != nil {
				return err
			}
		}
		var was bool
		err := tx.QueryRow(ctx, `
select complete from rollups
where period = $1 and period_start = $2 and subject_kind = 'competition' and subject = $3`,
			p.Kind, p.Start, rollup.CompetitionSubject).Scan(&was)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		complete := was
		if !complete {
			if complete, err = caughtUp(ctx, tx, spec.Tracked, p); err != nil {
				return err
			}
		}
		out.Complete = complete
		if _, err := tx.Exec(ctx, `delete from rollups where period = $1 and period_start = $2`, p.Kind, p.Start); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, tokenRowsSQL, p.Kind, p.Start, p.End, complete, spec.ComputedAt)
		if err != nil {
			return err
		}
		out.Rows += int(tag.RowsAffected())
		tag, err = tx.Exec(ctx, agentRowsSQL, p.Kind, p.Start, p.End, complete, spec.ComputedAt,
			p.Start.Unix(), p.End.Unix(), ids, decs)
		if err != nil {
			return err
		}
		out.Rows += int(tag.RowsAffected())
		return nil
	}()
	if err != nil {
		return RollupOutcome{}, fmt.Errorf("compute %s rollup of %s: %w", p.Kind, p.Start.UTC().Format(time.RFC3339), err)
	}
	return out, nil
}

// caughtUp decides whether a period is complete (SPEC §10.1): every
// tracked token observed after its end, and no agent overdue past it.
func caughtUp(ctx context.Context, tx pgx.Tx, tracked []string, p rollup.Period) (bool, error) {
	var tokens, sweep bool
	if err := tx.QueryRow(ctx, tokensCaughtUpSQL, tracked, p.Start, p.End).Scan(&tokens); err != nil {
		return false, err
	}
	if !tokens {
		return false, nil
	}
	if err := tx.QueryRow(ctx, sweepCaughtUpSQL, p.End).Scan(&sweep); err != nil {
		return false, err
	}
	return sweep, nil
}

// DirtyOutcome is what RecomputeDirty did.
type DirtyOutcome struct {
	// Marks are the marks handled (and cleared): their hours, UTC.
	Marks []time.Time
	// Periods are the periods recomputed, hours then days, each in order.
	Periods []RecomputedPeriod
	// Rows counts the rollup rows written, Corrections the deliveries
	// created to correct ones made before.
	Rows        int
	Corrections int
}

// RecomputedPeriod is one period RecomputeDirty recomputed.
type RecomputedPeriod struct {
	rollup.Period
	RollupOutcome
}

// RecomputeDirty handles the rollup_dirty marks (UTC hours whose swaps
// changed after their rollups were computed: a rollback, a re-apply): it
// recomputes each marked hour that has ended by spec.ComputedAt and every
// ended day in zone that shares an instant with it (spec.Period is not
// used), creates the corrections the new figures call for
// (correctionsSQL), and clears exactly the marks it handled. A mark whose
// hour has not ended yet is left for a later run (the hour's own rollup
// will read the changed swaps anyway).
//
// It is one transaction that clears the marks first: killed midway, it
// leaves everything as it was, marks included, and the next run does it
// all again. A mark written for one of the same hours meanwhile (with
// "on conflict do nothing" or "do update") waits for this transaction,
// then finds the mark gone and inserts it anew: a change made while this
// ran is never cleared unseen. (A row lock would not do: an insert's
// "on conflict do nothing" does not wait for a locked row.)
func (s *Store) RecomputeDirty(ctx context.Context, spec RollupSpec, zone *time.Location) (DirtyOutcome, error) {
	var out DirtyOutcome
	now := spec.ComputedAt
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		out = DirtyOutcome{}
		rows, _ := tx.Query(ctx, `
delete from rollup_dirty where hour_start + interval '1 hour' <= $1 returning hour_start`, now)
		marks, err := pgx.CollectRows(rows, pgx.RowTo[time.Time])
		if err != nil || len(marks) == 0 {
			return err
		}
		slices.SortFunc(marks, time.Time.Compare)
		var hours, days []rollup.Period
		for _, h := range marks {
			hour := rollup.Period{Kind: rollup.Hour, Start: h.UTC(), End: h.UTC().Add(time.Hour)}
			hours = append(hours, hour)
			for _, d := range rollup.DaysOverlapping(hour, zone) {
				seen := slices.ContainsFunc(days, func(e rollup.Period) bool { return e.Start.Equal(d.Start) })
				if !d.End.After(now) && !seen {
					days = append(days, d)
				}
			}
		}
		slices.SortFunc(days, func(a, b rollup.Period) int { return a.Start.Compare(b.Start) })
		for _, p := range append(hours, days...) {
			spec.Period = p
			r, err := recompute(ctx, tx, spec)
			if err != nil {
				return err
			}
			out.Rows += r.Rows
			out.Corrections += r.Corrections
			out.Periods = append(out.Periods, RecomputedPeriod{Period: p, RollupOutcome: r})
		}
		for _, m := range marks {
			out.Marks = append(out.Marks, m.UTC())
		}
		return nil
	})
	if err != nil {
		return DirtyOutcome{}, fmt.Errorf("recompute dirty rollups: %w", err)
	}
	return out, nil
}

// RollupState says whether a period's rollups exist and whether they are
// complete.
func (s *Store) RollupState(ctx context.Context, period string, start time.Time) (exists, complete bool, err error) {
	err = s.pool.QueryRow(ctx, `
select complete from rollups
where period = $1 and period_start = $2 and subject_kind = 'competition' and subject = $3`,
		period, start, rollup.CompetitionSubject).Scan(&complete)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, false, nil
	}
	if err != nil {
		return false, false, fmt.Errorf("rollup state: %w", err)
	}
	return true, complete, nil
}

// Rollup is one row of rollups.
type Rollup struct {
	Period      string          `json:"period"`
	PeriodStart time.Time       `json:"periodStart"`
	PeriodEnd   time.Time       `json:"periodEnd"`
	SubjectKind string          `json:"subjectKind"`
	Subject     string          `json:"subject"`
	Complete    bool            `json:"complete"`
	ComputedAt  time.Time       `json:"computedAt"`
	Data        json.RawMessage `json:"data"`
}

// RollupQuery selects rollups: one period kind, periods starting in
// [From, To), optionally one subject, at most Limit rows.
type RollupQuery struct {
	Period      string
	From, To    time.Time
	SubjectKind string // "" = every subject
	Subject     string
	Limit       int
}

// Rollups reads rollups in (period_start, subject_kind, subject) order.
func (s *Store) Rollups(ctx context.Context, q RollupQuery) ([]Rollup, error) {
	rows, err := s.pool.Query(ctx, `
select period, period_start, period_end, subject_kind, subject, complete, computed_at, data
from rollups
where period = $1 and period_start >= $2 and period_start < $3
  and ($4 = '' or (subject_kind = $4 and subject = $5))
order by period_start, subject_kind, subject collate "C"
limit $6`, q.Period, q.From, q.To, q.SubjectKind, q.Subject, q.Limit)
	if err != nil {
		return nil, fmt.Errorf("read rollups: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Rollup, error) {
		var r Rollup
		err := row.Scan(&r.Period, &r.PeriodStart, &r.PeriodEnd, &r.SubjectKind, &r.Subject, &r.Complete, &r.ComputedAt, &r.Data)
		return r, err
	})
	if err != nil {
		return nil, fmt.Errorf("read rollups: %w", err)
	}
	return out, nil
}

// rollupHourLockClass is the advisory lock class ("pace") of an hour's
// rollup, shared with migration 012's swaps_mark_dirty trigger.
const rollupHourLockClass int32 = 1885430629

// hourNumber is an hour's number since the epoch, the lock's object id
// (it fits an int4 until the year 2214).
func hourNumber(t time.Time) int32 { return int32(t.Unix() / 3600) }
