-- pg_stat_subscription with each subscription's table sync states, PostgreSQL 12.
select s.subname, s.pid,
       case when s.relid is not null then s.relid::regclass::text end as relation,
       pg_wal_lsn_diff(s.received_lsn, '0/0')::bigint as received_lsn, pg_wal_lsn_diff(s.latest_end_lsn, '0/0')::bigint as latest_end_lsn,
       s.last_msg_receipt_time,
       coalesce((select json_object_agg(x.st, x.n) from
                  (select r.srsubstate::text as st, count(*) as n from pg_subscription_rel r
                   where r.srsubid = s.subid group by r.srsubstate) x), '{}'::json)
         as table_states
from pg_stat_subscription s order by s.subname, s.pid
