package testenv

import (
	"context"
	"testing"

	"github.com/pacer-dev/pacer/internal/store"
)

// Store opens a store on a private schema (PostgresURL) with every
// migration applied, closed when t ends.
func Store(t testing.TB) *store.Store {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, PostgresURL(t))
	if err != nil {
		t.Fatalf("testenv: open store: %v", err)
	}
	t.Cleanup(st.Close)
	if err := st.Migrate(ctx); err != nil {
		t.Fatalf("testenv: migrate: %v", err)
	}
	return st
}

// TradeTokens makes ids the agents' traded tokens (SPEC §4.1), ids[0] the
// most traded: ids[j] is both sides of len(ids)-j successful swaps.
func TradeTokens(t testing.TB, st *store.Store, ids []string) {
	t.Helper()
	for j, id := range ids {
		_, err := st.Pool().Exec(context.Background(), `
insert into swaps (txid, sender, contract_id, function_name, token_in, amount_in, token_out, amount_out,
                   burn_block_time, tx_status, source)
select format('0x%s-%s', $1::int, g), 'SP000000000000000000002Q6VF78', 'SP000000000000000000002Q6VF78.router', 'swap',
       $2, 1, $2, 1, 1778700600, 'success', 'sweep'
from generate_series(1, $3::int) g`, j, id, len(ids)-j)
		if err != nil {
			t.Fatalf("testenv: trade %s: %v", id, err)
		}
	}
}
