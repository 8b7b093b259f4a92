-- The public surface (SPEC §5.6, §10.2): what anyone on the internet can
-- make pacer do, bounded.

-- A hint makes an agent due at most once per interval (PACER_HOT_EVERY),
-- decided in the UPDATE's WHERE so concurrent API processes agree.
alter table agent_ingest add column last_hint_at timestamptz;

---- create above / drop below ----

alter table agent_ingest drop column last_hint_at;
