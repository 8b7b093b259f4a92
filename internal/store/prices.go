package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Price sources, as stored in token_prices.source.
const (
	SourceTenero = "tenero"
	SourcePeg    = "peg"
)

// Price is one row of token_prices.
type Price struct {
	TokenID string
	// PriceUSD is the exact decimal text of the price; nil is a confirmed "no
	// price". Text rather than float64 so nothing is rounded on the way.
	PriceUSD *string
	Decimals *int
	Source   string // SourceTenero or SourcePeg
	// FetchedAt is when the price was read upstream; UpdatedAt when the row
	// was last written (set by the database, ignored by UpsertPrice).
	FetchedAt time.Time
	// MinuteRemaining and MonthRemaining are what the quota headers said,
	// bigint columns: an upstream's month may not fit in 32 bits.
	MinuteRemaining *int64
	MonthRemaining  *int64
	UpdatedAt       time.Time
	// CheckedAt is when Tenero last answered for the token (SPEC §4.8),
	// set by UpsertPrice and MarkChecked to FetchedAt whether or not the
	// row was rewritten; nil for a row no check has touched since
	// migration 014. Ignored by UpsertPrice.
	CheckedAt *time.Time
}

// RewriteAfter is how old a stored price may grow before an unchanged fetch
// rewrites it anyway (SPEC §4.6), so fetched_at shows the price is still live.
const RewriteAfter = time.Hour

// upsertPriceSQL writes a price unless the stored row already says the same
// thing and is under an hour old. The comparisons are numeric, so 1.50 equals
// 1.5. A fetch older than the stored one never replaces it: two refreshes that
// overlap must not let the slower one roll the price back. Either way the
// fetch was a check (SPEC §4.8): a row kept as it was still has its
// checked_at moved forward, by the second statement, which sees the row only
// when the first wrote nothing. It answers whether the price was written.
const upsertPriceSQL = `
with written as (
    insert into token_prices as p
        (token_id, price_usd, decimals, source, fetched_at, minute_remaining, month_remaining, checked_at)
    values ($1, $2::text::numeric, $3, $4, $5, $6, $7, $5)
    on conflict (token_id) do update set
        price_usd        = excluded.price_usd,
        decimals         = excluded.decimals,
        source           = excluded.source,
        fetched_at       = excluded.fetched_at,
        minute_remaining = excluded.minute_remaining,
        month_remaining  = excluded.month_remaining,
        checked_at       = greatest(p.checked_at, excluded.checked_at),
        updated_at       = now()
    where excluded.fetched_at >= p.fetched_at
      and (p.price_usd is distinct from excluded.price_usd
           or p.decimals is distinct from excluded.decimals
           or p.source <> excluded.source
           or p.fetched_at <= excluded.fetched_at - $8::interval)
    returning 1
), checked as (
    update token_prices set checked_at = $5
    where token_id = $1 and (checked_at is null or checked_at < $5)
      and not exists (select from written)
)
select exists (select from written)`

// UpsertPrice stores p and reports whether a row was written; false means the
// stored price was the same and fresh enough (or newer) and was kept. Both
// record p.FetchedAt as the token's last check.
func (s *Store) UpsertPrice(ctx context.Context, p Price) (written bool, err error) {
	err = s.pool.QueryRow(ctx, upsertPriceSQL,
		p.TokenID, p.PriceUSD, p.Decimals, p.Source, p.FetchedAt,
		p.MinuteRemaining, p.MonthRemaining, RewriteAfter).Scan(&written)
	if err != nil {
		return false, fmt.Errorf("upsert price %s: %w", p.TokenID, err)
	}
	return written, nil
}

// markCheckedSQL records a check that brought no price to store: Tenero
// answered that it does not know the token (404). A token already priced
// keeps its price; one never priced gets the row of a confirmed "no price",
// which is what the answer says.
const markCheckedSQL = `
insert into token_prices as p (token_id, source, fetched_at, checked_at)
values ($1, 'tenero', $2, $2)
on conflict (token_id) do update set checked_at = excluded.checked_at
where p.checked_at is null or p.checked_at < excluded.checked_at`

// MarkChecked records that Tenero answered for tokenID at without a price
// to store (SPEC §4.8), so that a cut run does not pick it again first.
func (s *Store) MarkChecked(ctx context.Context, tokenID string, at time.Time) error {
	if _, err := s.pool.Exec(ctx, markCheckedSQL, tokenID, at); err != nil {
		return fmt.Errorf("mark %s checked: %w", tokenID, err)
	}
	return nil
}

// price_usd is read as text so that no digit is lost.
const selectPrices = `
select token_id, price_usd::text, decimals, source, fetched_at,
       minute_remaining, month_remaining, updated_at, checked_at
from token_prices`

// Prices returns the stored prices of ids, keyed by token id. Ids without a
// row are absent from the map.
func (s *Store) Prices(ctx context.Context, ids []string) (map[string]Price, error) {
	rows, err := s.pool.Query(ctx, selectPrices+` where token_id = any($1)`, ids)
	if err != nil {
		return nil, fmt.Errorf("read prices: %w", err)
	}
	prices, err := pgx.CollectRows(rows, scanPrice)
	if err != nil {
		return nil, fmt.Errorf("read prices: %w", err)
	}
	byID := make(map[string]Price, len(prices))
	for _, p := range prices {
		byID[p.TokenID] = p
	}
	return byID, nil
}

// AllPrices returns every stored price, ordered by token id.
func (s *Store) AllPrices(ctx context.Context) ([]Price, error) {
	return collect(ctx, s.pool, "read all prices", scanPrice, selectPrices+` order by token_id collate "C"`)
}

func scanPrice(row pgx.CollectableRow) (Price, error) {
	var p Price
	err := row.Scan(&p.TokenID, &p.PriceUSD, &p.Decimals, &p.Source, &p.FetchedAt,
		&p.MinuteRemaining, &p.MonthRemaining, &p.UpdatedAt, &p.CheckedAt)
	return p, err
}
