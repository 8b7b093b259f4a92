-- Chainhook push (SPEC §11) and the rollup corrections it causes (§10).

-- A swap whose block was rolled back leaves swaps and is kept here with the
-- rollback's block. A later re-apply verifies the transaction again and
-- inserts it into swaps anew; its rollback rows stay as the record of what
-- happened. The columns up to inserted_at are swaps' own.
create table swap_rollbacks (
    txid            text not null,
    sender          text not null,
    contract_id     text not null,
    function_name   text not null,
    token_in        text not null,
    amount_in       numeric not null,
    token_out       text not null,
    amount_out      numeric not null,
    burn_block_time bigint not null,
    tx_status       text not null,
    source          text not null,
    raw_event_json  jsonb,
    inserted_at     timestamptz not null,
    -- The rolled-back block, as the rollback delivered it.
    block_hash      text not null,
    block_height    bigint not null,
    rolled_back_at  timestamptz not null default now(),
    -- One row per (transaction, block): a replayed rollback changes nothing.
    primary key (txid, block_hash)
);

create index swap_rollbacks_sender_idx on swap_rollbacks (sender);

-- Periods whose swaps changed after their rollups were computed (a
-- rollback, a late re-apply): the rollup task recomputes them, and the
-- deliver task re-delivers those already delivered as corrections.
-- Keyed by the UTC hour a swap's burn_block_time falls in; the day(s) in
-- PACER_DAY_TZ holding that hour are derived from it.
create table rollup_dirty (
    hour_start timestamptz primary key,
    reason     text not null,
    marked_at  timestamptz not null default now()
);

-- What the chainhook endpoint has received: the sweep's polling relaxes to
-- its reconciling floor only while pushes keep arriving.
create table chainhook_state (
    id               boolean primary key default true check (id),
    last_received_at timestamptz not null,
    deliveries       bigint not null default 0
);

-- The block each transaction pushed for a registered agent was last
-- applied in or rolled back from. A rollback acts only on transactions
-- whose last word is its own block, so a stale rollback that arrives after
-- the transaction was re-applied in another block changes nothing.
create table chainhook_txs (
    txid         text primary key,
    block_hash   text not null,
    block_height bigint not null,
    applied      boolean not null,
    updated_at   timestamptz not null default now()
);
