-- A swap a chainhook delivery recorded from its own operations (SPEC §11)
-- stands until a reader confirms it against Hiro: the readers verify a
-- transaction marked here although swaps has it, and the chain's answer
-- replaces the row (a mismatch is logged) or removes it. The mark goes with
-- the row it marks.
create table chainhook_pushed (
    txid        text primary key references swaps (txid) on delete cascade,
    recorded_at timestamptz not null default now()
);

---- create above / drop below ----

drop table chainhook_pushed;
