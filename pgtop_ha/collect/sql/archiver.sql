-- pg_stat_archiver; $ready_count is the .ready queue (pg_ls_archive_statusdir, pg_monitor) or null.
select archived_count, failed_count, last_archived_wal, last_archived_time, last_failed_wal,
       last_failed_time, stats_reset, $ready_count as ready_count,
       current_setting('archive_mode') as archive_mode,
       case when not pg_is_in_recovery() then pg_walfile_name(pg_current_wal_lsn()) end
         as current_wal
from pg_stat_archiver
