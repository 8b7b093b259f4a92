package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pacer-dev/pacer/internal/wait"
)

// takeSQL spends one request of the current minute if any is left. The
// window is the database's minute, so every process agrees on it whatever
// its clock says. A refused take changes nothing and returns no row.
const takeSQL = `
insert into upstream_budget as b (upstream, window_start, used)
values ($1, date_trunc('minute', now()), 1)
on conflict (upstream, window_start) do update set used = b.used + 1
where b.used < $2
returning used, extract(epoch from (date_trunc('minute', now()) + interval '1 minute' - now()))::float8`

// Budget is a per-minute request budget for one upstream, shared through
// Postgres by every process and task that calls it. It satisfies the Hiro
// client's Limiter.
type Budget struct {
	store     *Store
	upstream  string
	perMinute int
	// Sleep waits out a spent minute; tests replace it.
	Sleep func(context.Context, time.Duration) error
}

// NewBudget returns the budget of upstream at perMinute requests a minute.
func (s *Store) NewBudget(upstream string, perMinute int) *Budget {
	return &Budget{store: s, upstream: upstream, perMinute: perMinute, Sleep: wait.Sleep}
}

// Take spends one request if the current minute has one left. When it has
// not, retryIn says how long until the next minute.
func (b *Budget) Take(ctx context.Context) (ok bool, retryIn time.Duration, err error) {
	var used int
	var left float64
	err = b.store.pool.QueryRow(ctx, takeSQL, b.upstream, b.perMinute).Scan(&used, &left)
	if errors.Is(err, pgx.ErrNoRows) {
		var secs float64
		if err := b.store.pool.QueryRow(ctx,
			`select extract(epoch from (date_trunc('minute', now()) + interval '1 minute' - now()))::float8`).Scan(&secs); err != nil {
			return false, 0, fmt.Errorf("budget %s: %w", b.upstream, err)
		}
		return false, time.Duration(secs * float64(time.Second)), nil
	}
	if err != nil {
		return false, 0, fmt.Errorf("budget %s: %w", b.upstream, err)
	}
	if used == 1 {
		// First request of a new minute: forget old minutes.
		_, _ = b.store.pool.Exec(ctx, `delete from upstream_budget where upstream = $1 and window_start < now() - interval '1 hour'`, b.upstream)
	}
	return true, 0, nil
}

// Wait blocks until a request may be made: at once while the minute has
// budget left, else at the start of the next minute.
func (b *Budget) Wait(ctx context.Context) error {
	for {
		ok, retryIn, err := b.Take(ctx)
		if err != nil || ok {
			return err
		}
		if err := b.Sleep(ctx, retryIn+10*time.Millisecond); err != nil {
			return err
		}
	}
}
