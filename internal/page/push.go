package page

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// pushFresh is how recently the holder of Hiro's WebSocket must have
// written for push to count as live: the silence bound (push.Silence).
const pushFresh = 30 * time.Second

// loadPush is the ledger's push line (SPEC §5.0 "Push"): live or down,
// since when, messages and reconnects, from push_state; "" when no worker
// has held the WebSocket (PACER_PUSH=off, or an older database).
func (p *Page) loadPush(ctx context.Context, pool *pgxpool.Pool, now time.Time) (string, error) {
	if ok, err := p.tables.has(ctx, pool, "push_state"); err != nil || !ok {
		return "", err
	}
	var live bool
	var since, updated time.Time
	var messages, reconnects int64
	var sockets, liveSockets int
	var holder, lastErr string
	err := pool.QueryRow(ctx, `select live and updated_at > $1, since, updated_at, messages, reconnects,
       sockets, live_sockets, holder, coalesce(last_error, '') from push_state where id`, now.Add(-pushFresh)).
		Scan(&live, &since, &updated, &messages, &reconnects, &sockets, &liveSockets, &holder, &lastErr)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("push state: %w", err)
	}
	state := "live"
	if !live {
		state = "down: the tail reads at PACER_TAIL_EVERY"
		if updated.Before(now.Add(-pushFresh)) {
			since = updated // the holder went quiet: down since its last word
		}
	}
	line := fmt.Sprintf("%s since %s (%s), %s of %s sockets live, %s messages, %s reconnects, held by %s",
		state, stamp(since), relative(since, now), count(liveSockets), count(sockets), count(messages), count(reconnects), holder)
	if !live && lastErr != "" {
		line += "; last error: " + lastErr
	}
	return line, nil
}
