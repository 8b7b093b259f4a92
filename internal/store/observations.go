package store

import (
	"context"
	"fmt"
	"time"
)

// ObservationRetention is how long price_observations keeps a price. The
// rollups are computed from observations within a few days of their period
// (a day is recomputed for at most rollup.DayLookback days until it is
// complete), and the rollups themselves are kept for good, so a month is
// ample: about 60 tokens every 5 minutes is some 0.5 M rows. The rollup
// task prunes hourly, inside its own activity, so pruning costs no
// Temporal action of its own.
const ObservationRetention = 35 * 24 * time.Hour

// Observation is one price the tenero task fetched. A nil PriceUSD is a
// confirmed "no price".
type Observation struct {
	TokenID    string
	ObservedAt time.Time
	PriceUSD   *string
}

// insertObservationsSQL writes a run's observations in one statement. A
// retried run that observes the same token at the same instant changes
// nothing.
const insertObservationsSQL = `
insert into price_observations (token_id, observed_at, price_usd)
select o.token_id, o.observed_at, o.price_usd::numeric
from unnest($1::text[], $2::timestamptz[], $3::text[]) as o(token_id, observed_at, price_usd)
on conflict (token_id, observed_at) do nothing`

// InsertObservations records a run's observations and returns how many
// rows were new.
func (s *Store) InsertObservations(ctx context.Context, obs []Observation) (int64, error) {
	if len(obs) == 0 {
		return 0, nil
	}
	ids := make([]string, len(obs))
	ats := make([]time.Time, len(obs))
	prices := make([]*string, len(obs))
	for i, o := range obs {
		ids[i], ats[i], prices[i] = o.TokenID, o.ObservedAt, o.PriceUSD
	}
	tag, err := s.pool.Exec(ctx, insertObservationsSQL, ids, ats, prices)
	if err != nil {
		return 0, fmt.Errorf("insert price observations: %w", err)
	}
	return tag.RowsAffected(), nil
}

// PruneObservations deletes observations older than before.
func (s *Store) PruneObservations(ctx context.Context, before time.Time) (int64, error) {
	tag, err := s.pool.Exec(ctx, `delete from price_observations where observed_at < $1`, before)
	if err != nil {
		return 0, fmt.Errorf("prune price observations: %w", err)
	}
	return tag.RowsAffected(), nil
}

// Observations returns a token's observations in [from, to), oldest first
// (tests and operators; the rollups aggregate in SQL).
func (s *Store) Observations(ctx context.Context, tokenID string, from, to time.Time) ([]Observation, error) {
	rows, err := s.pool.Query(ctx, `
select token_id, observed_at, price_usd::text from price_observations
where token_id = $1 and observed_at >= $2 and observed_at < $3
order by observed_at`, tokenID, from, to)
	if err != nil {
		return nil, fmt.Errorf("read price observations: %w", err)
	}
	defer rows.Close()
	var out []Observation
	for rows.Next() {
		var o Observation
		if err := rows.Scan(&o.TokenID, &o.ObservedAt, &o.PriceUSD); err != nil {
			return nil, fmt.Errorf("read price observations: %w", err)
		}
		out = append(out, o)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read price observations: %w", err)
	}
	return out, nil
}
