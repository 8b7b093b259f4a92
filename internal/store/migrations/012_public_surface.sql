-- The public surface (SPEC §5.6, §10.2): what anyone on the internet can
-- make pacer do, bounded.

-- A hint makes an agent due at most once per interval (PACER_HOT_EVERY),
-- decided in the UPDATE's WHERE so concurrent API processes agree.
alter table agent_ingest add column last_hint_at timestamptz;

-- The credential of GET /api/deliveries/{id}, apart from the signing
-- secret and stored only as its SHA-256 (SPEC §10.2). Subscribers made
-- before it have none and cannot pull until one is issued.
alter table subscribers add column pull_token_hash bytea;

-- The first rollup of an hour could miss a swap (010's trigger): a swap
-- committed between the rollup's snapshot and its commit found no
-- committed rollup row, so it marked nothing. Now the rollup of an hour
-- holds an exclusive transaction-level advisory lock on the hour
-- (classid rollup_hour_lock_class, objid the hour's number since the
-- epoch) while it computes and commits, and the trigger:
--  * takes the lock shared, without waiting: held until the swap's
--    transaction ends, so a rollup that starts later waits for the swap
--    to commit and then sees it;
--  * cannot take it when a rollup of the hour is under way: it marks the
--    hour whatever the rollup will find (a spare recompute at worst).
create or replace function swaps_mark_dirty() returns trigger language plpgsql as $$
declare
    t    bigint;
    hour timestamptz;
begin
    if tg_op = 'DELETE' then
        t := old.burn_block_time;
    else
        t := new.burn_block_time;
    end if;
    -- The UTC hour, whatever the session's time zone.
    hour := to_timestamp(t - ((t % 3600) + 3600) % 3600);
    if not pg_try_advisory_xact_lock_shared(1885430629, (floor(extract(epoch from hour) / 3600))::int)
       or exists (select 1 from rollups where period = 'hour' and period_start = hour) then
        insert into rollup_dirty (hour_start, reason) values (hour, 'swaps_' || lower(tg_op))
        on conflict (hour_start) do nothing;
    end if;
    return null;
end;
$$;

-- Retention of what public input writes (store.PrunePublicInput): each
-- table is pruned by the column that dates its rows.
create index pending_txs_first_seen_idx on pending_txs (first_seen_at);
create index swap_rejections_last_seen_idx on swap_rejections (last_seen_at);
create index chainhook_txs_updated_idx on chainhook_txs (updated_at);
create index swap_rollbacks_rolled_back_idx on swap_rollbacks (rolled_back_at);

---- create above / drop below ----

drop index pending_txs_first_seen_idx;
drop index swap_rejections_last_seen_idx;
drop index chainhook_txs_updated_idx;
drop index swap_rollbacks_rolled_back_idx;

create or replace function swaps_mark_dirty() returns trigger language plpgsql as $$
declare
    t    bigint;
    hour timestamptz;
begin
    if tg_op = 'DELETE' then
        t := old.burn_block_time;
    else
        t := new.burn_block_time;
    end if;
    hour := to_timestamp(t - ((t % 3600) + 3600) % 3600);
    if exists (select 1 from rollups where period = 'hour' and period_start = hour) then
        insert into rollup_dirty (hour_start, reason) values (hour, 'swaps_' || lower(tg_op))
        on conflict (hour_start) do nothing;
    end if;
    return null;
end;
$$;

alter table subscribers drop column pull_token_hash;
alter table agent_ingest drop column last_hint_at;
