-- pg_replication_slots, PostgreSQL 12.
select s.slot_name, s.slot_type, s.plugin, s.database, s.active, s.active_pid, s.temporary,
       pg_wal_lsn_diff(s.restart_lsn, '0/0')::bigint as restart_lsn,
       pg_wal_lsn_diff(s.confirmed_flush_lsn, '0/0')::bigint as confirmed_flush_lsn
from pg_replication_slots s order by s.slot_name
