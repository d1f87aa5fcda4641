-- pg_stat_activity, every process; $memory adds /proc texts through pg_read_file (remote nodes);
-- $sessions the Sessions pane's columns: the client, how long the query, the transaction and the
-- state have run (the server's clock) and the age of the snapshot the backend holds.
-- lock_query_s: how long the query of a session waiting on a heavyweight lock has run (NULL for
-- every other process, so a calm cluster's answer stays the same text cycle after cycle). An idle
-- session's last query is not sent: hundreds of them were most of the answer, and no pane shows it.
-- $where leaves idle client sessions out unless their memory is read: they are counted instead.
select a.pid, a.backend_type, a.state, a.datname, a.usename, a.application_name,
       a.wait_event_type, a.wait_event, a.backend_start,
       case when a.state is distinct from 'idle' then left(a.query, 1024) end as query,
       case when a.wait_event_type = 'Lock'
            then date_part('epoch', now() - a.query_start) end as lock_query_s$sessions$memory
from pg_stat_activity a$where order by a.pid
