"""One poll of a whole cluster: Patroni's, PostgreSQL's and HAProxy's views side by side.

Unknown values are ``None`` (never absent), so scripts reading ``snapshot --json`` can rely on
every documented name. Where a value cannot be read at all (an old PostgreSQL, a missing grant),
``NodeSnapshot.unavailable`` maps the section or field to a one-line reason.
"""

from __future__ import annotations

import math
import types
from datetime import datetime
from typing import Any, ClassVar

from pydantic import Field, field_validator

from pgtop_ha.models.base import Frozen
from pgtop_ha.models.forecast import FailoverForecast
from pgtop_ha.models.pgbackrest import PgBackRestState
from pgtop_ha.models.poolers import PgBouncerState, PgpoolState
from pgtop_ha.models.probe import WriteOutage
from pgtop_ha.models.serverlog import ServerLog
from pgtop_ha.models.statements import Statements
from pgtop_ha.models.verdict import Verdict

# PostgreSQL's bigint, LSNs, lags and Patroni's timelines all fit a signed 64-bit int: a wider
# int, or a float that is not finite, can only come from a broken or hostile server.
INT_LIMIT = 2**63


def in_range(value: object) -> bool:
    """Whether a number is one a server can really send: a 64-bit int or a finite float."""
    if isinstance(value, bool) or value is None:
        return True
    if isinstance(value, int):
        return -INT_LIMIT < value < INT_LIMIT
    if isinstance(value, float):
        return math.isfinite(value)
    return True


def _number_field(annotation: Any) -> tuple[bool, bool]:
    """(is a number, may be None) for a field's annotation."""
    args = annotation.__args__ if isinstance(annotation, types.UnionType) else (annotation,)
    numbers = [a for a in args if a in (int, float)]
    return bool(numbers), type(None) in args


class Bounded(Frozen):
    """A frozen model whose numbers are range-checked: an optional one out of range is None."""

    _optional_numbers: ClassVar[tuple[str, ...]] = ()
    _required_numbers: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        """Find the number fields once per class, so validation only looks at those."""
        super().__pydantic_init_subclass__(**kwargs)
        optional: list[str] = []
        required: list[str] = []
        for name, info in cls.model_fields.items():
            number, nullable = _number_field(info.annotation)
            if number:
                (optional if nullable else required).append(name)
        cls._optional_numbers = tuple(optional)
        cls._required_numbers = tuple(required)

    def model_post_init(self, context: Any, /) -> None:
        """Unknown (None) rather than absurd; a required number out of range is a ValueError."""
        # Runs for every model of every snapshot: a post-init hook costs a third of a validator.
        super().model_post_init(context)
        values = self.__dict__
        for name in self._required_numbers:
            value = values[name]
            if not (type(value) is int and -INT_LIMIT < value < INT_LIMIT) and not in_range(value):
                raise ValueError(f"{type(self).__name__}.{name} is out of range")
        for name in self._optional_numbers:
            value = values[name]
            if value is None or (type(value) is int and -INT_LIMIT < value < INT_LIMIT):
                continue
            if not in_range(value):
                values[name] = None


class ClusterInfo(Bounded):
    """The cluster as Patroni's /cluster names it."""

    name: str | None = None
    leader: str | None = None
    pause: bool | None = None
    scheduled_switchover: dict[str, Any] | None = None
    # False when no Patroni REST root answered /cluster this cycle: leader and roles are unknown.
    reachable: bool = True
    slow_s: float | None = None  # /cluster poll still running (last answer kept), for so long
    # Names /cluster listed more than once, each with every host:port it gave (the first is shown).
    duplicates: tuple[str, ...] = ()
    malformed: tuple[str, ...] = ()  # /cluster's own fields of the wrong type, named


class Member(Bounded):
    """One Patroni member: /cluster's entry joined with the member's own /patroni answer."""

    _identity: ClassVar[str | None] = "name"
    name: str
    hidden: str | None = None  # the characters cleaning took out of the name ("U+200B"), if any
    role: str | None = None
    state: str | None = None
    timeline: int | None = None
    lag_bytes: int | None = None
    host: str | None = None
    port: int | None = None
    api_url: str | None = None
    reachable: bool = False
    error: str | None = None
    last_ok_at: datetime | None = None
    tags: dict[str, Any] = Field(default_factory=dict)
    pending_restart: bool | None = None
    pending_restart_reason: dict[str, Any] | None = None
    pause: bool | None = None
    own_role: str | None = None
    own_state: str | None = None
    own_timeline: int | None = None
    dcs_last_seen: int | None = None
    patroni_version: str | None = None
    failsafe_active: bool | None = None  # its own /patroni: the leader runs on its members' word (DCS down)
    rest_cert_not_after: datetime | None = None  # its REST API's certificate's end (https only)
    scheduled_restart: dict[str, Any] | None = None  # /cluster's scheduled_restart of this member
    # The own /patroni poll still running within its timeout: the last answer is kept (slow).
    slow_s: float | None = None
    # /cluster was read and does not list it: it left, or only [patroni] urls name its REST.
    unlisted: bool = False
    malformed: tuple[str, ...] = ()  # fields of the wrong type in its /cluster entry or /patroni, named


class HistoryEntry(Bounded):
    """One row of Patroni's /history: a timeline switch."""

    timeline: int
    lsn: int | None = None
    reason: str | None = None
    timestamp: str | None = None
    new_leader: str | None = None


class PatroniConfig(Bounded):
    """The parts of Patroni's dynamic configuration (GET /config) the console needs."""

    ttl: int | None = None
    loop_wait: int | None = None
    retry_timeout: int | None = None
    maximum_lag_on_failover: int | None = None
    synchronous_mode: str | None = None  # "off", "on" or "quorum" as Patroni reads it; None: not read
    synchronous_mode_strict: bool | None = None
    synchronous_node_count: int | None = None
    check_timeline: bool | None = None
    pause: bool | None = None
    permanent_slots: dict[str, dict[str, Any]] = Field(default_factory=dict)
    parameters: dict[str, str] = Field(default_factory=dict)  # postgresql.parameters, as text


class Replication(Bounded):
    """One walsender row of pg_stat_replication, with lag per stage."""

    pid: int | None = None
    application_name: str | None = None
    client_addr: str | None = None
    state: str | None = None
    sync_state: str | None = None
    sent_lsn: int | None = None
    write_lsn: int | None = None
    flush_lsn: int | None = None
    replay_lsn: int | None = None
    sent_lag_bytes: int | None = None
    write_lag_bytes: int | None = None
    flush_lag_bytes: int | None = None
    replay_lag_bytes: int | None = None
    write_lag_s: float | None = None
    flush_lag_s: float | None = None
    replay_lag_s: float | None = None
    reply_time: datetime | None = None  # the standby's last status message (a hung one stops)


class WalReceiver(Bounded):
    """A standby's pg_stat_wal_receiver row."""

    status: str | None = None
    received_tli: int | None = None
    sender_host: str | None = None
    sender_port: int | None = None
    slot_name: str | None = None
    last_msg_receipt_time: datetime | None = None


class Slot(Bounded):
    """One replication slot with its statistics (pg_stat_replication_slots, 14+)."""

    slot_name: str
    slot_type: str | None = None
    plugin: str | None = None
    database: str | None = None
    active: bool | None = None
    active_pid: int | None = None
    temporary: bool | None = None
    restart_lsn: int | None = None
    confirmed_flush_lsn: int | None = None
    retained_bytes: int | None = None
    wal_status: str | None = None
    safe_wal_size: int | None = None
    conflicting: bool | None = None
    invalidation_reason: str | None = None
    failover: bool | None = None
    synced: bool | None = None
    spill_txns: int | None = None
    spill_count: int | None = None
    spill_bytes: int | None = None
    stream_txns: int | None = None
    stream_count: int | None = None
    stream_bytes: int | None = None
    total_txns: int | None = None
    total_bytes: int | None = None
    stats_reset: datetime | None = None


class CopyProgress(Bounded):
    """One pg_stat_progress_copy row (14+), with a size estimate when bytes_total is 0."""

    pid: int
    datname: str | None = None
    relation: str | None = None
    command: str | None = None
    type: str | None = None
    application_name: str | None = None
    bytes_processed: int | None = None
    bytes_total: int | None = None
    estimated_total_bytes: int | None = None
    tuples_processed: int | None = None
    tuples_excluded: int | None = None
    percent: float | None = None
    relation_size_bytes: int | None = None
    relation_tuples: float | None = None


class WalDisk(Bounded):
    """pg_wal on disk, and the settings that bound it."""

    bytes: int | None = None
    files: int | None = None
    max_wal_size: int | None = None
    wal_keep_size: int | None = None
    max_slot_wal_keep_size: int | None = None  # None: unlimited (-1)


class Maintenance(Bounded):
    """One running VACUUM, ANALYZE, CREATE INDEX, CLUSTER or base backup (pg_stat_progress_*)."""

    pid: int
    command: str | None = None  # VACUUM, autovacuum, ANALYZE, CREATE INDEX [CONCURRENTLY], CLUSTER, ...
    phase: str | None = None
    datname: str | None = None
    relation: str | None = None
    application_name: str | None = None
    query: str | None = None
    done: int | None = None  # in ``unit``, for the current phase
    total: int | None = None
    unit: str | None = None  # blocks, tuples or bytes


class HorizonHolder(Bounded):
    """One thing that holds back the xmin horizon: a session, slot, prepared transaction or standby."""

    kind: str  # backend, slot, prepared, standby
    pid: int | None = None
    name: str | None = None  # the slot's name or the prepared transaction's gid
    user: str | None = None
    application_name: str | None = None
    datname: str | None = None
    state: str | None = None
    xact_age: int | None = None  # transactions since its xmin
    age_s: float | None = None  # since its transaction began or was prepared (none for slots)
    query: str | None = None


class OpenTransaction(Bounded):
    """A client's transaction open past collect.pgquery.OPEN_XACT_FLOOR_S, oldest first."""

    pid: int
    usename: str | None = None
    application_name: str | None = None
    datname: str | None = None
    state: str | None = None
    xact_s: float | None = None  # since the transaction began, on the server's clock
    state_s: float | None = None  # since the state last changed (idle in transaction: how long idle)
    holds_xmin: bool | None = None  # it holds back the xmin horizon (a snapshot or an xid)
    query: str | None = None


class Subscription(Bounded):
    """A subscriber's pg_stat_subscription worker with its tables' sync states."""

    subname: str
    pid: int | None = None
    relation: str | None = None
    received_lsn: int | None = None
    latest_end_lsn: int | None = None
    last_msg_receipt_time: datetime | None = None
    table_states: dict[str, int] = Field(default_factory=dict)
    apply_error_count: int | None = None
    sync_error_count: int | None = None


class Archiver(Bounded):
    """pg_stat_archiver plus the archive_status queue."""

    archived_count: int | None = None
    failed_count: int | None = None
    last_archived_wal: str | None = None
    last_archived_time: datetime | None = None
    last_failed_wal: str | None = None
    last_failed_time: datetime | None = None
    ready_count: int | None = None
    current_wal: str | None = None
    segments_behind: int | None = None
    stats_reset: datetime | None = None
    archive_mode: str | None = None


class PendingSetting(Bounded):
    """A setting changed in the configuration that waits for a restart."""

    name: str
    context: str | None = None


class Process(Bounded):
    """One server process: pg_stat_activity joined with its memory from /proc."""

    pid: int
    backend_type: str | None = None
    state: str | None = None
    datname: str | None = None
    usename: str | None = None
    application_name: str | None = None
    wait_event_type: str | None = None
    wait_event: str | None = None
    backend_start: datetime | None = None
    query: str | None = None
    lock_query_s: float | None = None  # waiting on a heavyweight lock: how long its query has run
    # Read only while the Sessions pane is on screen (the "sessions" need): None otherwise.
    client_addr: str | None = None
    query_s: float | None = None  # since the query started, on the server's clock
    xact_s: float | None = None  # since the transaction started; None outside one
    state_s: float | None = None  # since the state last changed
    xmin_age: int | None = None  # transactions since the snapshot the backend holds
    pss_bytes: int | None = None
    uss_bytes: int | None = None
    rss_bytes: int | None = None
    pagetable_bytes: int | None = None
    swap_bytes: int | None = None


class HugePages(Bounded):
    """The host's HugePages (/proc/meminfo) and PostgreSQL's use of them."""

    total: int | None = None
    free: int | None = None
    reserved: int | None = None  # promised to a mapping (shared memory) but not touched yet
    surplus: int | None = None
    size_bytes: int | None = None
    setting: str | None = None  # huge_pages: on, off, try
    status: str | None = None  # huge_pages_status (PostgreSQL 17): on/off/unknown
    shared_memory_pages: int | None = None  # shared_memory_size_in_huge_pages (PostgreSQL 15)


class CachedRelation(Bounded):
    """A relation holding shared buffers: how many, and its size in pages (pg_class.relpages)."""

    relation: str
    buffers: int | None = None
    relation_pages: int | None = None


class CacheState(Bounded):
    """Shared buffers of a node (pg_buffercache): in use, dirty, the hottest relations, autoprewarm."""

    buffers: int | None = None
    used: int | None = None
    dirty: int | None = None
    top: tuple[CachedRelation, ...] = ()
    autoprewarm: bool | None = None


class Setting(Bounded):
    """One non-default (or restart-pending) setting of a node, from pg_settings."""

    name: str
    setting: str | None = None
    unit: str | None = None
    context: str | None = None  # postmaster (restart), sighup (reload), superuser, user, ...
    source: str | None = None
    pending_restart: bool = False
    file_setting: str | None = None  # the value it would take after a restart (superuser only)


class LockProcess(Bounded):
    """A process in a blocking tree: it waits on a heavyweight lock, or blocks one who does."""

    pid: int
    usename: str | None = None
    datname: str | None = None
    application_name: str | None = None
    state: str | None = None
    backend_type: str | None = None
    blocked_by: tuple[int, ...] = ()  # pg_blocking_pids(): empty for a root blocker

    @field_validator("blocked_by")
    @classmethod
    def _real_pids(cls, pids: tuple[int, ...]) -> tuple[int, ...]:
        """Only pids a server can have (a hostile array of huge numbers is dropped, not shown)."""
        return tuple(p for p in pids if 0 < p < INT_LIMIT)

    waiting_mode: str | None = None  # the lock mode it waits for (None: it waits for nothing)
    locktype: str | None = None
    relation: str | None = None
    xact_age_s: float | None = None
    state_age_s: float | None = None
    query: str | None = None


class LockCount(Bounded):
    """Heavyweight locks of one mode on a node, granted and waiting."""

    mode: str
    granted: int | None = None
    waiting: int | None = None


class WaitCount(Bounded):
    """Processes waiting on one wait event in this snapshot (models/waits.py: who counts)."""

    wait_class: str  # pg_stat_activity.wait_event_type, or "CPU" for an active process not waiting
    event: str | None = None
    count: int | None = None


class NodeReadings(Bounded):
    """What a node's one statement reads: the fields the wire document and the snapshot share.

    A value PostgreSQL can tell is declared once, here: collect/document.py validates the
    statement's JSON against it (strictly: JSON types, no coercion) and NodeSnapshot carries it.
    Adding one is this field, its part of the statement (collect/pgquery.py) and the pane.
    """

    in_recovery: bool | None = None
    timeline: int | None = None
    current_lsn: int | None = None
    receive_lsn: int | None = None
    replay_lsn: int | None = None
    replay_timestamp: datetime | None = None
    replay_paused: bool | None = None
    # On a primary: who must confirm a commit ("ANY 1 (node2,node3)", "node2", "*"); "" for none.
    synchronous_standby_names: str | None = None
    replication: tuple[Replication, ...] = ()
    wal_receiver: WalReceiver | None = None
    slots: tuple[Slot, ...] = ()
    slots_total: int | None = None  # slots the server has: more than ``slots`` past the row cap
    processes_total: int | None = None  # pg_stat_activity's rows: more than ``processes`` past the cap
    # Idle client sessions counted, not listed in ``processes`` (None: every process is listed there,
    # as when their memory is read).
    idle_sessions: int | None = None
    copy_progress: tuple[CopyProgress, ...] = ()
    maintenance: tuple[Maintenance, ...] = ()
    horizon: tuple[HorizonHolder, ...] = ()  # oldest first, up to collect.pgquery.MAX_HORIZON
    open_transactions: tuple[OpenTransaction, ...] = ()  # oldest first, up to MAX_OPEN_XACTS
    subscriptions: tuple[Subscription, ...] = ()
    archiver: Archiver | None = None
    pending_restart: tuple[PendingSetting, ...] = ()
    # Optional reads (models/needs.py): None when not read this cycle, the reason in ``unavailable``.
    parameters: tuple[Setting, ...] | None = None  # non-default and pending settings
    cache: CacheState | None = None
    locks: tuple[LockProcess, ...] | None = None
    locks_total: int | None = None  # processes in blocking trees: more than ``locks`` past the cap
    lock_counts: tuple[LockCount, ...] | None = None


class NodeSnapshot(NodeReadings):
    """PostgreSQL's own view of one node."""

    name: str
    statements: Statements | None = None  # top statements (the "statements" need)
    server_log: ServerLog | None = None  # the server's own log: lines new this cycle, the last FATAL
    host: str | None = None
    port: int | None = None
    reachable: bool = False
    error: str | None = None
    last_ok_at: datetime | None = None
    server_version: int | None = None
    wal_segment_size: int | None = None
    wal_disk: WalDisk | None = None  # read every WAL_REFRESH_S (collect/postgres.py), kept between
    cert_not_after: datetime | None = None  # the server certificate's end, from the TLS handshake
    processes: tuple[Process, ...] = ()
    waits: tuple[WaitCount, ...] = ()  # wait events of this snapshot's processes, most first
    memory_source: str | None = None
    hugepages_total: int | None = None
    hugepages_free: int | None = None
    hugepages: HugePages | None = None
    unavailable: dict[str, str] = Field(default_factory=dict)
    postmaster_pid: int | None = None
    is_superuser: bool | None = None
    # The poll still running within its timeout: the last answer is kept (slow), for so long.
    slow_s: float | None = None
    # While unreachable: when the first read that failed was sent (the server failed it from then).
    failing_since: datetime | None = None


class HAProxyServer(Bounded):
    """One server line of HAProxy's stats CSV."""

    _identity: ClassVar[str | None] = "server"
    proxy: str
    server: str
    hidden: str | None = None  # the characters cleaning took out of the name ("U+200B"), if any
    status: str | None = None
    check_status: str | None = None
    check_code: int | None = None
    sessions: int | None = None
    sessions_total: int | None = None
    selected_total: int | None = None  # times the balancer chose it for a new connection (lbtot)
    last_change_s: int | None = None
    weight: int | None = None
    check_rise: int | None = None  # consecutive good checks before HAProxy marks it UP
    check_fall: int | None = None  # consecutive failed checks before HAProxy marks it DOWN
    addr: str | None = None  # "host:port"; HAProxy shows it with `stats show-legends` or level operator
    # The Patroni member this server is, when its own name is not the member's (models/servers.py).
    member: str | None = None


class HAProxyState(Bounded):
    """HAProxy's routing as its stats showed it this cycle."""

    servers: tuple[HAProxyServer, ...] = ()
    not_shown: int | None = None  # servers the answer listed past the row cap (collect/haproxy.py)
    error: str | None = None
    last_ok_at: datetime | None = None
    slow_s: float | None = None  # stats poll still running (last answer kept), for so long


class Probe(Bounded):
    """One client probe through an endpoint: which member answered, how fast, or why not."""

    endpoint: str  # the endpoint's name (probes.endpoints[].name)
    kind: str  # writer | reader | pooler (read probes); write (the operator's INSERT probe)
    target: str | None = None  # host:port connected to
    ok: bool = False  # the latest probe answered
    answered_by: str | None = None  # the member that answered (else the server's address:port)
    in_recovery: bool | None = None  # what the answering server said of itself
    latency_ms: float | None = None  # connect + statement of the latest successful probe
    error: str | None = None  # the latest probe's error (one line)
    errors: int  # consecutive failures in the current run of errors (0 while it answers)
    first_error: str | None = None  # the first error text of the current run
    first_error_at: datetime | None = None
    last_ok_at: datetime | None = None
    new_connection: bool = True  # each probe opens a new connection, as applications do
    slow_s: float | None = None  # a probe still running within its timeout, for so long
    outages: tuple[WriteOutage, ...] = ()  # write probe: completed outages, oldest first


POSTGRES_OFF = "not read: [postgres] enabled = false"  # why no node is, when none is by choice


class ClusterSnapshot(Bounded):
    """Everything one poll cycle learned about the cluster."""

    taken_at: datetime
    cluster: ClusterInfo = Field(default_factory=ClusterInfo)
    members: tuple[Member, ...] = ()
    nodes: tuple[NodeSnapshot, ...] = ()
    # False: PostgreSQL is not read at all ([postgres] enabled = false): no node is, by choice.
    postgres_read: bool = True
    haproxy: HAProxyState = Field(default_factory=HAProxyState)
    # Patroni's /history, newest rows up to a cap, only in a snapshot where it changed; null when
    # it did not (or was not read): the last one given still holds.
    history: tuple[HistoryEntry, ...] | None = None
    history_total: int | None = None  # /history's rows: more than ``history`` past the cap
    patroni_config: PatroniConfig | None = None
    errors: tuple[str, ...] = ()
    probes: tuple[Probe, ...] = ()
    pgbackrest: PgBackRestState | None = None
    pgbouncer: tuple[PgBouncerState, ...] = ()
    pgpool: tuple[PgpoolState, ...] = ()
    # The judge's verdicts, where a command judged the snapshot (`snapshot`, `check`); null when not.
    verdicts: tuple[Verdict, ...] | None = None
    # If the leader died now (judge/forecast.py), where a command judged the snapshot; null when not.
    forecast: FailoverForecast | None = None

    def member(self, name: str) -> Member | None:
        """The Patroni member called ``name``, if any."""
        return next((m for m in self.members if m.name == name), None)

    def node(self, name: str) -> NodeSnapshot | None:
        """PostgreSQL's view of the node called ``name``, if any."""
        return next((n for n in self.nodes if n.name == name), None)
