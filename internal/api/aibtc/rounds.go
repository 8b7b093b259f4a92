package aibtc

import (
	"time"

	"github.com/pacer-dev/pacer/internal/store"
)

// Round is a finalized round as the landing page's competition_rounds row
// has it: window times in unix seconds, bookkeeping times ISO-8601.
type Round struct {
	RoundID             string  `json:"round_id"`
	StartsAt            int64   `json:"starts_at"`
	EndsAt              int64   `json:"ends_at"`
	GraceEndsAt         int64   `json:"grace_ends_at"`
	Status              string  `json:"status"`
	MinVolumeUSD        float64 `json:"min_volume_usd"`
	MinPricedTradeCount int64   `json:"min_priced_trade_count"`
	CreatedAt           string  `json:"created_at"`
	FinalizedAt         *string `json:"finalized_at"`
}

// Result is one agent's result in a round (competition_round_results).
type Result struct {
	RoundID            string  `json:"round_id"`
	Rank               int64   `json:"rank"`
	STXAddress         string  `json:"stx_address"`
	BTCAddress         string  `json:"btc_address"`
	ERC8004AgentID     *int64  `json:"erc8004_agent_id"`
	TradeCount         int64   `json:"trade_count"`
	PricedTradeCount   int64   `json:"priced_trade_count"`
	UnpricedTradeCount int64   `json:"unpriced_trade_count"`
	VolumeUSD          float64 `json:"volume_usd"`
	ReceivedUSD        float64 `json:"received_usd"`
	PnLUSD             float64 `json:"pnl_usd"`
	// PnLPercent is a fraction (0.15 is 15%), as the landing page stores
	// it; null at zero volume.
	PnLPercent    *float64   `json:"pnl_percent"`
	LatestTradeAt *int64     `json:"latest_trade_at"`
	ResultJSON    ResultJSON `json:"result_json"`
	CalculatedAt  string     `json:"calculated_at"`
}

// ResultJSON is a result's detail: its swaps by source and the tokens that
// had no price.
type ResultJSON struct {
	SourceCounts   SourceCounts `json:"source_counts"`
	UnpricedTokens []string     `json:"unpriced_tokens"`
}

// SourceCounts counts a result's swaps by the contract's sources.
type SourceCounts struct {
	Agent     int64 `json:"agent"`
	Cron      int64 `json:"cron"`
	Chainhook int64 `json:"chainhook"`
}

// Reward is one reward of a round (competition_rewards).
type Reward struct {
	RoundID        string  `json:"round_id"`
	Category       string  `json:"category"`
	Rank           int64   `json:"rank"`
	STXAddress     string  `json:"stx_address"`
	ERC8004AgentID *int64  `json:"erc8004_agent_id"`
	AmountSats     int64   `json:"amount_sats"`
	Status         string  `json:"status"`
	PayoutTxID     *string `json:"payout_txid"`
	PaidAt         *string `json:"paid_at"`
	Notes          *string `json:"notes"`
	CreatedAt      string  `json:"created_at"`
}

// Rounds answers GET /rounds.
type Rounds struct {
	Rounds     []Round    `json:"rounds"`
	Pagination Pagination `json:"pagination"`
}

// Pagination is the rounds list's offset paging.
type Pagination struct {
	Limit   int  `json:"limit"`
	Offset  int  `json:"offset"`
	HasMore bool `json:"hasMore"`
}

// RoundDetail answers GET /rounds/{id}: results by rank.
type RoundDetail struct {
	Round   Round    `json:"round"`
	Results []Result `json:"results"`
	Rewards []Reward `json:"rewards"`
}

// AgentResult answers GET /rounds/{id}/results/{stx}.
type AgentResult struct {
	RoundID string `json:"round_id"`
	Result  Result `json:"result"`
}

// Rounds' limits and defaults, as on the landing page.
const (
	DefaultRoundsLimit = 20
	MaxRoundsLimit     = 100
)

// The rounds routes' 404 codes.
const (
	CodeRoundNotFound  = "round_not_found"
	CodeAgentNotPlaced = "agent_not_placed"
)

// isoTime is a bookkeeping time as the landing page wrote it (JavaScript's
// toISOString: UTC, milliseconds).
func isoTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

func isoTimePtr(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := isoTime(*t)
	return &s
}

// FromRound is a finalized round in the contract's shape.
func FromRound(r store.Round) Round {
	return Round{RoundID: r.ID, StartsAt: r.StartsAt.Unix(), EndsAt: r.EndsAt.Unix(), GraceEndsAt: r.GraceEndsAt.Unix(),
		Status: r.Status, MinVolumeUSD: r.MinVolumeUSD, MinPricedTradeCount: int64(r.MinPricedTradeCount),
		CreatedAt: isoTime(r.CreatedAt), FinalizedAt: isoTimePtr(r.FinalizedAt)}
}

// FromResult is a round result in the contract's shape.
func FromResult(r store.RoundResult) Result {
	unpriced := r.UnpricedTokens
	if unpriced == nil {
		unpriced = []string{}
	}
	return Result{RoundID: r.RoundID, Rank: int64(r.Rank), STXAddress: r.STXAddress, BTCAddress: r.BTCAddress,
		ERC8004AgentID: r.ERC8004AgentID, TradeCount: int64(r.TradeCount), PricedTradeCount: int64(r.PricedTradeCount),
		UnpricedTradeCount: int64(r.UnpricedTradeCount), VolumeUSD: r.VolumeUSD, ReceivedUSD: r.ReceivedUSD, PnLUSD: r.PnLUSD,
		PnLPercent: r.PnLPercent, LatestTradeAt: r.LatestTradeAt,
		ResultJSON: ResultJSON{SourceCounts: SourceCounts{Agent: int64(r.SourceCounts.Agent), Cron: int64(r.SourceCounts.Sweep),
			Chainhook: int64(r.SourceCounts.Chainhook)}, UnpricedTokens: unpriced},
		CalculatedAt: isoTime(r.CalculatedAt)}
}

// FromReward is a round's reward in the contract's shape.
func FromReward(r store.RoundReward) Reward {
	return Reward{RoundID: r.RoundID, Category: r.Category, Rank: int64(r.Rank), STXAddress: r.STXAddress,
		ERC8004AgentID: r.ERC8004AgentID, AmountSats: r.AmountSats, Status: r.Status, PayoutTxID: r.PayoutTxID,
		PaidAt: isoTimePtr(r.PaidAt), Notes: r.Notes, CreatedAt: isoTime(r.CreatedAt)}
}

// FromDetail is a finalized round with its results and rewards.
func FromDetail(d store.RoundDetail) RoundDetail {
	out := RoundDetail{Round: FromRound(d.Round), Results: make([]Result, len(d.Results)), Rewards: make([]Reward, len(d.Rewards))}
	for i, r := range d.Results {
		out.Results[i] = FromResult(r)
	}
	for i, r := range d.Rewards {
		out.Rewards[i] = FromReward(r)
	}
	return out
}
