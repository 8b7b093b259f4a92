-- Hiro's WebSocket (SPEC §5.0 "Push"): one worker holds the deployment's
-- subscriptions (a session advisory lock) and keeps their standing here,
-- where the sweep of any worker reads whether push is live (the tail then
-- slows to its reconciling cadence) and status, metrics and the operator's
-- page read the rest. A pushed transaction waits in pending_txs, due at
-- once (checked_at -infinity), for the plan's Verify step; pushed_at says
-- a push named it.
create table push_state (
    id            boolean primary key default true check (id),
    holder        text not null,
    live          boolean not null,
    since         timestamptz not null,
    last_block_at timestamptz,
    messages      bigint not null default 0,
    reconnects    bigint not null default 0,
    sockets       int not null default 0,
    live_sockets  int not null default 0,
    last_error    text,
    updated_at    timestamptz not null default now()
);

alter table pending_txs add column pushed_at timestamptz;

---- create above / drop below ----

alter table pending_txs drop column pushed_at;
drop table push_state;
