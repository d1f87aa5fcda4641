"""Every rule a verdict can carry, as one object each: its id and what it means.

Code names a rule by its constant, so a misspelt rule is an import error; RULES is the list the docs
and the schema give.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Rule:
    """One rule: the id verdicts, `check` and the docs name, and what it means."""

    id: str
    meaning: str


LEADER_NONE = Rule("leader.none", "Patroni lists members but none is the leader")
LEADER_SEVERAL = Rule("leader.several", "more than one member says it is the leader")
CLUSTER_PRIMARIES = Rule("cluster.primaries", "more than one PostgreSQL is out of recovery")
CLUSTER_TIMELINES = Rule("cluster.timelines", "members are on different timelines past the grace period")
PG_DOWN_LEADER_ROUTED = Rule(
    "pg.down-leader-routed", "the leader's PostgreSQL is unreachable while HAProxy routes writes to it"
)
PG_DOWN_LEADER = Rule("pg.down-leader", "the leader's PostgreSQL is unreachable")
PG_DOWN_ROUTED = Rule("pg.down-routed", "a PostgreSQL that HAProxy routes writes to is unreachable")
PG_UNREACHABLE = Rule("pg.unreachable", "a member's PostgreSQL is unreachable")
PG_ROWS_CAPPED = Rule(
    "pg.rows-capped", "a node has more processes, slots or lock processes than are read (the rest counted)"
)
PG_SLOW = Rule("pg.slow", "a member's PostgreSQL answers slowly (its last answer is kept)")
PG_PENDING = Rule("pg.pending", "a member's PostgreSQL has not answered yet")
REST_UNREACHABLE = Rule("rest.unreachable", "a member's Patroni REST API is unreachable")
REST_SLOW = Rule("rest.slow", "a member's Patroni REST API answers slowly")
REST_PENDING = Rule("rest.pending", "a member's Patroni REST API has not answered yet")
PATRONI_UNLISTED = Rule("patroni.unlisted", "a member is not in Patroni's /cluster")
PATRONI_STATE = Rule(
    "patroni.state",
    "a member's Patroni state is not running or streaming (a replica may also be in archive recovery)",
)
PATRONI_PENDING_RESTART = Rule("patroni.pending-restart", "a member needs a restart for a changed parameter")
PATRONI_UNSUPPORTED = Rule("patroni.unsupported", "a member runs a Patroni outside the supported 3.3-4.1")
POSTGRES_UNSUPPORTED = Rule("postgres.unsupported", "a member runs a PostgreSQL outside the supported 14-18")
PATRONI_FAILSAFE = Rule(
    "patroni.failsafe", "a member's Patroni runs in failsafe mode: the DCS is unreachable"
)
PATRONI_VERSIONS = Rule("patroni.versions", "members run different Patroni versions (an upgrade in progress)")
PATRONI_SCHEDULED = Rule("patroni.scheduled", "a switchover or a member's restart is scheduled")
PATRONI_PAUSED = Rule("patroni.paused", "the cluster is in maintenance mode: no automatic failover")
PATRONI_DCS_STALE = Rule(
    "patroni.dcs-stale", "a member's Patroni has not reached the DCS for two loop_wait (the fleet: 60 s)"
)
PATRONI_MEMBER_DOWN = Rule(
    "patroni.member-down", "the fleet: a member seen in the last hour runs no PostgreSQL, or is gone"
)
PATRONI_NOT_STREAMING = Rule(
    "patroni.not-streaming", "the fleet: a running replica that Patroni says is not streaming"
)
PATRONI_SWITCHED = Rule(
    "patroni.switched", "the fleet: the timeline moved in the last hour (sorted up, no problem)"
)
PATRONI_CLOCK_SKEW = Rule(
    "patroni.clock-skew", "a member's Patroni says it reached the DCS in the future: the clocks differ"
)
PATRONI_MALFORMED = Rule(
    "patroni.malformed", "Patroni sent a field of the wrong type (or a negative lag): read as unknown"
)
ROLE_LEADER_IN_RECOVERY = Rule("role.leader-in-recovery", "Patroni's leader is in recovery")
ROLE_PRIMARY_NOT_LEADER = Rule(
    "role.primary-not-leader", "a PostgreSQL out of recovery is not Patroni's leader"
)
ROLE_DISAGREES = Rule(
    "role.disagrees", "Patroni's role and pg_is_in_recovery() disagree past the grace period"
)
ROUTING_WRITER_POOL = Rule(
    "routing.writer-pool", "HAProxy's writer pool routes to no server, or not to the leader"
)
ROUTING_WRITES_TO_NON_LEADER = Rule(
    "routing.writes-to-non-leader", "HAProxy routes writes to a member that is not the leader"
)
ROUTING_NO_WRITER = Rule("routing.no-writer", "HAProxy has no writer server UP")
ROUTING_NO_READER = Rule("routing.no-reader", "a reader pool of HAProxy has no server UP: its reads fail")
ROUTING_READER_DOWN = Rule(
    "routing.reader-down", "a replica is not UP in HAProxy's reader pool: its reads go to the others"
)
HAPROXY_CHECK_UNANSWERED = Rule(
    "haproxy.check-unanswered", "HAProxy's health check of a server gets no answer (L4CON, L7TOUT…)"
)
ROUTING_SEVERAL_WRITERS = Rule("routing.several-writers", "HAProxy has more than one writer server UP")
HAPROXY_STATS = Rule("haproxy.stats", "HAProxy's stats could not be read")
HAPROXY_ROWS_CAPPED = Rule(
    "haproxy.rows-capped", "HAProxy's stats list more servers than are read (the pools' servers come first)"
)
HAPROXY_BACKEND_NO_POOL = Rule(
    "haproxy.backend-no-pool", "a backend of members is neither a writer nor a reader pool"
)
HAPROXY_SERVERS_UNJOINED = Rule("haproxy.servers-unjoined", "HAProxy servers that are no Patroni member")
TLS_EXPIRY = Rule(
    "tls.expiry", "a member's REST or PostgreSQL certificate ends in under 14 days (CRIT under 3)"
)
REPLICATION_UPSTREAM = Rule(
    "replication.upstream", "a cascading standby streams from another member than its replicatefrom"
)
REPLICATION_LAG = Rule("replication.lag", "a replica's lag past lag_bytes")
REPLICATION_STANDBY_LAG = Rule(
    "replication.standby-lag", "a standby's replay lag past lag_bytes or lag_s, as its primary sees it"
)
REPLICATION_NOT_STREAMING = Rule(
    "replication.not-streaming", "a walsender is not streaming (startup, catchup, backup, stopping)"
)
REPLICATION_SILENT = Rule(
    "replication.silent", "a standby has not replied for two status intervals (frozen or cut off)"
)
REPLICATION_RECEIVER = Rule(
    "replication.receiver", "a standby no upstream reports, and its own WAL receiver is not streaming"
)
MEMORY_HUGEPAGES = Rule(
    "memory.hugepages", "huge_pages is on or try, but shared memory is not in HugePages (a silent fallback)"
)
SLOTS_RETAINED = Rule(
    "slots.retained", "a slot retains WAL past slot_retained_bytes, or is lost, unreserved or conflicting"
)
SLOTS_PERMANENT_MISSING = Rule(
    "slots.permanent-missing", "a slot kept across failover (Patroni's, or failover = true) is missing"
)
HORIZON_HELD = Rule(
    "horizon.held", "a session, slot, prepared transaction or standby holds the xmin horizon past its band"
)
WAL_DISK = Rule("wal.disk", "pg_wal on disk past wal_disk_ratio times max_wal_size + wal_keep_size")
ARCHIVER_FAILING = Rule("archiver.failing", "the primary's archive_command fails: its last attempt failed")
ARCHIVER_READY = Rule("archiver.ready", "WAL segments waiting to be archived past archive_ready")
SESSIONS_LONG_TRANSACTION = Rule(
    "sessions.long-transaction", "a client's transaction has been open past xact_s"
)
SESSIONS_IDLE_IN_TRANSACTION = Rule(
    "sessions.idle-in-transaction", "a session has sat idle in transaction past idle_xact_s"
)
LOG_PANIC = Rule("log.panic", "a PANIC in a member's server log in the last 5 minutes")
LOG_FATAL = Rule("log.fatal", "the same FATAL keeps coming in a member's server log (for a minute and more)")
LOCKS_WAITS = Rule("locks.waits", "sessions wait on a lock past lock_wait_s")
POOLER_CONTRADICTION = Rule("pooler.contradiction", "pgBouncer or pgpool-II disagrees with Patroni")
PGBACKREST_NO_STANZA = Rule(
    "pgbackrest.no-stanza", "pgBackRest, asked for, lists no stanza (not the config or stanza in use)"
)
PGBACKREST_READ = Rule(
    "pgbackrest.read", "pgBackRest, asked for, could not be read (what the pane shows is older)"
)
PGBACKREST_STANZA = Rule(
    "pgbackrest.stanza", "a stanza pgBackRest reports in error, or with repository errors"
)
PGBACKREST_BACKUP_ERROR = Rule(
    "pgbackrest.backup-error", "a stanza's newest full, diff or incr backup ended in error"
)
PGBACKREST_FULL_AGE = Rule(
    "pgbackrest.full-age", "a stanza has no full backup, or its newest is over 8 days old"
)
PGBACKREST_QUEUE = Rule(
    "pgbackrest.queue", "the archive-push queue past half of archive-push-queue-max (CRIT past 80 %)"
)
PGBACKREST_SPOOL = Rule("pgbackrest.spool", "the async archive-push spool holds failed pushes")
IDENTITY_DUPLICATE = Rule(
    "identity.duplicate", "/cluster lists one name for several members (the first one is shown)"
)
IDENTITY_HIDDEN = Rule(
    "identity.hidden", "a name arrived with invisible characters, removed before anything used it"
)
IDENTITY_LOOK_ALIKE = Rule(
    "identity.look-alike", "two member names differ only by characters that look alike"
)
FAILOVER_NO_CANDIDATE = Rule(
    "failover.no-candidate", "if the leader died now, Patroni would promote no member (judge/forecast.py)"
)
FAILOVER_DATA_AT_RISK = Rule(
    "failover.data-at-risk", "the member Patroni would promote has not flushed WAL past lag_bytes warn"
)
FAILOVER_WRITES_BLOCKED = Rule(
    "failover.writes-blocked", "synchronous_mode_strict with no synchronous standby: commits wait"
)
PROBE_WRITES = Rule(
    "probe.writes", "writes through a probed endpoint fail, or land on a replica (what applications see)"
)
PROBE_READS = Rule("probe.reads", "a probed read endpoint fails, or its reads land on the primary")
SOURCE_ERROR = Rule("source.error", "a source could not be read or is not configured")

ALL: tuple[Rule, ...] = tuple(v for v in tuple(globals().values()) if isinstance(v, Rule))
RULES: dict[str, str] = {r.id: r.meaning for r in ALL}
