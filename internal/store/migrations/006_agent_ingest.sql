-- Per-agent ingestion state (SPEC §5.1): one row per registered agent, the
-- due set of the sweep. The columns up to next_run_at are the contract; the
-- rest are pacer's own bookkeeping.
--
-- cursor is the newest transaction of the agent already processed,
-- {"block_height": n, "tx_index": n}, null before the first complete visit.
-- A visit cut short (the run's budget spent) leaves visit_from, the page
-- token where it goes on, and visit_top, the newest position it saw, which
-- becomes the cursor once the visit reaches the old cursor.
create table agent_ingest (
    stx_address     text primary key references agents (stx_address) on delete cascade,
    tier            text not null default 'cold' check (tier in ('hot', 'warm', 'cold')),
    cursor          jsonb check (cursor is null or (
                        jsonb_typeof(cursor -> 'block_height') = 'number' and
                        jsonb_typeof(cursor -> 'tx_index') = 'number')),
    last_visit_at   timestamptz,
    last_success_at timestamptz,
    last_swap_at    timestamptz,
    swap_rate       double precision not null default 0 check (swap_rate >= 0 and swap_rate < 'Infinity'),
    status          text not null default 'ok' check (status in ('ok', 'error')),
    error_count     int not null default 0 check (error_count >= 0),
    next_run_at     timestamptz not null default now(),
    visit_from      text,
    visit_top       jsonb,
    last_error      text,
    -- hinted_at is the last hint (the fast path, a chainhook delivery): a
    -- visit that began before it leaves the agent due.
    hinted_at       timestamptz,
    visits          bigint not null default 0,
    swaps_found     bigint not null default 0,
    -- version makes each visit's write a compare-and-set: a visit whose
    -- row changed under it (a concurrent attempt) writes nothing.
    version         bigint not null default 0,
    created_at      timestamptz not null default now()
);

-- The due set: agents whose next_run_at has passed. A range scan of this
-- index answers it however many agents there are.
create index agent_ingest_due_idx on agent_ingest (next_run_at);

-- A new agent gets its row, due at once, whoever registers it.
create function agent_ingest_on_register() returns trigger language plpgsql as $$
begin
    insert into agent_ingest (stx_address) values (new.stx_address)
    on conflict (stx_address) do nothing;
    return new;
end
$$;

create trigger agents_ingest_on_register after insert on agents
for each row execute function agent_ingest_on_register();

-- Take over from the round-robin sweep without a gap: every agent starts
-- with a null cursor, so its first visit pages back to COMPETITION_START
-- (swaps already in the ledger cost no detail request). Tier, newest swap
-- and swap rate start from the ledger, so the first visits already go to
-- the agents that trade.
insert into agent_ingest (stx_address, tier, last_swap_at, swap_rate, next_run_at)
select a.stx_address,
       case when s.last_swap > now() - interval '24 hours' then 'hot'
            when s.last_swap > now() - interval '7 days' then 'warm'
            else 'cold' end,
       s.last_swap,
       coalesce(s.rate, 0),
       now()
from agents a
left join lateral (
    select to_timestamp(max(burn_block_time)) as last_swap,
           -- swaps a day, each weighted exp(-age / 3 days): ingest.RateWindow
           sum(exp(-greatest(0, extract(epoch from now()) - burn_block_time) / 259200.0)) / 3.0 as rate
    from swaps where sender = a.stx_address
) s on true
on conflict (stx_address) do nothing;

delete from competition_state where key = 'competition_sweep_cursor';

-- The one Hiro budget every process shares (SPEC §5.4): the state of
-- internal/budget, read and written under a row lock for every request.
create table upstream_budget_state (
    upstream   text primary key,
    state      jsonb not null,
    updated_at timestamptz not null default now()
);

---- create above / drop below ----

drop table upstream_budget_state;

drop trigger agents_ingest_on_register on agents;
drop function agent_ingest_on_register();
drop table agent_ingest;
