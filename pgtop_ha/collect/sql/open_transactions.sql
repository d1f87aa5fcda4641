-- Clients' transactions open longer than $floor seconds, oldest first: a long transaction holds its
-- locks (an ALTER TABLE and everything behind it queue) and often the xmin horizon. The floor keeps
-- a calm cluster's answer the same text cycle after cycle.
select a.pid, a.usename, a.application_name, a.datname, a.state,
       date_part('epoch', now() - a.xact_start) as xact_s,
       date_part('epoch', now() - a.state_change) as state_s,
       (a.backend_xmin is not null or a.backend_xid is not null) as holds_xmin,
       left(a.query, 256) as query
from pg_stat_activity a
where a.xact_start < now() - interval '$floor seconds' and a.backend_type = 'client backend'
  and a.pid <> pg_backend_pid()
order by a.xact_start
