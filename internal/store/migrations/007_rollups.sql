-- Rollups and deliveries (SPEC §6, §10). Columns beyond the contract are
-- marked; the contract's names and types are never changed.

-- Every price the tenero task fetched, changed or not: the input of the
-- rollups. A null price is a confirmed "no price" (it still shows the token
-- was looked at). Kept for store.ObservationRetention, pruned by the rollup
-- task.
create table price_observations (
    token_id    text not null,
    observed_at timestamptz not null,
    price_usd   numeric check (price_usd > 0 and price_usd < 'Infinity'),
    primary key (token_id, observed_at)
);

-- Pruning by age.
create index price_observations_observed_at_idx on price_observations (observed_at);

-- The rollups read a period's swaps by the time they were mined.
create index swaps_burn_block_time_idx on swaps (burn_block_time);

-- One row per (period, start, subject). data is the subject's figures as
-- JSON; jsonb keeps numbers as numeric, so no digit is lost on the way.
create table rollups (
    period       text not null check (period in ('hour', 'day')),
    period_start timestamptz not null,
    subject_kind text not null check (subject_kind in ('token', 'agent', 'competition')),
    subject      text not null,
    data         jsonb not null,
    complete     boolean not null,
    computed_at  timestamptz not null,
    -- Beyond the contract: a day in a zone with daylight saving is 23 or
    -- 25 hours long, so the end is stored rather than derived.
    period_end   timestamptz not null check (period_end > period_start),
    primary key (period, period_start, subject_kind, subject)
);

-- GET /api/rollups?token=… / ?agent=…
create index rollups_subject_idx on rollups (subject_kind, subject, period, period_start);

create table subscribers (
    id         text primary key,
    url        text not null,
    -- The signing key, "whsec_" + base64. It must be readable to sign, so
    -- it is stored as is; it is shown once, at creation, and never again.
    secret     text not null,
    events     text[] not null check (cardinality(events) > 0 and events <@ array['hourly', 'daily']),
    tokens     text[],
    agents     text[],
    status     text not null check (status in ('active', 'disabled')),
    created_at timestamptz not null default now(),
    -- Beyond the contract: why and when a subscriber was disabled (410),
    -- and since when its endpoint has been failing (null while healthy).
    -- A failing endpoint's attempts get their own share of the concurrency,
    -- so that it never delays the healthy ones.
    disabled_at     timestamptz,
    disabled_reason text,
    failing_since   timestamptz
);

create table deliveries (
    id              text primary key,
    subscriber_id   text not null references subscribers (id) on delete cascade,
    event           text not null check (event in ('hourly', 'daily')),
    period_start    timestamptz not null,
    payload         jsonb not null,
    status          text not null check (status in ('pending', 'retrying', 'delivered', 'exhausted')),
    attempts        int not null check (attempts >= 0),
    next_attempt_at timestamptz,
    last_status     int,
    last_error      text,
    created_at      timestamptz not null,
    delivered_at    timestamptz,
    -- Beyond the contract: the period's end (the delay metric starts
    -- there), the last attempt's time, and a lease taken just before a POST
    -- so that two runs can never send the same delivery at once.
    period_end      timestamptz not null,
    last_attempt_at timestamptz,
    claimed_until   timestamptz,
    unique (subscriber_id, event, period_start)
);

-- The due set, read by keyset in (next_attempt_at, id) order.
create index deliveries_due_idx on deliveries (next_attempt_at, id) where status in ('pending', 'retrying');
-- pacer deliveries list --status, counts and retention.
create index deliveries_status_idx on deliveries (status, created_at);

---- create above / drop below ----

drop table deliveries;
drop table subscribers;
drop table rollups;
drop table price_observations;
drop index swaps_burn_block_time_idx;
