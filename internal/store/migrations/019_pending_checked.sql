-- A pending transaction is looked at again by the sweep's plan (a Verify
-- step) once checked_at (or, never checked since, first_seen_at) is
-- PACER_RECONCILE_EVERY old: a mempool transaction Hiro dropped leaves the
-- table (a final rejection) instead of holding the board's complete-through
-- mark back until retention prunes it a week later. A visit of the sender
-- makes its pending transactions due at once (checked_at -infinity).
alter table pending_txs add column checked_at timestamptz;

create index pending_txs_checked_idx on pending_txs ((coalesce(checked_at, first_seen_at)));

---- create above / drop below ----

drop index pending_txs_checked_idx;
alter table pending_txs drop column checked_at;
