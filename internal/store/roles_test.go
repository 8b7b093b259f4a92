package store_test

import (
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/internal/testenv"
)

// pgCode is err's SQLSTATE ("" for none).
func pgCode(err error) string {
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		return pg.Code
	}
	return ""
}

// Issue 41.12: the public reads' pool wrote (completeThrough's ratchet,
// on every computation) as the configured user, the superuser in every
// example. It is read-only now, whatever its user may do: a write through
// it fails (SQLSTATE 25006) with the superuser's URL; before, it
// succeeded. What it read is published by the worker's pool.
func TestThePublicReadsPoolWritesNothing(t *testing.T) {
	t.Parallel()
	url := testenv.PostgresURL(t)
	st := openStore(t, url)
	require.NoError(t, st.Migrate(t.Context()))
	reads, err := store.OpenPublicReads(t.Context(), url)
	require.NoError(t, err)
	t.Cleanup(reads.Close)

	_, err = reads.Pool().Exec(t.Context(), `insert into competition_state (key, value, updated_at) values ('probe', '1', now())`)
	require.Equal(t, "25006", pgCode(err), "read-only transaction: %v", err)

	through, err := reads.PublishedCompleteThrough(t.Context())
	require.NoError(t, err)
	require.Nil(t, through, "nothing published yet")
	_, err = st.Pool().Exec(t.Context(), `insert into competition_state (key, value, updated_at) values ('complete_through', '1778700600', now())`)
	require.NoError(t, err)
	through, err = reads.PublishedCompleteThrough(t.Context())
	require.NoError(t, err)
	require.Equal(t, int64(1778700600), *through)
}

// The roles of migration 025: a member of pacer_public reads everything
// the public API reads and nothing else, and writes nothing; a member of
// pacer_worker reads and writes every table but changes no schema.
func TestRolesGrantWhatEachPoolNeeds(t *testing.T) {
	t.Parallel()
	url := testenv.PostgresURL(t)
	owner := openStore(t, url)
	require.NoError(t, owner.Migrate(t.Context()))
	ctx := t.Context()

	public, err := store.OpenPublicReads(ctx, testenv.AsRole(t, url, "pacer_public"))
	require.NoError(t, err)
	t.Cleanup(public.Close)
	// Every read the public API makes (internal/api, s.reads()).
	_, err = public.AllPrices(ctx)
	require.NoError(t, err)
	_, err = public.Prices(ctx, []string{"stx"})
	require.NoError(t, err)
	_, err = public.Board(ctx, []store.TokenFactor{{TokenID: "stx", Factor: 1}})
	require.NoError(t, err)
	_, err = public.AgentStatus(ctx, "SP1PFR4V08H1RAZXREBGFFQ59WB739XM8VVGTFSEA")
	require.NoError(t, err)
	_, err = public.Trades(ctx, "", nil, 10)
	require.NoError(t, err)
	_, err = public.TradedTokens(ctx, 10)
	require.NoError(t, err)
	_, err = public.Rollups(ctx, store.RollupQuery{Period: "hour", From: time.Now().Add(-time.Hour), To: time.Now(), Limit: 10})
	require.NoError(t, err)
	_, err = public.PublishedCompleteThrough(ctx)
	require.NoError(t, err)
	_, _, err = public.FinalRounds(ctx, 10, 0)
	require.NoError(t, err)
	_, _, err = public.FinalRound(ctx, "week-1")
	require.NoError(t, err)
	_, _, err = public.FinalRoundResult(ctx, "week-1", "SP1PFR4V08H1RAZXREBGFFQ59WB739XM8VVGTFSEA")
	require.NoError(t, err)
	_, err = public.LatestRoundResult(ctx, "SP1PFR4V08H1RAZXREBGFFQ59WB739XM8VVGTFSEA")
	require.NoError(t, err)
	_, _, _, err = public.DeliveryForPull(ctx, "sub_aaaaaaaaaaaaaaaa-hourly-20261101T0000Z")
	require.NoError(t, err)
	// Nothing else, and no writes even outside the pool's read-only
	// transactions.
	for _, sql := range []string{
		`select count(*) from audit_log`,
		`select secret from subscribers`,
		`select count(*) from upstream_budget`,
		`begin read write; insert into competition_state (key, value, updated_at) values ('probe', '1', now())`,
		`begin read write; update swaps set amount_in = 0`,
	} {
		_, err := public.Pool().Exec(ctx, sql)
		require.Equal(t, "42501", pgCode(err), "%s: permission denied: %v", sql, err)
	}

	worker, err := store.Open(ctx, testenv.AsRole(t, url, "pacer_worker"))
	require.NoError(t, err)
	t.Cleanup(worker.Close)
	require.NoError(t, worker.RecordAudit(ctx, store.AuditEntry{At: time.Now(), Actor: "probe", Action: "probe"}))
	_, err = worker.CompleteThrough(ctx)
	require.NoError(t, err)
	_, err = worker.Pool().Exec(ctx, `create table probe (id int)`)
	require.Equal(t, "42501", pgCode(err), "no DDL: %v", err)
	_, err = worker.Pool().Exec(ctx, `drop table audit_log`)
	require.Equal(t, "42501", pgCode(err), "not the owner: %v", err)
}
