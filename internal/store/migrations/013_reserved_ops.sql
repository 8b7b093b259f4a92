-- Placeholder on branch ops only: tern needs contiguous numbers, and this
-- branch was given 014 while other branches add 011-013. Delete at merge.
select 1;

---- create above / drop below ----

select 1;
