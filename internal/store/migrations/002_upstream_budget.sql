-- One row per upstream and minute: the requests every pacer process has
-- spent there, so that all workers share one budget per upstream.
create table upstream_budget (
    upstream     text not null,
    window_start timestamptz not null,
    used         int not null,
    primary key (upstream, window_start)
);

---- create above / drop below ----

drop table upstream_budget;
