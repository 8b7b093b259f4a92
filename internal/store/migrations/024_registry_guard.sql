-- The registry's reads (SPEC §12, issue 41.6 and 41.7).

-- The pages of the last read applied, each as the registry answered it: a
-- page that answers 304 to its ETag stands for what it listed then, so
-- every page is revalidated at every read, not the first alone (a change
-- on a later page was ignored until the first page changed too). The
-- first page's ETag, all the previous reads kept, goes.
create table registry_pages (
    seq    int primary key,
    url    text not null,
    etag   text not null default '',
    agents jsonb not null,
    next   text
);
delete from competition_state where key = 'registry_etag';

-- An agent's ingest progress outlives its deregistration: the sweep's
-- readers (agent_ingest) still forget a deregistered agent, but its
-- cursor and what the policy knows of it are kept here, and an agent
-- listed again comes back from them (due at once) instead of reading its
-- whole history again: one registry answer that drops everybody, once
-- confirmed and undone, no longer costs every history's requests.
create table agent_ingest_kept (
    stx_address     text primary key references agents (stx_address) on delete cascade,
    tier            text not null,
    cursor          jsonb,
    last_visit_at   timestamptz,
    last_success_at timestamptz,
    last_swap_at    timestamptz,
    swap_rate       double precision not null,
    visits          bigint not null,
    swaps_found     bigint not null,
    kept_at         timestamptz not null default now()
);

create or replace function agents_on_deregister() returns trigger language plpgsql as $$
begin
    if new.deregistered_at is not null and old.deregistered_at is null then
        insert into agent_ingest_kept as k (stx_address, tier, cursor, last_visit_at, last_success_at,
                                            last_swap_at, swap_rate, visits, swaps_found)
        select stx_address, tier, cursor, last_visit_at, last_success_at, last_swap_at, swap_rate, visits, swaps_found
        from agent_ingest where stx_address = new.stx_address
        on conflict (stx_address) do update set
            tier = excluded.tier, cursor = excluded.cursor, last_visit_at = excluded.last_visit_at,
            last_success_at = excluded.last_success_at, last_swap_at = excluded.last_swap_at,
            swap_rate = excluded.swap_rate, visits = excluded.visits, swaps_found = excluded.swaps_found,
            kept_at = now();
        delete from agent_ingest where stx_address = new.stx_address;
    elsif new.deregistered_at is null and old.deregistered_at is not null then
        -- Due at once (next_run_at's default), from where it was.
        insert into agent_ingest (stx_address, tier, cursor, last_visit_at, last_success_at,
                                  last_swap_at, swap_rate, visits, swaps_found)
        select stx_address, tier, cursor, last_visit_at, last_success_at, last_swap_at, swap_rate, visits, swaps_found
        from agent_ingest_kept where stx_address = new.stx_address
        on conflict (stx_address) do nothing;
        insert into agent_ingest (stx_address) values (new.stx_address)
        on conflict (stx_address) do nothing;
        delete from agent_ingest_kept where stx_address = new.stx_address;
    end if;
    return new;
end
$$;

---- create above / drop below ----

create or replace function agents_on_deregister() returns trigger language plpgsql as $$
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
drop table agent_ingest_kept;
drop table registry_pages;
