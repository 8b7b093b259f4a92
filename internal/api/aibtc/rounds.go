package aibtc

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
