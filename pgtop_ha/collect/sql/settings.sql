-- Non-default settings and those pending a restart (only while the Parameters pane is on screen,
-- and only on the cycles that read pending restarts: after a reload, a reconnect, every minute).
-- $file_setting: the value a pending one would take from the configuration files (superuser).
select s.name, s.setting, s.unit, s.context, s.source, s.pending_restart, $file_setting as file_setting
from pg_settings s
where s.source not in ('default', 'override') or s.pending_restart
order by s.name
