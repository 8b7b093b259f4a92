package activities_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/catalog"
	"github.com/pacer-dev/pacer/internal/sim"
)

// Every price a tenero run fetches is an observation, changed or not: the
// second run writes no price (all unchanged) and still observes them all.
func TestTeneroRecordsEveryObservation(t *testing.T) {
	t.Parallel()
	f := newTeneroFixture(t, sim.Config{Seed: 3})
	first, err := f.run(t)
	require.NoError(t, err)
	second, err := f.run(t)
	require.NoError(t, err)
	require.Zero(t, second.Written)

	var rows, tokens, priced int
	require.NoError(t, f.st.Pool().QueryRow(t.Context(), `
select count(*), count(distinct token_id), count(price_usd) from price_observations`).Scan(&rows, &tokens, &priced))
	require.Equal(t, first.Succeeded+second.Succeeded, rows)
	require.Equal(t, len(catalog.Default().TokenSet(nil)), tokens)
	require.Equal(t, rows-first.NoPrice-second.NoPrice, priced, "a confirmed no-price is observed as null")

	// They carry the price as fetched.
	obs, err := f.st.Observations(t.Context(), "stx", time.Unix(0, 0), time.Now().Add(time.Hour))
	require.NoError(t, err)
	require.Len(t, obs, 2)
	p, err := f.st.Prices(t.Context(), []string{"stx"})
	require.NoError(t, err)
	require.Equal(t, *p["stx"].PriceUSD, *obs[1].PriceUSD)
}
