-- Shared buffers' warmth (only while the Cache pane is on screen; pg_buffercache must be
-- installed in the console's database): buffers in use and dirty, the ten relations of this
-- database holding most of them (relpages needs no lock; mapped catalogs, whose relfilenode is 0,
-- are left out: a per-row pg_relation_filenode() made this 50 times dearer), and autoprewarm.
with b as materialized (select relfilenode, reldatabase, isdirty from pg_buffercache)
select json_build_object(
  'buffers', (select count(*) from b),
  'used', (select count(relfilenode) from b),
  'dirty', (select count(*) filter (where isdirty) from b),
  'top', (select coalesce(json_agg(t), '[]'::json) from (
            select c.oid::regclass::text as relation, count(*) as buffers, c.relpages::bigint as relation_pages
            from b join pg_class c on c.relfilenode = b.relfilenode
            where b.reldatabase in (0, (select oid from pg_database where datname = current_database()))
            group by c.oid, c.relpages order by count(*) desc limit 10) t),
  'autoprewarm', exists (select 1 from pg_stat_activity where backend_type = 'autoprewarm leader'))
