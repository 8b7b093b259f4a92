-- When each token was last checked with Tenero (SPEC §4.8): every answer
-- moves it, a price, an unchanged one or a confirmed "no price", while
-- fetched_at moves only when the row is rewritten (SPEC §4.6). A run cut by
-- its budget picks the tokens whose staleness × weight is largest from it.
alter table token_prices add column checked_at timestamptz;

-- Until a token is checked again, its last write is the best known check.
update token_prices set checked_at = fetched_at;

---- create above / drop below ----

alter table token_prices drop column checked_at;
