-- The occurrence ledger of SPEC §3.4 and §6: one row per (task, nominal
-- time), written by the activities (never by workflow code). Every run of
-- every task is recorded, interval tasks included, so operators, metrics and
-- the status page read run outcomes from Postgres instead of querying
-- Temporal (each query is a billed action).
create table task_runs (
    task           text not null,
    nominal_at     timestamptz not null,
    status         text not null
        check (status in ('scheduled', 'running', 'ok', 'failed', 'skipped', 'coalesced')),
    reason         text,
    started_at     timestamptz,
    finished_at    timestamptz,
    coalesced_into timestamptz,
    missed_count   int,
    -- Beyond the contract: attempts that began the run, the class of a
    -- failed run, and the run's result document.
    attempts       int not null default 0,
    error_class    text,
    result         jsonb,
    primary key (task, nominal_at)
);

-- The newest finished runs of a task (status, metrics, the operator's page).
create index task_runs_finished_idx on task_runs (task, finished_at desc);

---- create above / drop below ----

drop table task_runs;
