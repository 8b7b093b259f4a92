-- The registry (SPEC §12) and the competition's reads (SPEC §7).

-- An agent the registry no longer lists is kept, with its swaps, marked
-- deregistered: it is no longer visited (its agent_ingest row goes, and
-- comes back, due at once, when it is listed again) nor ranked, and the
-- verifier treats it as not registered, so a swap it makes meanwhile is
-- rejected for a reason that is looked at again when it comes back.
alter table agents add column deregistered_at timestamptz;

create function agents_on_deregister() returns trigger language plpgsql as $$
begin
    if new.deregistered_at is not null and old.deregistered_at is null then
        delete from agent_ingest where stx_address = new.stx_address;
    elsif new.deregistered_at is null and old.deregistered_at is not null then
        insert into agent_ingest (stx_address) values (new.stx_address)
        on conflict (stx_address) do nothing;
    end if;
    return new;
end
$$;

-- Named to run before agents_sender_changed (trigger order is by name),
-- which then finds the row of an agent that came back.
create trigger agents_ingest_on_deregister after update of deregistered_at on agents
for each row execute function agents_on_deregister();

-- Coming back is a change of registration: the rejections of its swaps
-- made meanwhile are looked at again. Going away, or a claim changing
-- while away, queues nothing: nobody visits the agent then.
create or replace function discovery_on_agent_change() returns trigger language plpgsql as $$
begin
    if new.deregistered_at is null then
        perform discovery_sender_changed(new.stx_address, tg_op = 'UPDATE');
    end if;
    return new;
end
$$;

create or replace function discovery_on_claim_change() returns trigger language plpgsql as $$
declare
    stx text;
begin
    if tg_op = 'UPDATE' and old.status is not distinct from new.status and old.btc_address = new.btc_address then
        return new;
    end if;
    for stx in select a.stx_address from agents a
               where (a.btc_address = new.btc_address
                      or (tg_op = 'UPDATE' and a.btc_address = old.btc_address))
                 and a.deregistered_at is null loop
        perform discovery_sender_changed(stx, true);
    end loop;
    return new;
end
$$;

drop trigger agents_sender_changed on agents;
create trigger agents_sender_changed after insert or update of btc_address, erc8004_agent_id, deregistered_at on agents
for each row execute function discovery_on_agent_change();

-- Per-agent totals the leaderboard reads instead of a GROUP BY over every
-- swap: what each agent sent and received of each token, and its trade
-- count and first and latest swap. Kept by statement triggers on swaps, in
-- the transaction of the change (swaps are inserted and deleted, never
-- updated).
create table agent_token_totals (
    stx_address text not null,
    token_id    text not null,
    amount_in   numeric not null default 0,
    amount_out  numeric not null default 0,
    -- legs counts the swaps with a leg in this token: a token whose legs
    -- add up to 0 still decides allPriced.
    legs        bigint not null default 0 check (legs >= 0),
    primary key (stx_address, token_id)
);

create table agent_trade_totals (
    stx_address  text primary key,
    trades       bigint not null check (trades >= 0),
    first_trade  bigint,
    latest_trade bigint
);

create function swaps_totals_insert() returns trigger language plpgsql as $$
begin
    insert into agent_token_totals as t (stx_address, token_id, amount_in, amount_out, legs)
    select sender, token, sum(a_in), sum(a_out), count(*) from (
        select sender, token_in as token, amount_in as a_in, 0::numeric as a_out from ins
        union all
        select sender, token_out, 0, amount_out from ins) legs
    group by sender, token
    order by sender, token
    on conflict (stx_address, token_id) do update set
        amount_in = t.amount_in + excluded.amount_in,
        amount_out = t.amount_out + excluded.amount_out,
        legs = t.legs + excluded.legs;
    insert into agent_trade_totals as t (stx_address, trades, first_trade, latest_trade)
    select sender, count(*), min(burn_block_time), max(burn_block_time) from ins
    group by sender
    order by sender
    on conflict (stx_address) do update set
        trades = t.trades + excluded.trades,
        first_trade = least(t.first_trade, excluded.first_trade),
        latest_trade = greatest(t.latest_trade, excluded.latest_trade);
    return null;
end
$$;

create function swaps_totals_delete() returns trigger language plpgsql as $$
begin
    update agent_token_totals t set amount_in = t.amount_in - d.a_in, amount_out = t.amount_out - d.a_out,
        legs = t.legs - d.n
    from (
        select sender, token, sum(a_in) as a_in, sum(a_out) as a_out, count(*) as n from (
            select sender, token_in as token, amount_in as a_in, 0::numeric as a_out from del
            union all
            select sender, token_out, 0, amount_out from del) legs
        group by sender, token) d
    where t.stx_address = d.sender and t.token_id = d.token;
    update agent_trade_totals t set trades = t.trades - d.n,
        first_trade = (select min(burn_block_time) from swaps where sender = t.stx_address),
        latest_trade = (select max(burn_block_time) from swaps where sender = t.stx_address)
    from (select sender, count(*) as n from del group by sender) d
    where t.stx_address = d.sender;
    delete from agent_trade_totals where trades = 0;
    delete from agent_token_totals t using (select distinct sender from del) d
    where t.stx_address = d.sender and t.legs = 0;
    return null;
end
$$;

create trigger swaps_totals_insert after insert on swaps
referencing new table as ins for each statement execute function swaps_totals_insert();
create trigger swaps_totals_delete after delete on swaps
referencing old table as del for each statement execute function swaps_totals_delete();

insert into agent_token_totals (stx_address, token_id, amount_in, amount_out, legs)
select sender, token, sum(a_in), sum(a_out), count(*) from (
    select sender, token_in as token, amount_in as a_in, 0::numeric as a_out from swaps
    union all
    select sender, token_out, 0, amount_out from swaps) legs
group by sender, token;

insert into agent_trade_totals (stx_address, trades, first_trade, latest_trade)
select sender, count(*), min(burn_block_time), max(burn_block_time) from swaps group by sender;

-- The trades list pages newest first by (burn_block_time, txid), for all
-- agents or one.
create index swaps_time_txid_idx on swaps (burn_block_time desc, txid collate "C" desc);
create index swaps_sender_time_txid_idx on swaps (sender, burn_block_time desc, txid collate "C" desc);

---- create above / drop below ----

drop index swaps_sender_time_txid_idx;
drop index swaps_time_txid_idx;
drop trigger swaps_totals_delete on swaps;
drop trigger swaps_totals_insert on swaps;
drop function swaps_totals_delete();
drop function swaps_totals_insert();
drop table agent_trade_totals;
drop table agent_token_totals;
drop trigger agents_sender_changed on agents;
create trigger agents_sender_changed after insert or update of btc_address, erc8004_agent_id on agents
for each row execute function discovery_on_agent_change();
create or replace function discovery_on_agent_change() returns trigger language plpgsql as $$
begin
    perform discovery_sender_changed(new.stx_address, tg_op = 'UPDATE');
    return new;
end
$$;
create or replace function discovery_on_claim_change() returns trigger language plpgsql as $$
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
drop trigger agents_ingest_on_deregister on agents;
drop function agents_on_deregister();
alter table agents drop column deregistered_at;
