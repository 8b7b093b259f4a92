package activities_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/catalog"
	"github.com/pacer-dev/pacer/internal/sim"
)

func TestRefreshTeneroRecordsTheTrackedSet(t *testing.T) {
	t.Parallel()
	f := newTeneroFixture(t, sim.Config{Seed: 3})
	ctx := context.Background()
	_, ok, err := trackedTokens(ctx, f)
	require.NoError(t, err)
	require.False(t, ok, "nothing recorded before a run")

	// Two traded tokens, one traded more; a run cut to two tokens still
	// records the whole set it works through.
	const (
		more = "SP2C2YFP12AJZB4MABJBAJ55XECVS7E4PMMZ89YZR.alpha-token"
		less = "SP2C2YFP12AJZB4MABJBAJ55XECVS7E4PMMZ89YZR.beta-token"
	)
	for i, pair := range [][2]string{{more, "stx"}, {more, less}, {"stx", more}} {
		_, err := f.st.Pool().Exec(ctx, `insert into swaps (txid, sender, contract_id, function_name, token_in, amount_in,
    token_out, amount_out, burn_block_time, tx_status, source) values ($1, 'SPX', 'c', 'f', $2, 1, $3, 1, 1, 'success', 'sweep')`,
			"0x0"+string(rune('a'+i)), pair[0], pair[1])
		require.NoError(t, err)
	}
	_, err = f.runWith(t, pacer.TeneroInput{MaxTokens: 2})
	require.NoError(t, err)
	ids, ok, err := trackedTokens(ctx, f)
	require.NoError(t, err)
	require.True(t, ok)
	want := append(catalog.Default().TokenSet(nil), more, less)
	require.Equal(t, want, ids)
}

func trackedTokens(ctx context.Context, f *teneroFixture) ([]string, bool, error) {
	ids, _, ok, err := f.st.TrackedTokens(ctx)
	return ids, ok, err
}
