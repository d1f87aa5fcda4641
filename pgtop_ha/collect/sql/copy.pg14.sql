-- pg_stat_progress_copy (PostgreSQL 14): running COPYs, e.g. logical initial syncs.
-- pg_class's relpages/reltuples need no lock (pg_relation_size would queue behind DDL locks).
select c.pid, c.datname,
       case when c.datname = current_database() and c.relid <> 0
            then c.relid::regclass::text end as relation,
       c.command, c.type, a.application_name, c.bytes_processed, c.bytes_total,
       c.tuples_processed, c.tuples_excluded,
       case when c.datname = current_database() and c.relid <> 0 then
         (select k.relpages::bigint * current_setting('block_size')::bigint
          from pg_class k where k.oid = c.relid) end as relation_size_bytes,
       case when c.datname = current_database() and c.relid <> 0 then
         (select k.reltuples::float8 from pg_class k where k.oid = c.relid) end as relation_tuples
from pg_stat_progress_copy c left join pg_stat_activity a on a.pid = c.pid
order by c.pid
