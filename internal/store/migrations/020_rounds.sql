-- Rounds (SPEC §13): windows of the competition, each with its own result,
-- computed once by the finalize task and kept as it was computed.
create table rounds (
    id                     text primary key check (id ~ '^[a-z0-9-]{1,64}$'),
    starts_at              timestamptz not null,
    ends_at                timestamptz not null,
    grace_ends_at          timestamptz not null,
    min_volume_usd         double precision not null default 50 check (min_volume_usd >= 0),
    min_priced_trade_count int not null default 3 check (min_priced_trade_count >= 0),
    status                 text not null default 'open' check (status in ('open', 'finalized')),
    created_at             timestamptz not null default now(),
    updated_at             timestamptz not null default now(),
    finalized_at           timestamptz,
    -- A round's deliveries are keyed by its start, as a rollup's by its
    -- period (deliveries_original_idx): two rounds never start together.
    unique (starts_at),
    check (ends_at > starts_at),
    check (grace_ends_at >= ends_at),
    check ((status = 'finalized') = (finalized_at is not null))
);
-- The finalize task's question: the rounds not yet final, by grace end.
create index rounds_open_idx on rounds (grace_ends_at) where status = 'open';

-- The price snapshot a round was valued at: each token's last observed
-- price at or before the round's end, or 1 USD for a peg.
create table round_prices (
    round_id    text not null references rounds (id) on delete cascade,
    token_id    text not null,
    price_usd   numeric not null,
    decimals    int not null,
    source      text not null check (source in ('observation', 'peg')),
    observed_at timestamptz,
    primary key (round_id, token_id)
);

create table round_results (
    round_id             text not null references rounds (id) on delete cascade,
    rank                 int not null check (rank >= 1),
    stx_address          text not null,
    btc_address          text,
    erc8004_agent_id     bigint,
    trade_count          int not null,
    priced_trade_count   int not null,
    unpriced_trade_count int not null,
    volume_usd           double precision not null,
    received_usd         double precision not null,
    pnl_usd              double precision not null,
    pnl_percent          double precision,
    latest_trade_at      bigint,
    source_agent         int not null,
    source_sweep         int not null,
    source_chainhook     int not null,
    unpriced_tokens      text[] not null,
    calculated_at        timestamptz not null,
    primary key (round_id, stx_address),
    unique (round_id, rank)
);
-- latestRoundResult: an agent's results, newest round first.
create index round_results_stx_idx on round_results (stx_address);

create table round_rewards (
    round_id         text not null references rounds (id) on delete cascade,
    category         text not null check (category in ('overall_pnl', 'volume', 'return')),
    rank             int not null,
    stx_address      text not null,
    erc8004_agent_id bigint,
    amount_sats      bigint not null default 0,
    status           text not null default 'pending' check (status in ('pending', 'paid', 'failed', 'void')),
    payout_txid      text,
    paid_at          timestamptz,
    notes            text,
    created_at       timestamptz not null,
    primary key (round_id, category)
);

-- Subscribers may ask for the round.finalized event (SPEC §10.2).
alter table subscribers drop constraint subscribers_events_check;
alter table subscribers add constraint subscribers_events_check
    check (cardinality(events) > 0 and events <@ array['hourly', 'daily', 'round.finalized']);
alter table deliveries drop constraint deliveries_event_check;
alter table deliveries add constraint deliveries_event_check check (event in ('hourly', 'daily', 'round.finalized'));

---- create above / drop below ----

delete from deliveries where event = 'round.finalized';
alter table deliveries drop constraint deliveries_event_check;
alter table deliveries add constraint deliveries_event_check check (event in ('hourly', 'daily'));
update subscribers set events = array_remove(events, 'round.finalized');
alter table subscribers drop constraint subscribers_events_check;
alter table subscribers add constraint subscribers_events_check
    check (cardinality(events) > 0 and events <@ array['hourly', 'daily']);
drop table round_rewards;
drop table round_results;
drop table round_prices;
drop table rounds;
