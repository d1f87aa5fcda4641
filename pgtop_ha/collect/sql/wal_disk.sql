-- pg_wal on disk (pg_ls_waldir: superuser or pg_monitor) and the settings that bound it.
select (select coalesce(sum(size), 0) from pg_ls_waldir())::bigint as bytes,
       (select count(*) from pg_ls_waldir())::bigint as files,
       pg_size_bytes(current_setting('max_wal_size'))::bigint as max_wal_size,
       pg_size_bytes(current_setting('wal_keep_size'))::bigint as wal_keep_size,
       case when current_setting('max_slot_wal_keep_size') <> '-1'
            then pg_size_bytes(current_setting('max_slot_wal_keep_size'))::bigint end as max_slot_wal_keep_size
