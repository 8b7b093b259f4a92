package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Round statuses as stored (SPEC §13): a round is open until the finalize
// task finalizes it, and never changes after.
const (
	RoundOpen      = "open"
	RoundFinalized = "finalized"
)

// Reward categories (SPEC §13).
const (
	RewardOverallPnL = "overall_pnl"
	RewardVolume     = "volume"
	RewardReturn     = "return"
)

// RewardPending is a reward's status until whoever pays it says more.
const RewardPending = "pending"

// ActionRoundPut is the audit action of a round added or changed.
const ActionRoundPut = "round.put"

// ErrRoundFinal is wrapped when a change names a finalized round: it is
// never changed after (SPEC §13; a 409, exit 2).
var ErrRoundFinal = errors.New("round is finalized")

// Round is a window of the competition with its own result (SPEC §13).
type Round struct {
	ID                  string     `json:"id"`
	StartsAt            time.Time  `json:"startsAt"`
	EndsAt              time.Time  `json:"endsAt"`
	GraceEndsAt         time.Time  `json:"graceEndsAt"`
	MinVolumeUSD        float64    `json:"minVolumeUsd"`
	MinPricedTradeCount int        `json:"minPricedTradeCount"`
	Status              string     `json:"status"`
	CreatedAt           time.Time  `json:"createdAt"`
	UpdatedAt           time.Time  `json:"updatedAt"`
	FinalizedAt         *time.Time `json:"finalizedAt"`
}

// Final says the round is finalized.
func (r Round) Final() bool { return r.Status == RoundFinalized }

// RoundSpec is what an operator says of a round: its window, grace end
// and floors. Validation is the caller's (internal/round); the table's
// checks are the last word.
type RoundSpec struct {
	ID                  string
	StartsAt, EndsAt    time.Time
	GraceEndsAt         time.Time
	MinVolumeUSD        float64
	MinPricedTradeCount int
}

// SourceCounts counts a result's swaps by swaps.source (§7.1's
// result_json.source_counts calls Sweep "cron").
type SourceCounts struct {
	Agent     int `json:"agent"`
	Sweep     int `json:"sweep"`
	Chainhook int `json:"chainhook"`
}

// RoundResult is one address's result in a round (SPEC §13).
type RoundResult struct {
	RoundID            string   `json:"roundId"`
	Rank               int      `json:"rank"`
	STXAddress         string   `json:"stxAddress"`
	BTCAddress         string   `json:"btcAddress"`
	ERC8004AgentID     *int64   `json:"erc8004AgentId"`
	TradeCount         int      `json:"tradeCount"`
	PricedTradeCount   int      `json:"pricedTradeCount"`
	UnpricedTradeCount int      `json:"unpricedTradeCount"`
	VolumeUSD          float64  `json:"volumeUsd"`
	ReceivedUSD        float64  `json:"receivedUsd"`
	PnLUSD             float64  `json:"pnlUsd"`
	PnLPercent         *float64 `json:"pnlPercent"` // a fraction: pnl ÷ volume
	// LatestTradeAt is the newest counted swap's block time (unix seconds).
	LatestTradeAt  *int64       `json:"latestTradeAt"`
	SourceCounts   SourceCounts `json:"sourceCounts"`
	UnpricedTokens []string     `json:"unpricedTokens"`
	CalculatedAt   time.Time    `json:"calculatedAt"`
}

// RoundReward is one category's winner in a round.
type RoundReward struct {
	RoundID  string `json:"roundId"`
	Category string `json:"category"`
	// Rank is the winner's rank in the round's results.
	Rank           int        `json:"rank"`
	STXAddress     string     `json:"stxAddress"`
	ERC8004AgentID *int64     `json:"erc8004AgentId"`
	AmountSats     int64      `json:"amountSats"`
	Status         string     `json:"status"`
	PayoutTxID     *string    `json:"payoutTxid"`
	PaidAt         *time.Time `json:"paidAt"`
	Notes          *string    `json:"notes"`
	CreatedAt      time.Time  `json:"createdAt"`
}

// RoundPrice is one token's price in a round's snapshot.
type RoundPrice struct {
	TokenID  string `json:"tokenId"`
	PriceUSD string `json:"priceUsd"`
	Decimals int    `json:"decimals"`
	// Source is "observation" (ObservedAt is when) or "peg" (1 USD).
	Source     string     `json:"source"`
	ObservedAt *time.Time `json:"observedAt"`
}

// Sources of a round's prices.
const (
	PriceFromObservation = "observation"
	PriceFromPeg         = "peg"
)

// RoundDetail is a round with what its finalization computed (empty
// while it is open): results by rank, rewards in category order (a
// category nobody won is absent) and the price snapshot.
type RoundDetail struct {
	Round   Round         `json:"round"`
	Results []RoundResult `json:"results"`
	Rewards []RoundReward `json:"rewards"`
	Prices  []RoundPrice  `json:"prices"`
}

const roundColumns = `id, starts_at, ends_at, grace_ends_at, min_volume_usd, min_priced_trade_count, status,
       created_at, updated_at, finalized_at`

func scanRound(row pgx.Row) (Round, error) {
	var r Round
	err := row.Scan(&r.ID, &r.StartsAt, &r.EndsAt, &r.GraceEndsAt, &r.MinVolumeUSD, &r.MinPricedTradeCount,
		&r.Status, &r.CreatedAt, &r.UpdatedAt, &r.FinalizedAt)
	r.StartsAt, r.EndsAt, r.GraceEndsAt = r.StartsAt.UTC(), r.EndsAt.UTC(), r.GraceEndsAt.UTC()
	r.CreatedAt, r.UpdatedAt = r.CreatedAt.UTC(), r.UpdatedAt.UTC()
	if r.FinalizedAt != nil {
		t := r.FinalizedAt.UTC()
		r.FinalizedAt = &t
	}
	return r, err
}

func collectRound(row pgx.CollectableRow) (Round, error) { return scanRound(row) }

// PutRound adds a round or changes an open one, with its audit entry, in
// one transaction; created says it is new. A finalized round is left as
// it is (ErrRoundFinal); a spec equal to the round changes nothing and is
// not audited.
func (s *Store) PutRound(ctx context.Context, spec RoundSpec, c Change) (out Round, created bool, err error) {
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		before, err := scanRound(tx.QueryRow(ctx, `select `+roundColumns+` from rounds where id = $1 for update`, spec.ID))
		found := err == nil
		switch {
		case errors.Is(err, pgx.ErrNoRows):
		case err != nil:
			return err
		case before.Final():
			out = before
			return ErrRoundFinal
		case sameSpec(before, spec):
			out = before
			return nil
		}
		out, err = scanRound(tx.QueryRow(ctx, `
insert into rounds (id, starts_at, ends_at, grace_ends_at, min_volume_usd, min_priced_trade_count, created_at, updated_at)
values ($1, $2, $3, $4, $5, $6, $7, $7)
on conflict (id) do update set starts_at = excluded.starts_at, ends_at = excluded.ends_at,
    grace_ends_at = excluded.grace_ends_at, min_volume_usd = excluded.min_volume_usd,
    min_priced_trade_count = excluded.min_priced_trade_count, updated_at = excluded.updated_at
returning `+roundColumns, spec.ID, spec.StartsAt, spec.EndsAt, spec.GraceEndsAt, spec.MinVolumeUSD,
			spec.MinPricedTradeCount, c.At))
		if err != nil {
			return err
		}
		created = !found
		var was any
		if found {
			was = before
		}
		e, err := c.entry(spec.ID, was, out)
		if err != nil {
			return err
		}
		return writeAudit(ctx, tx, e)
	})
	if err != nil {
		return out, false, fmt.Errorf("put round %s: %w", spec.ID, err)
	}
	return out, created, nil
}

func sameSpec(r Round, s RoundSpec) bool {
	return r.StartsAt.Equal(s.StartsAt) && r.EndsAt.Equal(s.EndsAt) && r.GraceEndsAt.Equal(s.GraceEndsAt) &&
		r.MinVolumeUSD == s.MinVolumeUSD && r.MinPricedTradeCount == s.MinPricedTradeCount
}

// Rounds lists every round, newest first (starts_at desc, id).
func (s *Store) Rounds(ctx context.Context) ([]Round, error) {
	return collect(ctx, s.pool, "rounds", collectRound,
		`select `+roundColumns+` from rounds order by starts_at desc, id collate "C"`)
}

// OpenRounds lists the rounds not yet finalized, earliest grace end first:
// the finalize task's work.
func (s *Store) OpenRounds(ctx context.Context) ([]Round, error) {
	return collect(ctx, s.pool, "open rounds", collectRound,
		`select `+roundColumns+` from rounds where status = 'open' order by grace_ends_at, id collate "C"`)
}

// RoundByID reads one round, whatever its state, with its results,
// rewards and prices once final (the operator's view).
func (s *Store) RoundByID(ctx context.Context, id string) (RoundDetail, bool, error) {
	return s.roundDetail(ctx, id, false)
}

// FinalRounds reads finalized rounds, newest first (starts_at desc, id),
// limit of them from offset; hasMore says another follows (SPEC §7.1).
func (s *Store) FinalRounds(ctx context.Context, limit, offset int) (rounds []Round, hasMore bool, err error) {
	if limit < 1 || offset < 0 {
		return nil, false, fmt.Errorf("final rounds: limit %d, offset %d out of range", limit, offset)
	}
	rounds, err = collect(ctx, s.pool, "final rounds", collectRound, `select `+roundColumns+` from rounds
where status = 'finalized' order by starts_at desc, id collate "C" limit $1 offset $2`, limit+1, offset)
	if err != nil {
		return nil, false, err
	}
	if len(rounds) > limit {
		return rounds[:limit], true, nil
	}
	return rounds, false, nil
}

// FinalRound reads a finalized round with its results (by rank) and
// rewards; found is false for an unknown round and one not yet final.
func (s *Store) FinalRound(ctx context.Context, id string) (RoundDetail, bool, error) {
	return s.roundDetail(ctx, id, true)
}

func (s *Store) roundDetail(ctx context.Context, id string, finalOnly bool) (RoundDetail, bool, error) {
	var d RoundDetail
	found := false
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly, IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
		r, err := scanRound(tx.QueryRow(ctx, `select `+roundColumns+` from rounds where id = $1`, id))
		if errors.Is(err, pgx.ErrNoRows) || err == nil && finalOnly && !r.Final() {
			return nil
		}
		if err != nil {
			return err
		}
		found, d.Round = true, r
		if d.Results, err = collect(ctx, tx, "round results", collectResult,
			`select `+resultColumns+` from round_results where round_id = $1 order by rank`, id); err != nil {
			return err
		}
		if d.Rewards, err = collect(ctx, tx, "round rewards", collectReward, `select `+rewardColumns+` from round_rewards
where round_id = $1 order by array_position(array['overall_pnl','volume','return'], category)`, id); err != nil {
			return err
		}
		d.Prices, err = collect(ctx, tx, "round prices", func(row pgx.CollectableRow) (RoundPrice, error) {
			var p RoundPrice
			err := row.Scan(&p.TokenID, &p.PriceUSD, &p.Decimals, &p.Source, &p.ObservedAt)
			return p, err
		}, `select token_id, price_usd::text, decimals, source, observed_at from round_prices
where round_id = $1 order by token_id collate "C"`, id)
		return err
	})
	if err != nil {
		return RoundDetail{}, false, fmt.Errorf("round %s: %w", id, err)
	}
	return d, found, nil
}

// FinalRoundResult reads stx's result in finalized round id: roundFound
// is false for an unknown round and one not yet final; res is nil when
// stx has no result in it.
func (s *Store) FinalRoundResult(ctx context.Context, id, stx string) (res *RoundResult, roundFound bool, err error) {
	var final bool
	err = s.pool.QueryRow(ctx, `select status = 'finalized' from rounds where id = $1`, id).Scan(&final)
	if errors.Is(err, pgx.ErrNoRows) || err == nil && !final {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("round %s result of %s: %w", id, stx, err)
	}
	rows, err := collect(ctx, s.pool, "round result", collectResult,
		`select `+resultColumns+` from round_results where round_id = $1 and stx_address = $2`, id, stx)
	if err != nil || len(rows) == 0 {
		return nil, true, err
	}
	return &rows[0], true, nil
}

// LatestRoundResult reads stx's result in the newest finalized round (by
// ends_at) it placed in; nil when it placed in none.
func (s *Store) LatestRoundResult(ctx context.Context, stx string) (*RoundResult, error) {
	rows, err := collect(ctx, s.pool, "latest round result of "+stx, collectResult, `
select `+resultColumns+` from round_results
join rounds r on r.id = round_results.round_id and r.status = 'finalized'
where stx_address = $1
order by r.ends_at desc, r.id collate "C" limit 1`, stx)
	if err != nil || len(rows) == 0 {
		return nil, err
	}
	return &rows[0], nil
}

const resultColumns = `round_id, rank, stx_address, coalesce(btc_address, ''), erc8004_agent_id, trade_count,
       priced_trade_count, unpriced_trade_count, volume_usd, received_usd, pnl_usd, pnl_percent, latest_trade_at,
       source_agent, source_sweep, source_chainhook, unpriced_tokens, calculated_at`

func collectResult(row pgx.CollectableRow) (RoundResult, error) {
	var r RoundResult
	err := row.Scan(&r.RoundID, &r.Rank, &r.STXAddress, &r.BTCAddress, &r.ERC8004AgentID, &r.TradeCount,
		&r.PricedTradeCount, &r.UnpricedTradeCount, &r.VolumeUSD, &r.ReceivedUSD, &r.PnLUSD, &r.PnLPercent,
		&r.LatestTradeAt, &r.SourceCounts.Agent, &r.SourceCounts.Sweep, &r.SourceCounts.Chainhook,
		&r.UnpricedTokens, &r.CalculatedAt)
	if r.UnpricedTokens == nil {
		r.UnpricedTokens = []string{}
	}
	r.CalculatedAt = r.CalculatedAt.UTC()
	return r, err
}

const rewardColumns = `round_id, category, rank, stx_address, erc8004_agent_id, amount_sats, status, payout_txid,
       paid_at, notes, created_at`

func collectReward(row pgx.CollectableRow) (RoundReward, error) {
	var r RoundReward
	err := row.Scan(&r.RoundID, &r.Category, &r.Rank, &r.STXAddress, &r.ERC8004AgentID, &r.AmountSats, &r.Status,
		&r.PayoutTxID, &r.PaidAt, &r.Notes, &r.CreatedAt)
	r.CreatedAt = r.CreatedAt.UTC()
	return r, err
}
