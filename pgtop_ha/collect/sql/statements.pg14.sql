-- pg_stat_statements' counters without their texts ($schema.pg_stat_statements(false) reads no
-- file), top-level statements only, the busiest by total time first. Rates are the difference
-- between two reads (collect/statements.py); the texts of the top few are asked for after.
select s.queryid, s.dbid::bigint as dbid, s.userid::bigint as userid, s.calls,
       s.total_exec_time as total_ms, s.rows, s.shared_blks_hit as blks_hit,
       s.shared_blks_read as blks_read
from $schema.pg_stat_statements(false) s
where s.toplevel and s.queryid is not null
order by s.total_exec_time desc
limit $limit
