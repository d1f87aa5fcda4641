-- Heavyweight locks per mode, granted and waiting (only while the Locks pane is on screen).
select mode, count(*) filter (where granted) as granted, count(*) filter (where not granted) as waiting
from pg_locks group by mode order by mode
