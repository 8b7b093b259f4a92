-- A swap's own time (SPEC §5.0 "Times", §6): the Stacks block's
-- block_time, seconds apart since Nakamoto, where burn_block_time is the
-- Bitcoin block's, shared by every block of a tenure. Null for rows
-- recorded before it.
alter table swaps add column block_time bigint;
alter table swap_rollbacks add column block_time bigint;

---- create above / drop below ----

alter table swap_rollbacks drop column block_time;
alter table swaps drop column block_time;
