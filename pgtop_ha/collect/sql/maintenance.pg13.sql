-- Running maintenance from pg_stat_progress_* (PostgreSQL 13 and later): VACUUM (autovacuum
-- included), ANALYZE, CREATE INDEX, CLUSTER / VACUUM FULL and base backups. done/total are
-- in the unit the current phase counts (heap blocks, index tuples, bytes).
select * from (
  select p.pid, case when a.backend_type = 'autovacuum worker' then 'autovacuum' else 'VACUUM' end as command,
         p.phase, p.datname,
         case when p.datname = current_database() then p.relid::regclass::text end as relation,
         a.application_name, left(a.query, 160) as query,
         p.heap_blks_scanned::bigint as done, p.heap_blks_total::bigint as total, 'blocks' as unit
  from pg_stat_progress_vacuum p left join pg_stat_activity a on a.pid = p.pid
  union all
  select p.pid, 'ANALYZE', p.phase, p.datname,
         case when p.datname = current_database() then p.relid::regclass::text end,
         a.application_name, left(a.query, 160),
         p.sample_blks_scanned::bigint, p.sample_blks_total::bigint, 'blocks'
  from pg_stat_progress_analyze p left join pg_stat_activity a on a.pid = p.pid
  union all
  select p.pid, p.command, p.phase, p.datname,
         case when p.datname = current_database() then p.relid::regclass::text end,
         a.application_name, left(a.query, 160),
         case when p.blocks_total > 0 then p.blocks_done else p.tuples_done end::bigint,
         case when p.blocks_total > 0 then p.blocks_total else p.tuples_total end::bigint,
         case when p.blocks_total > 0 then 'blocks' else 'tuples' end
  from pg_stat_progress_create_index p left join pg_stat_activity a on a.pid = p.pid
  union all
  select p.pid, p.command, p.phase, p.datname,
         case when p.datname = current_database() then p.relid::regclass::text end,
         a.application_name, left(a.query, 160),
         p.heap_blks_scanned::bigint, p.heap_blks_total::bigint, 'blocks'
  from pg_stat_progress_cluster p left join pg_stat_activity a on a.pid = p.pid
  union all
  select p.pid, 'BASE BACKUP', p.phase, null, null, a.application_name, null,
         p.backup_streamed::bigint, p.backup_total::bigint, 'bytes'
  from pg_stat_progress_basebackup p left join pg_stat_activity a on a.pid = p.pid
) m order by pid
