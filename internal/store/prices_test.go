package store_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/internal/testenv"
)

// t0 has no sub-microsecond part, so it survives a round trip through
// timestamptz unchanged.
var t0 = time.Date(2026, 5, 14, 12, 0, 0, 0, time.UTC)

func ptr[T any](v T) *T { return &v }

func TestUpsertPrice(t *testing.T) {
	t.Parallel()
	s := newStore(t)

	price := func(usd *string, decimals *int, source string, fetchedAt time.Time) store.Price {
		return store.Price{PriceUSD: usd, Decimals: decimals, Source: source, FetchedAt: fetchedAt,
			MinuteRemaining: ptr[int64](9), MonthRemaining: ptr[int64](9000)}
	}
	tenero := func(usd string, at time.Time) store.Price {
		return price(ptr(usd), ptr(6), store.SourceTenero, at)
	}

	tests := []struct {
		name        string
		giveStored  *store.Price // nil: no row yet
		give        store.Price
		wantWritten bool
		wantUSD     *string // the stored price afterwards
		wantFetched time.Time
	}{
		{
			name:        "new token",
			give:        tenero("1.5", t0),
			wantWritten: true, wantUSD: ptr("1.5"), wantFetched: t0,
		},
		{
			name:        "unchanged under an hour",
			giveStored:  ptr(tenero("1.5", t0)),
			give:        tenero("1.5", t0.Add(59*time.Minute)),
			wantWritten: false, wantUSD: ptr("1.5"), wantFetched: t0,
		},
		{
			name:        "numerically equal text",
			giveStored:  ptr(tenero("1.50", t0)),
			give:        tenero("1.5", t0.Add(time.Minute)),
			wantWritten: false, wantUSD: ptr("1.50"), wantFetched: t0,
		},
		{
			name:        "unchanged an hour later",
			giveStored:  ptr(tenero("1.5", t0)),
			give:        tenero("1.5", t0.Add(time.Hour)),
			wantWritten: true, wantUSD: ptr("1.5"), wantFetched: t0.Add(time.Hour),
		},
		{
			name:        "changed",
			giveStored:  ptr(tenero("1.5", t0)),
			give:        tenero("1.6", t0.Add(time.Minute)),
			wantWritten: true, wantUSD: ptr("1.6"), wantFetched: t0.Add(time.Minute),
		},
		{
			name:        "changed in the last digit",
			giveStored:  ptr(tenero("0.000000000000000000000000000001", t0)),
			give:        tenero("0.000000000000000000000000000002", t0.Add(time.Minute)),
			wantWritten: true, wantUSD: ptr("0.000000000000000000000000000002"), wantFetched: t0.Add(time.Minute),
		},
		{
			name:        "decimals changed",
			giveStored:  ptr(tenero("1.5", t0)),
			give:        price(ptr("1.5"), ptr(8), store.SourceTenero, t0.Add(time.Minute)),
			wantWritten: true, wantUSD: ptr("1.5"), wantFetched: t0.Add(time.Minute),
		},
		{
			name:        "decimals learnt",
			giveStored:  ptr(price(ptr("1.5"), nil, store.SourceTenero, t0)),
			give:        tenero("1.5", t0.Add(time.Minute)),
			wantWritten: true, wantUSD: ptr("1.5"), wantFetched: t0.Add(time.Minute),
		},
		{
			name:        "still no price",
			giveStored:  ptr(price(nil, ptr(6), store.SourceTenero, t0)),
			give:        price(nil, ptr(6), store.SourceTenero, t0.Add(5*time.Minute)),
			wantWritten: false, wantUSD: nil, wantFetched: t0,
		},
		{
			name:        "price lost",
			giveStored:  ptr(tenero("1.5", t0)),
			give:        price(nil, ptr(6), store.SourceTenero, t0.Add(time.Minute)),
			wantWritten: true, wantUSD: nil, wantFetched: t0.Add(time.Minute),
		},
		{
			name:        "price found",
			giveStored:  ptr(price(nil, ptr(6), store.SourceTenero, t0)),
			give:        tenero("2", t0.Add(time.Minute)),
			wantWritten: true, wantUSD: ptr("2"), wantFetched: t0.Add(time.Minute),
		},
		{
			name:        "source changed",
			giveStored:  ptr(tenero("1", t0)),
			give:        price(ptr("1"), ptr(6), store.SourcePeg, t0.Add(time.Minute)),
			wantWritten: true, wantUSD: ptr("1"), wantFetched: t0.Add(time.Minute),
		},
		{
			name:        "older fetch never wins",
			giveStored:  ptr(tenero("1.5", t0)),
			give:        tenero("1.4", t0.Add(-2*time.Hour)),
			wantWritten: false, wantUSD: ptr("1.5"), wantFetched: t0,
		},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// Each case has its own token, so the cases share one schema.
			id := "SP000000000000000000000000000000000000000" + string(rune('A'+i)) + ".t"
			if tt.giveStored != nil {
				stored := *tt.giveStored
				stored.TokenID = id
				written, err := s.UpsertPrice(t.Context(), stored)
				require.NoError(t, err)
				require.True(t, written)
			}

			give := tt.give
			give.TokenID = id
			written, err := s.UpsertPrice(t.Context(), give)
			require.NoError(t, err)
			require.Equal(t, tt.wantWritten, written)

			got, err := s.Prices(t.Context(), []string{id})
			require.NoError(t, err)
			require.Contains(t, got, id)
			require.Equal(t, tt.wantUSD, got[id].PriceUSD)
			require.True(t, tt.wantFetched.Equal(got[id].FetchedAt), "fetched_at %s, want %s", got[id].FetchedAt, tt.wantFetched)
			// Every answer is a check, written or not (SPEC §4.8); an
			// older one never moves it back.
			wantChecked := give.FetchedAt
			if tt.giveStored != nil && tt.giveStored.FetchedAt.After(wantChecked) {
				wantChecked = tt.giveStored.FetchedAt
			}
			require.NotNil(t, got[id].CheckedAt)
			require.True(t, wantChecked.Equal(*got[id].CheckedAt), "checked_at %s, want %s", *got[id].CheckedAt, wantChecked)
		})
	}
}

func TestUpsertPriceRoundTrip(t *testing.T) {
	t.Parallel()
	s := newStore(t)

	// Far beyond float64 and 2^64, at both ends.
	const exact = "123456789012345678901234567890.000000000000000000000000000000123456789"
	give := store.Price{
		TokenID:         "stx",
		PriceUSD:        ptr(exact),
		Decimals:        ptr(6),
		Source:          store.SourceTenero,
		FetchedAt:       t0,
		MinuteRemaining: ptr[int64](0),
		MonthRemaining:  nil,
	}
	written, err := s.UpsertPrice(t.Context(), give)
	require.NoError(t, err)
	require.True(t, written)

	got, err := s.Prices(t.Context(), []string{"stx"})
	require.NoError(t, err)
	p := got["stx"]
	require.False(t, p.UpdatedAt.IsZero())
	p.UpdatedAt = time.Time{}
	p.FetchedAt = p.FetchedAt.UTC()
	require.NotNil(t, p.CheckedAt)
	require.True(t, t0.Equal(*p.CheckedAt))
	p.CheckedAt = nil
	require.Equal(t, give, p)
}

// Quota headers are the upstream's numbers: an "unlimited" sentinel such as
// 2^32-1, or a large plan, must be stored as sent, not fail the write.
func TestUpsertPriceKeepsQuotasPast32Bits(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	for _, tt := range []struct {
		name       string
		giveMinute int64
		giveMonth  int64
	}{
		{name: "3e9 month", giveMinute: 99, giveMonth: 3_000_000_000},
		{name: "uint32 sentinel", giveMinute: 1<<32 - 1, giveMonth: 1<<32 - 1},
		{name: "the clamp ceiling", giveMinute: 1<<53 - 1, giveMonth: 1<<53 - 1},
	} {
		give := store.Price{TokenID: tt.name, PriceUSD: ptr("1.5"), Source: store.SourceTenero,
			FetchedAt: t0, MinuteRemaining: &tt.giveMinute, MonthRemaining: &tt.giveMonth}
		_, err := s.UpsertPrice(t.Context(), give)
		require.NoError(t, err, tt.name)
		got, err := s.Prices(t.Context(), []string{tt.name})
		require.NoError(t, err)
		require.Equal(t, tt.giveMinute, *got[tt.name].MinuteRemaining, tt.name)
		require.Equal(t, tt.giveMonth, *got[tt.name].MonthRemaining, tt.name)
	}
}

func TestUpsertPriceRejectsGarbage(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	_, err := s.UpsertPrice(t.Context(), store.Price{TokenID: "stx", PriceUSD: ptr("1.2.3"), Source: store.SourceTenero, FetchedAt: t0})
	require.ErrorContains(t, err, "upsert price stx")
	_, err = s.UpsertPrice(t.Context(), store.Price{TokenID: "stx", PriceUSD: ptr("-1"), Source: store.SourceTenero, FetchedAt: t0})
	require.Error(t, err)
	_, err = s.UpsertPrice(t.Context(), store.Price{TokenID: "stx", Source: "guess", FetchedAt: t0})
	require.Error(t, err)
}

func TestPrices(t *testing.T) {
	t.Parallel()
	s := newStore(t)

	all, err := s.AllPrices(t.Context())
	require.NoError(t, err)
	require.Empty(t, all)

	for _, id := range []string{"stx", "SP2C2YFP12AJZB4MABJBAJ55XECVS7E4PMMZ89YZR.usda-token", "SM3VDXK3WZZSA84XXFKAFAF15NNZX32CTSG82JFQ4.sbtc-token::sbtc-token"} {
		_, err := s.UpsertPrice(t.Context(), store.Price{TokenID: id, PriceUSD: ptr("1"), Source: store.SourceTenero, FetchedAt: t0})
		require.NoError(t, err)
	}

	got, err := s.Prices(t.Context(), []string{"stx", "SP2C2YFP12AJZB4MABJBAJ55XECVS7E4PMMZ89YZR.usda-token", "missing"})
	require.NoError(t, err)
	require.Len(t, got, 2)
	require.Contains(t, got, "stx")
	require.NotContains(t, got, "missing")

	got, err = s.Prices(t.Context(), nil)
	require.NoError(t, err)
	require.Empty(t, got)

	all, err = s.AllPrices(t.Context())
	require.NoError(t, err)
	ids := make([]string, len(all))
	for i, p := range all {
		ids[i] = p.TokenID
	}
	// Byte order: upper case sorts before lower case.
	require.Equal(t, []string{
		"SM3VDXK3WZZSA84XXFKAFAF15NNZX32CTSG82JFQ4.sbtc-token::sbtc-token",
		"SP2C2YFP12AJZB4MABJBAJ55XECVS7E4PMMZ89YZR.usda-token",
		"stx",
	}, ids)
}

// A 404 is Tenero's answer too: it moves checked_at and nothing else, and a
// token never priced gets the row of a confirmed "no price".
func TestMarkChecked(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	priced := store.Price{TokenID: "SP0000000000000000000000000000000000000A.priced", PriceUSD: ptr("2"), Decimals: ptr(6),
		Source: store.SourceTenero, FetchedAt: t0}
	_, err := s.UpsertPrice(ctx, priced)
	require.NoError(t, err)
	unknown := "SP0000000000000000000000000000000000000B.unknown"

	at := t0.Add(time.Hour)
	require.NoError(t, s.MarkChecked(ctx, priced.TokenID, at))
	require.NoError(t, s.MarkChecked(ctx, unknown, at))
	require.NoError(t, s.MarkChecked(ctx, unknown, t0), "an older check is ignored")

	got, err := s.Prices(ctx, []string{priced.TokenID, unknown})
	require.NoError(t, err)
	p := got[priced.TokenID]
	require.Equal(t, ptr("2"), p.PriceUSD, "the price stays")
	require.True(t, t0.Equal(p.FetchedAt))
	require.True(t, at.Equal(*p.CheckedAt))
	u := got[unknown]
	require.Nil(t, u.PriceUSD)
	require.Equal(t, store.SourceTenero, u.Source)
	require.True(t, at.Equal(*u.CheckedAt))
}

// Rows written before checked_at existed start from their fetched_at.
func TestCheckedAtMigrationStartsFromFetchedAt(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openStore(t, testenv.PostgresURL(t))
	migrateBefore(t, s, "checked_at")
	_, err := s.Pool().Exec(ctx, `insert into token_prices (token_id, price_usd, source, fetched_at) values ('stx', 1.5, 'tenero', $1)`, t0)
	require.NoError(t, err)
	require.NoError(t, s.Migrate(ctx))

	got, err := s.Prices(ctx, []string{"stx"})
	require.NoError(t, err)
	require.NotNil(t, got["stx"].CheckedAt)
	require.True(t, t0.Equal(*got["stx"].CheckedAt))
}
