-- Final verdicts on transactions (SPEC §5.5): a transaction kept here is
-- never fetched from Hiro again; the sweep and the fast path answer from
-- this row. Only final reasons belong here: Hiro or the database failing
-- says nothing about the transaction.
create table swap_rejections (
    txid          text primary key,
    sender        text,
    reason        text not null check (reason in (
        'sender_not_registered', 'sender_not_genesis', 'contract_not_allowlisted',
        'tx_failed', 'before_comp_start', 'malformed_tx', 'invalid_amount',
        'incomplete_events', 'not_canonical')),
    detail        text,
    first_seen_at timestamptz not null,
    last_seen_at  timestamptz not null
);

-- Transactions still in the mempool when their sender was visited: the next
-- visit looks at them again, without holding the agent's cursor back.
create table pending_txs (
    txid          text primary key,
    sender        text not null,
    first_seen_at timestamptz not null
);
create index pending_txs_sender on pending_txs (sender);

---- create above / drop below ----

drop table pending_txs;
drop table swap_rejections;
