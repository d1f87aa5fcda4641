-- Blocking trees (only while the Locks pane is on screen): every backend waiting on a heavyweight
-- lock, whom it waits for (pg_blocking_pids, asked only for those waiting), the lock it wants,
-- and every blocker's own row. Bounded by the statement (pgquery.MAX_LOCKS), with the count beside.
with waiting as (
  select a.pid, pg_blocking_pids(a.pid) as blocked_by
  from pg_stat_activity a where a.wait_event_type = 'Lock'
), involved as (
  select pid from waiting union select unnest(blocked_by) from waiting
)
select a.pid, a.usename, a.datname, a.application_name, a.state, a.backend_type,
       coalesce(w.blocked_by, '{}'::int[]) as blocked_by,
       l.mode as waiting_mode, l.locktype,
       case when l.relation is not null and a.datname = current_database()
            then l.relation::regclass::text
            when l.relation is not null then 'oid ' || l.relation end as relation,
       date_part('epoch', clock_timestamp() - coalesce(a.xact_start, a.query_start)) as xact_age_s,
       date_part('epoch', clock_timestamp() - a.state_change) as state_age_s,
       left(a.query, 200) as query
from involved i join pg_stat_activity a on a.pid = i.pid
left join waiting w on w.pid = a.pid
left join lateral (select mode, locktype, relation from pg_locks k
                   where k.pid = a.pid and not k.granted limit 1) l on true
order by a.pid
