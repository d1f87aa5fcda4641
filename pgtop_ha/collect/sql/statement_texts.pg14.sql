-- The texts of the few statements shown, with their database and role names.
select s.queryid, s.dbid::bigint as dbid, s.userid::bigint as userid, d.datname, r.rolname,
       left(s.query, 512) as query
from $schema.pg_stat_statements(true) s
left join pg_database d on d.oid = s.dbid
left join pg_roles r on r.oid = s.userid
where s.toplevel and s.queryid = any($$1::bigint[])
