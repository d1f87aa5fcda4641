-- pg_replication_slots with its statistics, PostgreSQL 16: conflicting.
-- The statistics by each logical slot's name: pg_stat_replication_slots would list every slot
-- again and join pg_database again to find the logical ones.
select s.slot_name, s.slot_type, s.plugin, s.database, s.active, s.active_pid, s.temporary,
       pg_wal_lsn_diff(s.restart_lsn, '0/0')::bigint as restart_lsn,
       pg_wal_lsn_diff(s.confirmed_flush_lsn, '0/0')::bigint as confirmed_flush_lsn,
       s.wal_status, s.safe_wal_size, s.conflicting,
       st.spill_txns, st.spill_count, st.spill_bytes, st.stream_txns, st.stream_count,
       st.stream_bytes, st.total_txns, st.total_bytes, st.stats_reset
from pg_replication_slots s
left join lateral pg_stat_get_replication_slot(s.slot_name) st on s.slot_type = 'logical'
order by s.slot_name
