-- Settings changed in the configuration that need a restart to apply.
select name, context from pg_settings where pending_restart order by name
