-- The public surface (SPEC §5.6, §10.2): what anyone on the internet can
-- make pacer do, bounded.

-- A hint makes an agent due at most once per interval (PACER_HOT_EVERY),
-- decided in the UPDATE's WHERE so concurrent API processes agree.
alter table agent_ingest add column last_hint_at timestamptz;

-- The credential of GET /api/deliveries/{id}, apart from the signing
-- secret and stored only as its SHA-256 (SPEC §10.2). Subscribers made
-- before it have none and cannot pull until one is issued.
alter table subscribers add column pull_token_hash bytea;

---- create above / drop below ----

alter table subscribers drop column pull_token_hash;
alter table agent_ingest drop column last_hint_at;
