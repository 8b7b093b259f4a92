package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// RoundSwap is a swap that counts in a round (SPEC §13): successful, its
// block time (Time, unix seconds: block_time, else burn_block_time) in the
// round's window, its sender registered with an ERC-8004 id and a genesis
// claim at finalization.
type RoundSwap struct {
	TxID, Sender        string
	TokenIn, AmountIn   string
	TokenOut, AmountOut string
	Time                int64
	Source              string
}

// RoundAgent is what a result carries of its agent.
type RoundAgent struct {
	BTCAddress     string
	ERC8004AgentID *int64
}

// ObservedPrice is a token's last observed price at or before a round's
// end (nil: none), with the decimals pacer keeps for it (nil: unknown).
type ObservedPrice struct {
	PriceUSD   *string
	ObservedAt *time.Time
	Decimals   *int
}

// FinalizeInputs is what a round's finalization reads, in its transaction.
type FinalizeInputs struct {
	Round  Round
	Swaps  []RoundSwap
	Agents map[string]RoundAgent
	// Observed is keyed by token id as the swaps spell it.
	Observed map[string]ObservedPrice
	// At is the transaction's time: the round's finalized_at.
	At time.Time
}

// Tokens lists the tokens the inputs' swaps name.
func (in FinalizeInputs) Tokens() []string {
	var out []string
	for _, sw := range in.Swaps {
		out = append(out, sw.TokenIn, sw.TokenOut)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// FinalizeOutcome is what a round's finalization writes.
type FinalizeOutcome struct {
	Prices  []RoundPrice
	Results []RoundResult
	Rewards []RoundReward
}

// FinalizedRound says what FinalizeRound did: Finalized is false when the
// round was final already (or is unknown), and Deliveries counts the
// round.finalized deliveries it queued.
type FinalizedRound struct {
	Finalized  bool
	Detail     RoundDetail
	Deliveries int
}

// EventRoundFinalized is the subscribers' event of a finalized round.
const EventRoundFinalized = "round.finalized"

// FinalizeRound finalizes an open round in one transaction (SPEC §13):
// it locks the round, reads its counted swaps, their agents and their
// tokens' last prices at or before its end, has compute turn them into the
// outcome, and writes the snapshot, the results, the rewards, the
// round.finalized deliveries and the round's state together. A round
// that is final already is left as it is, so a retried run changes
// nothing.
func (s *Store) FinalizeRound(ctx context.Context, id string, compute func(FinalizeInputs) (FinalizeOutcome, error)) (FinalizedRound, error) {
	var out FinalizedRound
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		out = FinalizedRound{}
		r, err := scanRound(tx.QueryRow(ctx, `select `+roundColumns+` from rounds where id = $1 for update`, id))
		if err == pgx.ErrNoRows || err == nil && r.Final() {
			return nil
		}
		if err != nil {
			return err
		}
		in := FinalizeInputs{Round: r}
		if err := tx.QueryRow(ctx, `select now()`).Scan(&in.At); err != nil {
			return err
		}
		in.At = in.At.UTC()
		if err := readRoundInputs(ctx, tx, &in); err != nil {
			return err
		}
		o, err := compute(in)
		if err != nil {
			return err
		}
		if err := writeRoundOutcome(ctx, tx, r.ID, o); err != nil {
			return err
		}
		r, err = scanRound(tx.QueryRow(ctx, `update rounds set status = 'finalized', finalized_at = $2, updated_at = $2
where id = $1 returning `+roundColumns, id, in.At))
		if err != nil {
			return err
		}
		out = FinalizedRound{Finalized: true, Detail: RoundDetail{Round: r, Results: o.Results, Rewards: o.Rewards, Prices: o.Prices}}
		out.Deliveries, err = emitRoundDeliveries(ctx, tx, out.Detail, in.At)
		return err
	})
	if err != nil {
		return FinalizedRound{}, fmt.Errorf("finalize round %s: %w", id, err)
	}
	return out, nil
}

// roundSwapsSQL reads the swaps that count in a round ($1 start, $2 end,
// unix seconds) with their agents.
const roundSwapsSQL = `
select s.txid, s.sender, s.token_in, s.amount_in::text, s.token_out, s.amount_out::text, t.at, s.source,
       coalesce(a.btc_address, ''), a.erc8004_agent_id
from swaps s
cross join lateral (select case when s.block_time > 0 then s.block_time else s.burn_block_time end as at) t
join agents a on a.stx_address = s.sender and a.deregistered_at is null and a.erc8004_agent_id is not null
join claims c on c.btc_address = a.btc_address and c.status in ('verified', 'rewarded')
where s.tx_status = 'success' and t.at >= $1 and t.at < $2
order by s.txid`

// roundPricesSQL reads each token's last observed price at or before $2,
// under its own id first, else under its contract id (the part before
// "::", as tenero keeps a contract's price), with the decimals kept for
// it the same way.
const roundPricesSQL = `
select t.token, o.price_usd::text, o.observed_at, coalesce(p1.decimals, p2.decimals)
from unnest($1::text[]) as t(token)
left join lateral (
    select po.price_usd, po.observed_at from price_observations po
    where po.token_id in (t.token, split_part(t.token, '::', 1)) and po.observed_at <= $2
      and po.price_usd is not null and po.price_usd > 0
    order by (po.token_id = t.token) desc, po.observed_at desc
    limit 1) o on true
left join token_prices p1 on p1.token_id = t.token
left join token_prices p2 on p2.token_id = split_part(t.token, '::', 1)`

func readRoundInputs(ctx context.Context, tx pgx.Tx, in *FinalizeInputs) error {
	in.Agents = map[string]RoundAgent{}
	rows, err := tx.Query(ctx, roundSwapsSQL, in.Round.StartsAt.Unix(), in.Round.EndsAt.Unix())
	if err != nil {
		return err
	}
	for rows.Next() {
		var sw RoundSwap
		var ag RoundAgent
		if err := rows.Scan(&sw.TxID, &sw.Sender, &sw.TokenIn, &sw.AmountIn, &sw.TokenOut, &sw.AmountOut, &sw.Time,
			&sw.Source, &ag.BTCAddress, &ag.ERC8004AgentID); err != nil {
			rows.Close()
			return err
		}
		in.Swaps = append(in.Swaps, sw)
		in.Agents[sw.Sender] = ag
	}
	if err := rows.Err(); err != nil {
		return err
	}
	in.Observed = map[string]ObservedPrice{}
	rows, err = tx.Query(ctx, roundPricesSQL, in.Tokens(), in.Round.EndsAt)
	if err != nil {
		return err
	}
	for rows.Next() {
		var tok string
		var o ObservedPrice
		if err := rows.Scan(&tok, &o.PriceUSD, &o.ObservedAt, &o.Decimals); err != nil {
			rows.Close()
			return err
		}
		in.Observed[tok] = o
	}
	return rows.Err()
}

func writeRoundOutcome(ctx context.Context, tx pgx.Tx, id string, o FinalizeOutcome) error {
	batch := &pgx.Batch{}
	for _, p := range o.Prices {
		batch.Queue(`insert into round_prices (round_id, token_id, price_usd, decimals, source, observed_at)
values ($1, $2, $3::numeric, $4, $5, $6)`, id, p.TokenID, p.PriceUSD, p.Decimals, p.Source, p.ObservedAt)
	}
	for _, r := range o.Results {
		batch.Queue(`insert into round_results (round_id, rank, stx_address, btc_address, erc8004_agent_id, trade_count,
    priced_trade_count, unpriced_trade_count, volume_usd, received_usd, pnl_usd, pnl_percent, latest_trade_at,
    source_agent, source_sweep, source_chainhook, unpriced_tokens, calculated_at)
values ($1, $2, $3, nullif($4, ''), $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)`,
			id, r.Rank, r.STXAddress, r.BTCAddress, r.ERC8004AgentID, r.TradeCount, r.PricedTradeCount,
			r.UnpricedTradeCount, r.VolumeUSD, r.ReceivedUSD, r.PnLUSD, r.PnLPercent, r.LatestTradeAt,
			r.SourceCounts.Agent, r.SourceCounts.Sweep, r.SourceCounts.Chainhook, r.UnpricedTokens, r.CalculatedAt)
	}
	for _, w := range o.Rewards {
		batch.Queue(`insert into round_rewards (round_id, category, rank, stx_address, erc8004_agent_id, amount_sats,
    status, created_at) values ($1, $2, $3, $4, $5, $6, $7, $8)`,
			id, w.Category, w.Rank, w.STXAddress, w.ERC8004AgentID, w.AmountSats, w.Status, w.CreatedAt)
	}
	if batch.Len() == 0 {
		return nil
	}
	return tx.SendBatch(ctx, batch).Close()
}

// RoundEvent is the body of a round.finalized delivery (SPEC §10.2):
// {round, results, rewards}, the results through the subscriber's agents
// filter.
type RoundEvent struct {
	Type      string         `json:"type"`
	Timestamp time.Time      `json:"timestamp"`
	Data      RoundEventData `json:"data"`
}

// RoundEventData is a round.finalized delivery's data.
type RoundEventData struct {
	Round   Round         `json:"round"`
	Results []RoundResult `json:"results"`
	Rewards []RoundReward `json:"rewards"`
}

// emitRoundDeliveries queues one round.finalized delivery for each active
// subscriber that asked for the event, its payload frozen now, due at
// once; the delivery's period is the round's window, its id the
// subscriber's, the event's and the round's.
func emitRoundDeliveries(ctx context.Context, tx pgx.Tx, d RoundDetail, at time.Time) (int, error) {
	type sub struct {
		id     string
		agents []string
	}
	subs, err := collect(ctx, tx, "round subscribers", func(row pgx.CollectableRow) (sub, error) {
		var s sub
		err := row.Scan(&s.id, &s.agents)
		return s, err
	}, `select id, agents from subscribers where status = 'active' and $1::text = any(events) order by id`, EventRoundFinalized)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, s := range subs {
		ev := RoundEvent{Type: EventRoundFinalized, Timestamp: at, Data: RoundEventData{Round: d.Round, Results: []RoundResult{}, Rewards: d.Rewards}}
		for _, r := range d.Results {
			if s.agents == nil || slices.Contains(s.agents, r.STXAddress) {
				ev.Data.Results = append(ev.Data.Results, r)
			}
		}
		if ev.Data.Rewards == nil {
			ev.Data.Rewards = []RoundReward{}
		}
		body, err := json.Marshal(ev)
		if err != nil {
			return n, err
		}
		tag, err := tx.Exec(ctx, `
insert into deliveries (id, subscriber_id, event, period_start, period_end, payload, status, attempts, next_attempt_at, created_at)
values ($1, $2, $3, $4, $5, $6, 'pending', 0, $7, $7)
on conflict do nothing`, s.id+"-"+EventRoundFinalized+"-"+d.Round.ID, s.id, EventRoundFinalized,
			d.Round.StartsAt, d.Round.EndsAt, body, at)
		if err != nil {
			return n, err
		}
		n += int(tag.RowsAffected())
	}
	return n, nil
}
