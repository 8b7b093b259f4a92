package page_test

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The ledger section lists the rounds (SPEC §13): each open one's state,
// and the newest finalized one's winners.
func TestLedgerShowsTheRounds(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	v := newPage(d, nil).View(t.Context())
	require.Contains(t, v.Ledger.Rounds, "none")

	h := int64(3600)
	d.exec(`insert into rounds (id, starts_at, ends_at, grace_ends_at) values
		('r-running', to_timestamp($1), to_timestamp($2), to_timestamp($3)),
		('r-due', to_timestamp($4), to_timestamp($5), to_timestamp($6))`,
		now.Unix()-h, now.Unix()+h, now.Unix()+2*h, now.Unix()-4*h, now.Unix()-3*h, now.Unix()-2*h)
	d.exec(`insert into rounds (id, starts_at, ends_at, grace_ends_at, status, finalized_at) values
		('r-done', to_timestamp($1), to_timestamp($2), to_timestamp($2), 'finalized', to_timestamp($3))`,
		now.Unix()-10*h, now.Unix()-9*h, now.Unix()-2*60)
	d.exec(`insert into round_results (round_id, rank, stx_address, trade_count, priced_trade_count, unpriced_trade_count,
		volume_usd, received_usd, pnl_usd, source_agent, source_sweep, source_chainhook, unpriced_tokens, calculated_at)
		values ('r-done', 1, 'SPWINNER', 1, 1, 0, 1, 2, 1, 0, 1, 0, '{}', now())`)
	d.exec(`insert into round_rewards (round_id, category, rank, stx_address, created_at) values
		('r-done', 'overall_pnl', 1, 'SPWINNER', now()), ('r-done', 'volume', 1, 'SPWINNER', now())`)
	v = newPage(d, nil).View(t.Context())
	require.Contains(t, v.Ledger.Rounds, "r-running running (ends "+now.Add(3600e9).UTC().Format("2006-01-02 15:04:05 UTC")+")")
	require.Contains(t, v.Ledger.Rounds, "r-due due: waiting for completeThrough")
	require.Contains(t, v.Ledger.Rounds, "r-done finalized 2m ago (1 results): overall_pnl SPWINNER, volume SPWINNER")
	_, body := get(t, newPage(d, nil))
	require.Contains(t, body, `data-k="ledger.rounds"`)
}
