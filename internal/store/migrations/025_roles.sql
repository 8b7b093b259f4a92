-- Least-privilege roles (issue 41.12). Every process connected as the
-- configured user, the superuser in the examples, including the public
-- API's read pool. Two group roles (no login: an operator makes login
-- users members of them, docs/deploying.md):
--
--   pacer_public  SELECT on what the public reads need, nothing else (not
--                 the audit log, the subscribers' secrets, the budgets);
--   pacer_worker  reads and writes every table, no DDL: the workers and
--                 the API's operator pool; migrations run as the owner.
--
-- Roles belong to the cluster, so they are made once (several databases,
-- or test schemas migrating at once, share them). A migrating user that
-- may not create roles (CREATEROLE) makes none, and grants nothing: the
-- operator makes them (as below) and runs this again with pacer migrate.
do $$
begin
    begin
        create role pacer_public nologin;
    exception when duplicate_object or unique_violation then null;
    end;
    begin
        create role pacer_worker nologin;
    exception when duplicate_object or unique_violation then null;
    end;
exception when insufficient_privilege then
    raise notice 'pacer: no CREATEROLE: roles pacer_public and pacer_worker not made (docs/deploying.md)';
end
$$;

do $$
declare
    s text := current_schema();
begin
    if not exists (select from pg_roles where rolname = 'pacer_public')
       or not exists (select from pg_roles where rolname = 'pacer_worker') then
        return;
    end if;
    execute format('grant usage on schema %I to pacer_public, pacer_worker', s);

    -- The public reads (internal/api through store.OpenPublicReads): the
    -- board, the trades, an agent's status, prices, rollups, final rounds,
    -- the published completeThrough, and a delivery a pull token unlocks.
    execute format('grant select on %1$I.agents, %1$I.claims, %1$I.agent_trade_totals, %1$I.agent_token_totals,
        %1$I.swaps, %1$I.token_prices, %1$I.rollups, %1$I.rounds, %1$I.round_results, %1$I.round_prices,
        %1$I.round_rewards, %1$I.competition_state, %1$I.deliveries to pacer_public', s);
    execute format('grant select (id, pull_token_hash) on %I.subscribers to pacer_public', s);

    execute format('grant select, insert, update, delete on all tables in schema %I to pacer_worker', s);
    execute format('grant usage, select on all sequences in schema %I to pacer_worker', s);
    -- Tables and sequences later migrations make (as this migrating user).
    execute format('alter default privileges in schema %I grant select, insert, update, delete on tables to pacer_worker', s);
    execute format('alter default privileges in schema %I grant usage, select on sequences to pacer_worker', s);
end
$$;
