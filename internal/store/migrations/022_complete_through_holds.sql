-- completeThrough (SPEC §7) that nobody can freeze from outside (issue
-- 38): a pending transaction holds it back only when a reader saw it in a
-- block and it passed the gates (a registered genesis agent's allowlisted
-- call), and then just before that block's time; a hold lapses after a
-- bound (store.HoldBound), said once (hold_lapsed_at). A transaction in
-- the mempool holds nothing: once mined, it is in a block no reader has
-- passed yet. Before this, every pending row held completeThrough where it
-- was when the row was queued, so anyone could post an agent's mempool
-- transaction to the fast path and stop it, and one queued before the first
-- value was published kept it null for good.
drop trigger pending_txs_hold on pending_txs;
drop function pending_txs_hold();
alter table pending_txs drop column hold_through;
alter table pending_txs add column held_block_time bigint;
alter table pending_txs add column held_at timestamptz;
alter table pending_txs add column hold_lapsed_at timestamptz;

---- create above / drop below ----

alter table pending_txs drop column hold_lapsed_at;
alter table pending_txs drop column held_at;
alter table pending_txs drop column held_block_time;
alter table pending_txs add column hold_through bigint;

create function pending_txs_hold() returns trigger language plpgsql as $$
begin
    new.hold_through := (select value::bigint from competition_state where key = 'complete_through');
    return new;
end
$$;

create trigger pending_txs_hold before insert on pending_txs
for each row execute function pending_txs_hold();
