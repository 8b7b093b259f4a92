-- Placeholder on the tenero branch only: other branches own migration 014.
-- The lead deletes this file at merge (015_checked_at.sql is renumbered).
select 1;
