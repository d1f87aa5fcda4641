-- pg_stat_replication: one row per walsender, LSNs as bytes, lags in seconds.
select pid, application_name, host(client_addr) as client_addr, state, sync_state,
       pg_wal_lsn_diff(sent_lsn, '0/0')::bigint as sent_lsn, pg_wal_lsn_diff(write_lsn, '0/0')::bigint as write_lsn,
       pg_wal_lsn_diff(flush_lsn, '0/0')::bigint as flush_lsn, pg_wal_lsn_diff(replay_lsn, '0/0')::bigint as replay_lsn,
       extract(epoch from write_lag)::float8 as write_lag_s,
       extract(epoch from flush_lag)::float8 as flush_lag_s,
       extract(epoch from replay_lag)::float8 as replay_lag_s, reply_time
from pg_stat_replication order by application_name, pid
