-- PLACEHOLDER on branch pub only: 011 belongs to another branch, and tern
-- needs contiguous numbers. Drop this file at merge.
select 1;

---- create above / drop below ----

select 1;
