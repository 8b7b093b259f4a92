package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
)

// BoardAgent is a registered agent with at least one swap: its totals,
// priced by the factors given to Board.
type BoardAgent struct {
	STXAddress  string
	DisplayName string
	// BTCAddress is "" when the registry gave none; ERC8004 is nil until
	// the agent has an identity.
	BTCAddress string
	ERC8004    *int64
	Trades     int64
	// FirstTrade and LatestTrade are burn block times (unix seconds).
	FirstTrade, LatestTrade int64
	// SentUSD and ReceivedUSD value what the agent sent and received at
	// the factors; AllPriced says every token it traded had one.
	SentUSD, ReceivedUSD float64
	AllPriced            bool
	// PricesAt is the oldest fetched_at of the factors it used.
	PricesAt *time.Time
}

// TokenFactor is what one base unit of a token is worth in USD (price ÷
// 10^decimals), and when the price was fetched (nil for a peg without a
// stored row). A swap's token matches a factor under its own id, else
// under its contract id (the part before "::").
type TokenFactor struct {
	TokenID   string
	Factor    float64
	FetchedAt *time.Time
}

// boardSQL prices every registered agent's per-token totals (kept by the
// swaps triggers, never a scan of swaps) in one aggregate.
const boardSQL = `
with f(token, factor, fetched) as (select * from unnest($1::text[], $2::float8[], $3::timestamptz[])),
priced as (
    select t.stx_address,
           coalesce(sum(t.amount_in_f * coalesce(f1.factor, f2.factor)), 0) as sent,
           coalesce(sum(t.amount_out_f * coalesce(f1.factor, f2.factor)), 0) as received,
           bool_and(coalesce(f1.factor, f2.factor) is not null) as all_priced,
           min(coalesce(f1.fetched, f2.fetched)) as prices_at
    from agent_token_totals t
    left join f f1 on f1.token = t.token_id
    left join f f2 on f1.token is null and f2.token = split_part(t.token_id, '::', 1)
    group by t.stx_address
)
select p.stx_address, coalesce(a.display_name, ''), coalesce(a.btc_address, ''), a.erc8004_agent_id, tt.trades, tt.first_trade, tt.latest_trade,
       p.sent, p.received, p.all_priced, p.prices_at
from priced p
join agents a on a.stx_address = p.stx_address and a.deregistered_at is null
join agent_trade_totals tt on tt.stx_address = p.stx_address and tt.trades > 0`

// Board reads every registered agent with a swap, its totals priced by
// factors (SPEC §7's leaderboard): tens of thousands of total rows at the
// competition's scale, aggregated in Postgres.
func (s *Store) Board(ctx context.Context, factors []TokenFactor) ([]BoardAgent, error) {
	ids := make([]string, len(factors))
	fs := make([]float64, len(factors))
	at := make([]*time.Time, len(factors))
	for i, f := range factors {
		ids[i], fs[i], at[i] = f.TokenID, f.Factor, f.FetchedAt
	}
	return collect(ctx, s.pool, "board", func(row pgx.CollectableRow) (BoardAgent, error) {
		var a BoardAgent
		var first, latest *int64
		err := row.Scan(&a.STXAddress, &a.DisplayName, &a.BTCAddress, &a.ERC8004, &a.Trades, &first, &latest, &a.SentUSD, &a.ReceivedUSD,
			&a.AllPriced, &a.PricesAt)
		a.FirstTrade, a.LatestTrade = deref64(first), deref64(latest)
		return a, err
	}, boardSQL, ids, fs, at)
}

func deref64(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// AgentStatus is one address as the competition's status read sees it.
type AgentStatus struct {
	Registered   bool
	DisplayName  string
	BTCAddress   string
	ERC8004      *int64
	ClaimStatus  string
	Trades       int64
	FirstTrade   *int64
	LatestTrade  *int64
	Deregistered bool
}

// AgentStatus reads one address's registration, claim and trade totals.
func (s *Store) AgentStatus(ctx context.Context, stx string) (AgentStatus, error) {
	var st AgentStatus
	var dereg *time.Time
	var btc, name *string
	err := s.pool.QueryRow(ctx, `
select a.display_name, a.btc_address, a.erc8004_agent_id, coalesce(c.status, ''), a.deregistered_at,
       coalesce(t.trades, 0), t.first_trade, t.latest_trade
from agents a
left join claims c on c.btc_address = a.btc_address
left join agent_trade_totals t on t.stx_address = a.stx_address
where a.stx_address = $1`, stx).Scan(&name, &btc, &st.ERC8004, &st.ClaimStatus, &dereg, &st.Trades, &st.FirstTrade, &st.LatestTrade)
	if errors.Is(err, pgx.ErrNoRows) {
		return AgentStatus{}, nil
	}
	if err != nil {
		return AgentStatus{}, fmt.Errorf("agent status %s: %w", stx, err)
	}
	st.Registered, st.Deregistered = dereg == nil, dereg != nil
	if name != nil {
		st.DisplayName = *name
	}
	if btc != nil {
		st.BTCAddress = *btc
	}
	return st, nil
}

// TradeKey is a position in the trades list, newest first.
type TradeKey struct {
	BurnBlockTime int64
	TxID          string
}

// TradeRow is one row of the trades list: a swap as the competition's
// pages show it.
type TradeRow struct {
	TxID, Sender, ContractID, FunctionName string
	TokenIn, AmountIn, TokenOut, AmountOut string
	BurnBlockTime                          int64
	BlockTime                              *int64
	TxStatus, Source                       string
}

// Trades reads up to limit swaps, newest first by (burn_block_time, txid),
// strictly after the key (nil: from the newest), of one sender or all.
// Keyset paging: rows that arrive meanwhile never shift a page.
func (s *Store) Trades(ctx context.Context, sender string, after *TradeKey, limit int) ([]TradeRow, error) {
	var t int64 = 1<<63 - 1
	txid := ""
	if after != nil {
		t, txid = after.BurnBlockTime, after.TxID
	}
	// Two statements, not one with "($1 = '' or sender = $1)": a prepared
	// statement may run on a generic plan, which cannot know whether the
	// sender is given and so cannot use the sender's index; one agent's
	// page would then walk every swap newer than its cursor.
	sql, args := tradesAll, []any{t, txid, limit}
	if sender != "" {
		sql, args = tradesOf, []any{t, txid, limit, sender}
	}
	return collect(ctx, s.pool, "trades", func(row pgx.CollectableRow) (TradeRow, error) {
		var r TradeRow
		err := row.Scan(&r.TxID, &r.Sender, &r.ContractID, &r.FunctionName, &r.TokenIn, &r.AmountIn,
			&r.TokenOut, &r.AmountOut, &r.BurnBlockTime, &r.BlockTime, &r.TxStatus, &r.Source)
		return r, err
	}, sql, args...)
}

// The trades list's statements: every sender's, and one sender's.
const (
	tradesSelect = `
select txid, sender, contract_id, function_name, token_in, amount_in::text, token_out, amount_out::text,
       burn_block_time, block_time, tx_status, source
from swaps
where (burn_block_time, txid collate "C") < ($1, $2 collate "C")`
	tradesOrder = `
order by burn_block_time desc, txid collate "C" desc
limit $3`
	tradesAll = tradesSelect + tradesOrder
	tradesOf  = tradesSelect + ` and sender = $4` + tradesOrder
)

// completeThroughKey is where completeThrough is kept, so that it never
// moves backwards.
const completeThroughKey = "complete_through"

// completeThroughIndexing is how long after its block time a transaction
// may take to appear in Hiro's lists: a complete scan begun at covered_at
// has read what was mined more than this before it.
const completeThroughIndexing = 60

// PublishedCompleteThrough is the completeThrough CompleteThrough last
// gave out (nil: none yet), read without moving it: the public reads'
// pool writes nothing (issue 41.12); the sweep publishes at the end of
// every run.
func (s *Store) PublishedCompleteThrough(ctx context.Context) (*int64, error) {
	var out *int64
	err := s.pool.QueryRow(ctx, `select value::bigint from competition_state where key = $1`, completeThroughKey).Scan(&out)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("published complete through: %w", err)
	}
	return out, nil
}

// CompleteThrough is SPEC §7's completeThrough: the latest block time T
// (unix seconds) such that every swap with a block time at or before T is
// in swaps, because every reader has read past T and settled what it
// found; nil while unknown (no reader has read, or agents' histories are
// still being read at the first start). It never moves backwards (the
// largest value given out is kept) and is held back by:
//   - each reader's position: T is before the newest block time it has
//     fully read (another transaction of that block may be unread), or,
//     for a contract's reader, before what its last complete scan covered;
//   - a transaction a reader saw in a block, of a registered genesis
//     agent on an allowlisted pair, and could not settle (Hiro still said
//     pending, or failed): T stays before that block's time, for HoldBound
//     at most (HoldPending, LapseHolds); a transaction in the mempool holds
//     nothing, so nobody can hold T by posting one to the fast path;
//   - a registered agent whose history has not been read once, and a gap
//     a reader gave up on: T does not move until they are.
func (s *Store) CompleteThrough(ctx context.Context) (*int64, error) {
	var out *int64
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var kept, readerCap, pendingCap *int64
		var readers int
		var frozen bool
		err := tx.QueryRow(ctx, `
select (select value::bigint from competition_state where key = $1),
       (select count(*) from discovery_cursors),
       (select min(case when reader = 'tail' then block_time
                        else greatest(block_time, extract(epoch from covered_at)::bigint - $2) end) - 1
        from discovery_cursors),
       (select min(p.held_block_time) - 1 from pending_txs p
        join agents a on a.stx_address = p.sender
        where a.deregistered_at is null and p.held_block_time is not null and p.held_at > now() - $3::interval),
       exists (select 1 from agent_ingest i join agents a on a.stx_address = i.stx_address
               where a.deregistered_at is null and i.last_success_at is null)
       or exists (select 1 from discovery_gaps where filled_at is null)
       or exists (select 1 from discovery_cursors where block_time is null and covered_at is null)`,
			completeThroughKey, completeThroughIndexing, HoldBound).Scan(&kept, &readers, &readerCap, &pendingCap, &frozen)
		if err != nil {
			return fmt.Errorf("complete through: %w", err)
		}
		out = kept
		if frozen || readers == 0 || readerCap == nil {
			return nil
		}
		next := min(*readerCap, time.Now().Unix())
		if pendingCap != nil {
			next = min(next, *pendingCap)
		}
		if next < 0 || (kept != nil && next <= *kept) {
			return nil
		}
		out = &next
		_, err = tx.Exec(ctx, `
insert into competition_state (key, value, updated_at) values ($1, $2, now())
on conflict (key) do update set value = greatest(competition_state.value::bigint, excluded.value::bigint)::text,
    updated_at = now()`, completeThroughKey, strconv.FormatInt(next, 10))
		return err
	})
	return out, err
}
