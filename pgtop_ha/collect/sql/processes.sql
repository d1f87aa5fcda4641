-- pg_stat_activity, every process, as one array per column: an object per row has the server
-- look up each column's JSON output again for every row. collect/document.py makes the rows.
-- $memory adds /proc texts through pg_read_file (remote nodes); $sessions the Sessions pane's
-- columns: the client, how long the query, the transaction and the state have run (the server's
-- clock) and the age of the snapshot the backend holds.
-- lock_query_s: how long the query of a session waiting on a heavyweight lock has run (NULL for
-- every other process, so a calm cluster's answer stays the same text cycle after cycle). An idle
-- session's last query is not sent: hundreds of them were most of the answer, and no pane shows it.
-- $where leaves idle client sessions out unless their memory is read: they are counted instead.
select json_build_object(
  'pid', json_agg(a.pid), 'backend_type', json_agg(a.backend_type), 'state', json_agg(a.state),
  'datname', json_agg(a.datname), 'usename', json_agg(a.usename),
  'application_name', json_agg(a.application_name),
  'wait_event_type', json_agg(a.wait_event_type), 'wait_event', json_agg(a.wait_event),
  'backend_start', json_agg(a.backend_start),
  'query', json_agg(case when a.state is distinct from 'idle' then left(a.query, 1024) end),
  'lock_query_s', json_agg(case when a.wait_event_type = 'Lock'
                                then date_part('epoch', now() - a.query_start) end)$sessions$memory)
from (select * from pg_stat_activity a$where order by a.pid limit $limit) a
