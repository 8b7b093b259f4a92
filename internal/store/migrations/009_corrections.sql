-- Corrections (SPEC §10.3 with §11's rollbacks): a period whose rollups
-- changed after a delivery was made for it gets a new delivery, under a
-- new id, that replaces the last one. 007's one-delivery-per-period key
-- becomes one *original* per period, and a delivery is replaced at most
-- once, so each (subscriber, event, period) has a single chain of
-- deliveries: the original, then its corrections in order.

-- The delivery this one corrects (null for an original). Not a foreign
-- key: a replaced delivery may be pruned before its correction is.
alter table deliveries add column replaces text;

alter table deliveries drop constraint deliveries_subscriber_id_event_period_start_key;
create unique index deliveries_original_idx on deliveries (subscriber_id, event, period_start) where replaces is null;
create unique index deliveries_replaces_idx on deliveries (replaces) where replaces is not null;

---- create above / drop below ----

delete from deliveries where replaces is not null;
drop index deliveries_replaces_idx;
drop index deliveries_original_idx;
alter table deliveries add constraint deliveries_subscriber_id_event_period_start_key unique (subscriber_id, event, period_start);
alter table deliveries drop column replaces;
