-- Discovery reads the chain once for every agent (SPEC §5.0).

-- Each reader's position: the tail ('tail') and each allowlisted
-- contract's own list ('contract:<contract_id>'). The columns up to
-- updated_at are the contract; the rest are pacer's own bookkeeping.
--
-- block_height, tx_index, txid: the newest entry fully read (everything at
-- or below it is settled); null before the first read. start_*: where the
-- reader began (the tail's first head), which bounds what agents' own
-- history visits must read and where each contract's reader begins.
-- scan: a scan cut short (the budget, a crash), internal/discovery.State,
-- so the next run goes on where it stopped; scan_began_at when that scan
-- began. covered_at: when the last complete scan began: everything mined
-- before it is read. The counters are cumulative,
-- for status and metrics.
create table discovery_cursors (
    reader             text primary key,
    block_height       bigint,
    tx_index           int,
    txid               text,
    head_lag_seconds   double precision,
    updated_at         timestamptz not null,
    block_time         bigint,
    start_block_height bigint,
    start_tx_index     int,
    start_txid         text,
    scan               jsonb,
    scan_began_at      timestamptz,
    covered_at         timestamptz,
    last_read_at       timestamptz,
    requests           bigint not null default 0,
    pages              bigint not null default 0,
    candidates         bigint not null default 0,
    gaps               bigint not null default 0
);

-- Ranges a reader gave up on (PACER_TAIL_MAX_PAGES): reported, and filled
-- once every contract's reader has completed a scan begun after the gap
-- was found (covered_at > found_at): such a scan reads everything mined
-- before it began, the gap included.
create table discovery_gaps (
    id               bigserial primary key,
    reader           text not null,
    from_height      bigint,
    from_tx_index    int,
    to_height        bigint not null,
    to_tx_index      int not null,
    found_at         timestamptz not null default now(),
    filled_at        timestamptz
);
create index discovery_gaps_open_idx on discovery_gaps (found_at) where filled_at is null;

-- The two rejections that depend on who the sender is (sender_not_registered,
-- sender_not_genesis, SPEC §5.5) are not final: when the sender's agents row
-- or claim changes, they are queued in pending_txs, where the agent's next
-- visit verifies them again, and the agent becomes due now. So a swap made
-- while a claim was pending counts once the claim is verified, and nobody
-- rules a future agent's swaps out by submitting them early.
create function discovery_sender_changed(stx text, due boolean) returns void language plpgsql as $$
declare
    queued int;
begin
    if stx is null then
        return;
    end if;
    with q as (
        insert into pending_txs (txid, sender, first_seen_at)
        select txid, sender, now() from swap_rejections
        where sender = stx and reason in ('sender_not_registered', 'sender_not_genesis')
        on conflict (txid) do nothing
        returning 1
    )
    select count(*) into queued from q;
    -- Rejections to look at again make the agent due now, as a hint does
    -- (a visit under way when they were queued leaves it due); a changed
    -- row or claim without them makes it due, no more.
    if queued > 0 or due then
        update agent_ingest set
            hinted_at = case when queued > 0 then now() else hinted_at end,
            next_run_at = least(next_run_at, now())
        where stx_address = stx;
    end if;
end
$$;

create function discovery_on_agent_change() returns trigger language plpgsql as $$
begin
    -- A new agent is due already (agent_ingest's own insert trigger, which
    -- runs first: trigger order is by name, agents_ingest_on_register <
    -- agents_sender_changed).
    perform discovery_sender_changed(new.stx_address, tg_op = 'UPDATE');
    return new;
end
$$;

create trigger agents_sender_changed after insert or update of btc_address, erc8004_agent_id on agents
for each row execute function discovery_on_agent_change();

create function discovery_on_claim_change() returns trigger language plpgsql as $$
declare
    stx text;
begin
    if tg_op = 'UPDATE' and old.status is not distinct from new.status and old.btc_address = new.btc_address then
        return new;
    end if;
    for stx in select a.stx_address from agents a
               where a.btc_address = new.btc_address
                  or (tg_op = 'UPDATE' and a.btc_address = old.btc_address) loop
        perform discovery_sender_changed(stx, true);
    end loop;
    return new;
end
$$;

create trigger claims_sender_changed after insert or update on claims
for each row execute function discovery_on_claim_change();

---- create above / drop below ----

drop trigger claims_sender_changed on claims;
drop function discovery_on_claim_change();
drop trigger agents_sender_changed on agents;
drop function discovery_on_agent_change();
drop function discovery_sender_changed(text, boolean);
drop table discovery_gaps;
drop table discovery_cursors;
