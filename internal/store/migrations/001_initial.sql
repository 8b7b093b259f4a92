-- The tables of SPEC §6. Their names, columns, types and defaults are a
-- contract with code and tests outside pacer: add to them, never rename.
--
-- Tables are created unqualified, in the first schema of search_path, so that
-- each test can migrate its own schema.

create table agents (
    stx_address      text primary key,
    btc_address      text unique,
    display_name     text,
    erc8004_agent_id bigint,
    verified_at      timestamptz not null default now(),
    last_active_at   timestamptz
);

create table claims (
    btc_address text primary key,
    status      text not null
        check (status in ('pending', 'verified', 'rewarded', 'failed'))
);

-- Amounts are numeric because on-chain amounts can exceed 2^64 and must stay
-- exact; the verify path only ever stores non-negative integers.
create table swaps (
    txid            text primary key,
    sender          text not null,
    contract_id     text not null,
    function_name   text not null,
    token_in        text not null,
    amount_in       numeric not null check (amount_in >= 0),
    token_out       text not null,
    amount_out      numeric not null check (amount_out >= 0),
    burn_block_time bigint not null,
    tx_status       text not null,
    source          text not null check (source in ('agent', 'sweep', 'chainhook')),
    raw_event_json  jsonb,
    inserted_at     timestamptz not null default now()
);

-- Per-agent listings and the traded-token ranking of the price refresh.
create index swaps_sender_idx on swaps (sender);
create index swaps_token_in_idx on swaps (token_in);
create index swaps_token_out_idx on swaps (token_out);

create table competition_state (
    key        text primary key,
    value      text not null,
    updated_at timestamptz not null default now()
);

-- A null price_usd is a confirmed "no price" (Tenero answered 0 or null).
-- numeric accepts NaN and Infinity, and Postgres sorts both above every
-- number, so "< 'Infinity'" is what keeps a stored price finite.
create table token_prices (
    token_id         text primary key,
    price_usd        numeric check (price_usd > 0 and price_usd < 'Infinity'),
    decimals         int check (decimals >= 0),
    source           text not null check (source in ('tenero', 'peg')),
    fetched_at       timestamptz not null,
    minute_remaining int,
    month_remaining  int,
    updated_at       timestamptz not null default now()
);

---- create above / drop below ----

drop table token_prices;
drop table competition_state;
drop table swaps;
drop table claims;
drop table agents;
