-- Quota headers are counts an upstream chooses: a plan with a large month
-- (or an "unlimited" sentinel such as 4294967295) does not fit in int, and
-- one such header failed every price write. SPEC §6 says bigint.
alter table token_prices
    alter column minute_remaining type bigint,
    alter column month_remaining type bigint;

---- create above / drop below ----

-- Values past int's range cannot go back: clamp them rather than fail.
alter table token_prices
    alter column minute_remaining type int using least(minute_remaining, 2147483647),
    alter column month_remaining type int using least(month_remaining, 2147483647);
