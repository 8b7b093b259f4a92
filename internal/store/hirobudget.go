package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pacer-dev/pacer/internal/budget"
	"github.com/pacer-dev/pacer/internal/discovery"
	"github.com/pacer-dev/pacer/internal/hiro"
	"github.com/pacer-dev/pacer/internal/wait"
)

// UpstreamHiro names Hiro's row of upstream_budget_state.
const UpstreamHiro = "hiro"

// UpstreamRegistry names the registry's row (SPEC §12): its own budget.
const UpstreamRegistry = "registry"

// SharedBudget is an upstream's one budget (internal/budget) kept in
// Postgres: every Take and Observe of every process reads and writes the
// same row under its lock, in the database's clock, so all processes see
// one minute window and one month.
type SharedBudget struct {
	store    *Store
	upstream string
	cfg      budget.Config
}

// SharedBudget returns the budget of upstream under cfg.
func (s *Store) SharedBudget(upstream string, cfg budget.Config) *SharedBudget {
	return &SharedBudget{store: s, upstream: upstream, cfg: cfg.WithDefaults()}
}

// Config is the budget's configuration.
func (b *SharedBudget) Config() budget.Config { return b.cfg }

// apply runs f on the budget's state under its row lock, at the
// database's clock, and saves what f left when it says to.
func (b *SharedBudget) apply(ctx context.Context, f func(st *budget.State, now time.Time) (save bool)) error {
	return pgx.BeginFunc(ctx, b.store.pool, func(tx pgx.Tx) error {
		var (
			raw []byte
			now time.Time
		)
		err := tx.QueryRow(ctx, `select state, clock_timestamp() from upstream_budget_state where upstream = $1 for update`, b.upstream).Scan(&raw, &now)
		if errors.Is(err, pgx.ErrNoRows) {
			if _, err := tx.Exec(ctx, `insert into upstream_budget_state (upstream, state) values ($1, '{}') on conflict do nothing`, b.upstream); err != nil {
				return err
			}
			err = tx.QueryRow(ctx, `select state, clock_timestamp() from upstream_budget_state where upstream = $1 for update`, b.upstream).Scan(&raw, &now)
		}
		if err != nil {
			return err
		}
		var st budget.State
		if err := json.Unmarshal(raw, &st); err != nil {
			// A state pacer cannot read is started afresh rather than
			// stopping every request: the headers teach it again.
			st = budget.State{}
		}
		if !f(&st, now) {
			return nil
		}
		raw, err = json.Marshal(st)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `update upstream_budget_state set state = $2, updated_at = now() where upstream = $1`, b.upstream, raw)
		return err
	})
}

// Take spends cost for lane if the budget allows it now. A refusal writes
// nothing; the fast lane's is decided on a read of the row, without its
// lock, so that a flood of public requests the fast lane refuses never
// queues behind, or holds up, the sweep's takes on the one row.
func (b *SharedBudget) Take(ctx context.Context, lane budget.Lane, cost int64) (budget.Decision, error) {
	if lane == budget.LaneFast {
		st, now, err := b.Snapshot(ctx)
		if err != nil {
			return budget.Decision{}, fmt.Errorf("%s budget take: %w", b.upstream, err)
		}
		if d := st.Take(b.cfg, lane, cost, now); !d.OK {
			return d, nil
		}
	}
	var d budget.Decision
	err := b.apply(ctx, func(st *budget.State, now time.Time) bool {
		d = st.Take(b.cfg, lane, cost, now)
		return d.OK
	})
	if err != nil {
		return d, fmt.Errorf("%s budget take: %w", b.upstream, err)
	}
	return d, nil
}

// Observe follows one response's headers.
func (b *SharedBudget) Observe(ctx context.Context, lane budget.Lane, o budget.Observation) error {
	err := b.apply(ctx, func(st *budget.State, now time.Time) bool {
		st.Observe(b.cfg, lane, o, now)
		return true
	})
	if err != nil {
		return fmt.Errorf("%s budget observe: %w", b.upstream, err)
	}
	return nil
}

// Snapshot reads the budget's state without changing it, with the
// database's clock.
func (b *SharedBudget) Snapshot(ctx context.Context) (budget.State, time.Time, error) {
	var (
		st  budget.State
		raw []byte
		now time.Time
	)
	err := b.store.pool.QueryRow(ctx, `
select coalesce((select state from upstream_budget_state where upstream = $1), '{}'), clock_timestamp()`, b.upstream).Scan(&raw, &now)
	if err != nil {
		return st, now, fmt.Errorf("%s budget snapshot: %w", b.upstream, err)
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		return budget.State{}, now, nil
	}
	return st, now, nil
}

// PlanView is lane's snapshot of the budget as discovery.Plan reads it,
// on the caller's clock (now: the database's instants are shifted to
// it), and what the minute window and the month have left (month nil
// while Hiro has not said).
func (b *SharedBudget) PlanView(ctx context.Context, lane budget.Lane, now time.Time) (v discovery.Budget, minute int64, month *int64, err error) {
	st, dbNow, err := b.Snapshot(ctx)
	if err != nil {
		return v, 0, nil, err
	}
	shift := now.Sub(dbNow)
	minute, month = st.Remaining(b.cfg, dbNow)
	v = PlanBudget(&st, b.cfg, lane, dbNow)
	v.WindowEnd = v.WindowEnd.Add(shift)
	if !v.RoomAt.IsZero() {
		v.RoomAt = v.RoomAt.Add(shift)
	}
	return v, minute, month, nil
}

// Limiter is one lane of a SharedBudget as the Hiro client's Limiter.
type Limiter struct {
	budget  *SharedBudget
	lane    budget.Lane
	maxWait time.Duration
	// Sleep waits for the budget; tests replace it.
	Sleep func(context.Context, time.Duration) error
	// OnError sees the errors Observe cannot return (nil: dropped).
	OnError func(error)
}

var _ hiro.Limiter = (*Limiter)(nil)

// Limiter returns lane's limiter. Wait blocks while the budget will have
// room within maxWait and otherwise fails at once with a
// *hiro.BudgetSpentError saying when it will: the fast path never waits
// (maxWait 0), and a sweep run ends when its share is spent instead of
// sleeping through the window.
func (b *SharedBudget) Limiter(lane budget.Lane, maxWait time.Duration) *Limiter {
	return &Limiter{budget: b, lane: lane, maxWait: maxWait, Sleep: wait.Sleep}
}

// Wait takes one request's slot. An error other than a
// *hiro.BudgetSpentError is the budget store's own failure, which the Hiro
// client reports as transport trouble, never as a rate limit.
func (l *Limiter) Wait(ctx context.Context) error {
	deadline := time.Now().Add(l.maxWait)
	for {
		d, err := l.budget.Take(ctx, l.lane, 1)
		if err != nil {
			return err
		}
		if d.OK {
			return nil
		}
		if time.Until(deadline) < d.RetryIn {
			spent := &hiro.BudgetSpentError{RetryAfter: d.RetryIn, What: fmt.Sprintf("the %s lane's %s budget", l.lane, d.Why), Why: d.Why}
			if d.Why == budget.WhyBlocked {
				return errors.Join(spent, hiro.ErrRefused)
			}
			return spent
		}
		if err := l.Sleep(ctx, d.RetryIn); err != nil {
			return err
		}
	}
}

// observeTimeout bounds the write of one response's headers, which must
// happen even when the caller's context has just ended.
const observeTimeout = 5 * time.Second

// Observe debits the response's cost and follows its headers.
func (l *Limiter) Observe(ctx context.Context, q hiro.Quota) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), observeTimeout)
	defer cancel()
	if err := l.budget.Observe(ctx, l.lane, QuotaObservation(q)); err != nil && l.OnError != nil {
		l.OnError(err)
	}
}

// QuotaObservation is what the budget reads from a Hiro response's quota: the
// lower of the two minute counters Hiro may send.
func QuotaObservation(q hiro.Quota) budget.Observation {
	o := budget.Observation{Status: q.StatusCode, Cost: q.Cost, Limit: q.Limit, Remaining: q.Remaining,
		Reset: q.Reset, RetryAfter: q.RetryAfter, MonthLimit: q.MonthLimit, MonthRemaining: q.MonthRemaining, SentAt: q.SentAt}
	if m := q.MinuteRemaining; m != nil && (o.Remaining == nil || *m < *o.Remaining) {
		o.Remaining = m
	}
	return o
}

// PlanBudget is lane's budget as discovery.Plan reads it, at now on the
// budget's clock: the room and when more comes, the rate, and the end of
// what the plan may count on for the tail's reads (State.RoomEnd). The
// chain benchmark builds its plan's budget with it too.
func PlanBudget(st *budget.State, cfg budget.Config, lane budget.Lane, now time.Time) discovery.Budget {
	n, at, why := st.Room(cfg, lane, now)
	return discovery.Budget{Known: true, Room: n, RoomAt: at, Why: why, WindowEnd: st.RoomEnd(cfg, now), Rate: st.Rate(cfg, lane, now)}
}
