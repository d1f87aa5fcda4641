-- pg_wal on disk (pg_ls_waldir: superuser or pg_monitor, listed once) and the settings that bound it.
select w.bytes, w.files,
       pg_size_bytes(current_setting('max_wal_size'))::bigint as max_wal_size,
       pg_size_bytes(current_setting('wal_keep_size'))::bigint as wal_keep_size,
       case when current_setting('max_slot_wal_keep_size') <> '-1'
            then pg_size_bytes(current_setting('max_slot_wal_keep_size'))::bigint end as max_slot_wal_keep_size
from (select coalesce(sum(size), 0)::bigint as bytes, count(*)::bigint as files from pg_ls_waldir()) w
