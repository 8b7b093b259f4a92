package store

import (
	"context"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// PublicReadConns is the size of the public reads' pool (SPEC §7): the
// API's GETs run on it, apart from the pool the workers and the fast path
// share, so a flood of reads waits for these few connections and never
// for the workers'.
const PublicReadConns = 4

// publicReadTimeout ends a public read server-side sooner than the
// workers' statement timeout: no public answer is worth more.
const publicReadTimeout = 8 * time.Second

// OpenPublicReads opens the public reads' pool: PublicReadConns
// connections (whatever the URL's pool_max_conns), named pacer-public in
// pg_stat_activity, with a shorter statement timeout, and read-only:
// every transaction on it is (default_transaction_read_only), whatever
// the URL's role may do (issue 41.12; give it a role that may only read
// as well, pacer_public, migration 025).
func OpenPublicReads(ctx context.Context, url string) (*Store, error) {
	return open(ctx, url, func(cfg *pgxpool.Config) {
		cfg.MaxConns = PublicReadConns
		cfg.MinConns = 0
		cfg.ConnConfig.RuntimeParams["application_name"] = "pacer-public"
		cfg.ConnConfig.RuntimeParams[statementTimeout] = strconv.FormatInt(publicReadTimeout.Milliseconds(), 10)
		cfg.ConnConfig.RuntimeParams["default_transaction_read_only"] = "on"
	})
}
