package activities_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/activities"
	"github.com/pacer-dev/pacer/internal/catalog"
	"github.com/pacer-dev/pacer/internal/pacing/bench"
	"github.com/pacer-dev/pacer/internal/sim"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/internal/tenero"
	"github.com/pacer-dev/pacer/internal/testenv"
)

// fixedClock is a clock the test sets.
type fixedClock struct{ at time.Time }

func (c *fixedClock) now() time.Time { return c.at }

// simTraded is n of the simulator's own tokens that are neither static nor
// pegs: ones it answers with a price (or a confirmed "no price").
func simTraded(t *testing.T, s *sim.Server, n int) []string {
	t.Helper()
	cat := catalog.Default()
	static := map[string]bool{}
	for _, id := range cat.StaticBase() {
		static[id] = true
	}
	var out []string
	for _, tok := range s.Tokens() {
		if _, peg := cat.Peg(tok.ID); !tok.Peg && !peg && !static[tok.ID] && len(out) < n {
			out = append(out, tok.ID)
		}
	}
	require.Len(t, out, n)
	return out
}

// TestRefreshTeneroFetchesWhatTheBenchmarkPicks hands the tenero activity
// the states the benchmark's pacer chose from on the Starter plan (each
// token's last check, the run's allowance, the instant) and holds the
// activity to the benchmark's choice: the same tokens, in the same order, as
// the simulator received them.
func TestRefreshTeneroFetchesWhatTheBenchmarkPicks(t *testing.T) {
	t.Parallel()
	clock := &fixedClock{}
	f := newTeneroFixture(t, sim.Config{Seed: 3, Tenero: sim.TeneroConfig{Anonymous: sim.Limits{PerMinute: 100_000}}},
		func(o *activities.Options) { o.Clock = clock.now })
	cat := catalog.Default()
	picks := bench.StarterPicks(24 * time.Hour)
	static := cat.StaticBase()
	require.Len(t, static, picks[0].Static, "the benchmark's static base is the catalog's")
	traded := simTraded(t, f.sim, len(picks[0].Checked)-len(static))
	testenv.TradeTokens(t, f.st, traded)
	// The benchmark's tokens by index: the static base, then the traded
	// tokens from most to least traded.
	tokens := append(append([]string(nil), static...), traded...)

	compared, one := 0, "1"
	for k, p := range picks {
		if p.N >= len(tokens) || k%3 != 0 {
			continue // an uncut run is the whole set; every third cut run is plenty
		}
		_, err := f.st.Pool().Exec(t.Context(), `delete from token_prices`)
		require.NoError(t, err)
		for i, at := range p.Checked {
			if at != nil {
				_, err := f.st.UpsertPrice(t.Context(), store.Price{TokenID: tokens[i], PriceUSD: &one,
					Source: store.SourceTenero, FetchedAt: *at})
				require.NoError(t, err)
			}
		}
		clock.at = p.At
		f.takeFetched()
		res, err := f.runWith(t, pacer.TeneroInput{MaxTokens: p.N})
		require.NoError(t, err)
		var want []string
		for _, i := range p.Picked {
			want = append(want, tenero.Address(tokens[i]))
		}
		require.Equal(t, want, f.takeFetched(), "run %d at %s, allowance %d", k, p.At, p.N)
		require.Equal(t, p.N, res.Requests)
		require.Equal(t, len(tokens), res.Wanted)
		compared++
	}
	require.GreaterOrEqual(t, compared, 5)
	t.Logf("figures: %d cut runs of the benchmark's first day on the Starter plan, each fetched as the benchmark picked", compared)
}

// Every answer from Tenero is a check (SPEC §4.8): a price written or kept,
// a confirmed "no price", a 404; a failed fetch is not.
func TestRefreshTeneroRecordsEveryCheck(t *testing.T) {
	t.Parallel()
	clock := &fixedClock{at: time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)}
	f := newTeneroFixture(t, sim.Config{Seed: 3}, func(o *activities.Options) { o.Clock = clock.now })
	var noPrice string
	for _, tok := range f.sim.Tokens() {
		if _, ok := f.sim.PriceAt(tok.Address, clock.at); !ok && !tok.Peg {
			noPrice = tok.ID
			break
		}
	}
	require.NotEmpty(t, noPrice, "the simulator has tokens without a price")
	unknown := "SP3ZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZ.unknown-token::unknown"
	testenv.TradeTokens(t, f.st, []string{noPrice, unknown})
	set := catalog.Default().TokenSet([]string{noPrice, unknown})

	checked := func() map[string]*time.Time {
		prices, err := f.st.Prices(t.Context(), set)
		require.NoError(t, err)
		out := map[string]*time.Time{}
		for id, p := range prices {
			out[id] = p.CheckedAt
		}
		return out
	}
	expectChecked := func(at time.Time) {
		t.Helper()
		got := checked()
		for _, id := range set {
			if _, peg := catalog.Default().Peg(id); peg {
				continue
			}
			require.NotNil(t, got[id], "%s checked", id)
			require.True(t, at.Equal(*got[id]), "%s checked at %s, want %s", id, *got[id], at)
		}
	}

	res, err := f.run(t)
	require.NoError(t, err, "one token unknown to Tenero does not fail the run")
	require.Equal(t, 1, res.Failed)
	require.Equal(t, 1, res.NoPrice)
	expectChecked(clock.at)

	first := clock.at
	clock.at = clock.at.Add(10 * time.Minute)
	_, _ = f.run(t) // prices written or kept: checked either way (internal/store's tests tell the two apart)
	expectChecked(clock.at)

	require.NoError(t, f.sim.SetFaults(sim.Faults{ServerError: 1}))
	kept := clock.at
	clock.at = clock.at.Add(10 * time.Minute)
	_, err = f.run(t)
	require.Error(t, err)
	expectChecked(kept)
	require.True(t, first.Before(kept))
}
