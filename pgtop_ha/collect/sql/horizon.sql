-- What holds back the xmin horizon (vacuum's cleanup, datfrozenxid), oldest first: sessions,
-- slots, prepared transactions and standbys' hot_standby_feedback. Walsenders show up as standbys.
-- A session holds it by its snapshot (backend_xmin) or by its own xid (idle in transaction).
select * from (
  select 'backend' as kind, a.pid, null::text as name, a.usename as "user", a.application_name,
         a.datname, a.state, greatest(age(a.backend_xmin), age(a.backend_xid))::bigint as xact_age,
         date_part('epoch', clock_timestamp() - coalesce(a.xact_start, a.query_start, a.backend_start)) as age_s,
         left(a.query, 256) as query
  from pg_stat_activity a
  where (a.backend_xmin is not null or a.backend_xid is not null) and a.pid <> pg_backend_pid() and a.backend_type <> 'walsender'
  union all
  select 'slot', s.active_pid, s.slot_name, null, null, s.database, null,
         greatest(age(s.xmin), age(s.catalog_xmin))::bigint, null, null
  from pg_replication_slots s where s.xmin is not null or s.catalog_xmin is not null
  union all
  select 'prepared', null, p.gid, p.owner, null, p.database, null, age(p.transaction)::bigint,
         date_part('epoch', now() - p.prepared), null
  from pg_prepared_xacts p
  union all
  select 'standby', w.pid, null, a.usename, a.application_name, null, w.state,
         age(a.backend_xmin)::bigint, null, null
  from pg_stat_get_wal_senders() w join pg_stat_activity a on a.pid = w.pid
  where a.backend_xmin is not null
) h order by xact_age desc nulls last
