-- completeThrough (SPEC §7): a transaction still pending holds it back at
-- the value it had when the transaction was queued, which no reader had
-- passed the transaction's block at: so it never names a time whose swap
-- is not yet recorded.
alter table pending_txs add column hold_through bigint;

create function pending_txs_hold() returns trigger language plpgsql as $$
begin
    new.hold_through := (select value::bigint from competition_state where key = 'complete_through');
    return new;
end
$$;

create trigger pending_txs_hold before insert on pending_txs
for each row execute function pending_txs_hold();

---- create above / drop below ----

drop trigger pending_txs_hold on pending_txs;
drop function pending_txs_hold();
alter table pending_txs drop column hold_through;
