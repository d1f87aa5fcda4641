-- pg_stat_replication's columns, one row per walsender, LSNs as bytes, lags in seconds. The view
-- itself is not read: it lists every backend again, where the statement's one list is joined.
select w.pid, a.application_name, host(a.client_addr) as client_addr, w.state, w.sync_state,
       pg_wal_lsn_diff(w.sent_lsn, '0/0')::bigint as sent_lsn, pg_wal_lsn_diff(w.write_lsn, '0/0')::bigint as write_lsn,
       pg_wal_lsn_diff(w.flush_lsn, '0/0')::bigint as flush_lsn, pg_wal_lsn_diff(w.replay_lsn, '0/0')::bigint as replay_lsn,
       date_part('epoch', w.write_lag) as write_lag_s,
       date_part('epoch', w.flush_lag) as flush_lag_s,
       date_part('epoch', w.replay_lag) as replay_lag_s, w.reply_time
from pg_stat_get_wal_senders() w join pg_stat_activity a on a.pid = w.pid
order by a.application_name, w.pid
