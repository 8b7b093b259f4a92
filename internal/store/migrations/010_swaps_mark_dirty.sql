-- Any change to swaps in an hour whose rollups already exist marks that
-- hour in rollup_dirty, in the same transaction as the change: a swap the
-- sweep finds late, one a rollback removes or a re-apply restores. The
-- rollup task then recomputes the hour and its day(s) and re-delivers them
-- as corrections when the figures changed (SPEC §10, §11). Hours not
-- rolled up yet need no mark: their first computation sees the change.
create function swaps_mark_dirty() returns trigger language plpgsql as $$
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
    if exists (select 1 from rollups where period = 'hour' and period_start = hour) then
        insert into rollup_dirty (hour_start, reason) values (hour, 'swaps_' || lower(tg_op))
        on conflict (hour_start) do nothing;
    end if;
    return null;
end;
$$;

create trigger swaps_mark_dirty after insert or delete on swaps
for each row execute function swaps_mark_dirty();

---- create above / drop below ----

drop trigger swaps_mark_dirty on swaps;
drop function swaps_mark_dirty();
