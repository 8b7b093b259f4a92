package store_test

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/store"
)

// insertSwap adds a swap row with everything but what the ranking reads
// filled in with plausible values.
func insertSwap(t *testing.T, s *store.Store, source, status, tokenIn, tokenOut string) {
	t.Helper()
	_, err := s.Pool().Exec(t.Context(), `
insert into swaps (txid, sender, contract_id, function_name, token_in, amount_in,
                   token_out, amount_out, burn_block_time, tx_status, source)
values ($1, 'SP1M8KHCJXB3SBRQRDBCG3J3859AA1CN0AWDHN17B',
        'SM1793C4R5PZ4NS4VQ4WMP7SKKYVH8JZEWSZ9HCCR.xyk-core-v-1-2', 'swap-x-for-y',
        $2, 1000, $3, 2000, 1778700600, $4, $5)`,
		fmt.Sprintf("0x%064x", txidSeq.Add(1)), tokenIn, tokenOut, status, source)
	require.NoError(t, err)
}

// txidSeq numbers the test swaps: txid is the primary key.
var txidSeq atomic.Int64

func TestTradedTokens(t *testing.T) {
	t.Parallel()
	s := newStore(t)

	ids, err := s.TradedTokens(t.Context(), 50)
	require.NoError(t, err)
	require.Empty(t, ids)

	const (
		a = "SP1AY6K3PQV5MRT6R4S671NWW2FRVPKM0BR162CT6.leo-token::leo"
		b = "SP3NE50GEXFG9SZGTT51P40X2CKYSZ5CC4ZTZ7A2G.welshcorgicoin-token::welshcorgicoin"
		c = "SP2C2YFP12AJZB4MABJBAJ55XECVS7E4PMMZ89YZR.usda-token"
		d = "SP3K8BC0PPEVCV7NZ6QSRWPQ2JE9E5B6N3PA0KBR9.token-susdt"
		e = "SP4SZE494VC2YC5JYG7AYFQ44F5Q4PYV7DVMDPBG.ststx-token::ststx"
	)
	// stx: 6, a: 3 (ties e, then broken by byte order), e: 3, c: 2 (ties d
	// and b), with the swaps push found first counted like the others.
	insertSwap(t, s, "agent", "success", "stx", a)
	insertSwap(t, s, "sweep", "success", a, "stx")
	insertSwap(t, s, "sweep", "success", "stx", a)
	insertSwap(t, s, "agent", "success", c, "stx")
	insertSwap(t, s, "sweep", "success", b, c)
	insertSwap(t, s, "sweep", "success", d, b)
	insertSwap(t, s, "agent", "success", d, e)
	insertSwap(t, s, "chainhook", "success", "stx", "stx")
	insertSwap(t, s, "chainhook", "success", e, e)
	// None of these count: unknown legs, a failed swap.
	insertSwap(t, s, "sweep", "success", "unknown", "unknown")
	insertSwap(t, s, "agent", "success", "unknown", "stx")
	insertSwap(t, s, "chainhook", "success", "unknown", "unknown")
	insertSwap(t, s, "sweep", "abort_by_response", e, e)
	insertSwap(t, s, "chainhook", "abort_by_response", b, b)

	tests := []struct {
		giveLimit int
		want      []string
	}{
		{giveLimit: 50, want: []string{"stx", a, e, c, d, b}},
		{giveLimit: 3, want: []string{"stx", a, e}},
		{giveLimit: 0, want: []string{}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.giveLimit), func(t *testing.T) {
			t.Parallel()
			got, err := s.TradedTokens(t.Context(), tt.giveLimit)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}

	_, err = s.TradedTokens(t.Context(), -1)
	require.Error(t, err)
}
