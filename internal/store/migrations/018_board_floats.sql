-- The leaderboard's aggregate reads float copies of the per-agent totals:
-- Postgres converts numeric to float8 through text, which cost it two
-- thirds of its time at 80,000 totals (make bench-board). The numeric
-- columns stay the exact figures; the copies are kept by the same
-- statement triggers, in the transaction of each change.
alter table agent_token_totals
    add column amount_in_f  double precision not null default 0,
    add column amount_out_f double precision not null default 0;

update agent_token_totals set amount_in_f = amount_in::float8, amount_out_f = amount_out::float8;

create or replace function swaps_totals_insert() returns trigger language plpgsql as $$
begin
    insert into agent_token_totals as t (stx_address, token_id, amount_in, amount_out, legs, amount_in_f, amount_out_f)
    select sender, token, sum(a_in), sum(a_out), count(*), sum(a_in)::float8, sum(a_out)::float8 from (
        select sender, token_in as token, amount_in as a_in, 0::numeric as a_out from ins
        union all
        select sender, token_out, 0, amount_out from ins) legs
    group by sender, token
    order by sender, token
    on conflict (stx_address, token_id) do update set
        amount_in = t.amount_in + excluded.amount_in,
        amount_out = t.amount_out + excluded.amount_out,
        legs = t.legs + excluded.legs,
        amount_in_f = (t.amount_in + excluded.amount_in)::float8,
        amount_out_f = (t.amount_out + excluded.amount_out)::float8;
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

create or replace function swaps_totals_delete() returns trigger language plpgsql as $$
begin
    update agent_token_totals t set amount_in = t.amount_in - d.a_in, amount_out = t.amount_out - d.a_out,
        legs = t.legs - d.n,
        amount_in_f = (t.amount_in - d.a_in)::float8, amount_out_f = (t.amount_out - d.a_out)::float8
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

---- create above / drop below ----

create or replace function swaps_totals_insert() returns trigger language plpgsql as $$
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

create or replace function swaps_totals_delete() returns trigger language plpgsql as $$
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

alter table agent_token_totals drop column amount_in_f, drop column amount_out_f;
