-- pg_stat_activity, every process; $memory adds /proc texts through pg_read_file (remote nodes).
select a.pid, a.backend_type, a.state, a.datname, a.usename, a.application_name,
       a.wait_event_type, a.wait_event, a.backend_start, left(a.query, 1024) as query$memory
from pg_stat_activity a order by a.pid
