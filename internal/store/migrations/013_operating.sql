-- Operating pacer (SPEC §10.2): who did what, and a subscriber's lifecycle.

-- Every operator action (and each automatic disable), written in the same
-- transaction as the change it records, or right after a Temporal update
-- returns. before and after never hold a secret.
create table audit_log (
    id     bigserial primary key,
    at     timestamptz not null,
    actor  text not null,
    action text not null,
    target text,
    before jsonb,
    after  jsonb
);

-- pacer audit --since, GET /api/admin/audit?target=…
create index audit_log_at_idx on audit_log (at);
create index audit_log_target_idx on audit_log (target, id);

alter table subscribers
    -- A rotated secret stays valid until previous_secret_until: deliveries
    -- carry both signatures meanwhile.
    add column previous_secret       text,
    add column previous_secret_until timestamptz,
    -- A removed subscriber is kept (disabled, deleted_at set) so that its
    -- deliveries stay readable; lists leave it out.
    add column deleted_at            timestamptz,
    -- Failed attempts in a row (0 while healthy); with failing_since it
    -- decides the automatic disable after PACER_DISABLE_AFTER.
    add column failure_streak        int not null default 0 check (failure_streak >= 0);

---- create above / drop below ----

alter table subscribers
    drop column previous_secret,
    drop column previous_secret_until,
    drop column deleted_at,
    drop column failure_streak;
drop table audit_log;
