"""The cluster's current problems, worst first: every source's facts and their contradictions."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from math import isfinite

from pgtop_ha.judge.backup import backup_marks, no_stanza_marks
from pgtop_ha.judge.certs import cert_days_left, cert_level, member_certs
from pgtop_ha.judge.forecast import forecast, forecast_marks
from pgtop_ha.judge.memory import hugepages_marks
from pgtop_ha.judge.poolers import PatroniView, bouncer_findings, pgpool_findings
from pgtop_ha.judge.probes import probe_mark
from pgtop_ha.judge.replication import (
    lag_level,
    one_per_rule,
    receiver_findings,
    standby_name,
    unreported,
    walsender_findings,
)
from pgtop_ha.judge.routing import pool_mark, server_mark
from pgtop_ha.judge.rules import (
    HAPROXY_BACKEND_NO_POOL,
    HAPROXY_CHECK_UNANSWERED,
    HAPROXY_ROWS_CAPPED,
    HAPROXY_SERVERS_UNJOINED,
    HAPROXY_STATS,
    HORIZON_HELD,
    IDENTITY_DUPLICATE,
    IDENTITY_HIDDEN,
    IDENTITY_LOOK_ALIKE,
    LEADER_NONE,
    LEADER_SEVERAL,
    LOCKS_WAITS,
    PATRONI_FAILSAFE,
    PATRONI_MALFORMED,
    PATRONI_PAUSED,
    PATRONI_PENDING_RESTART,
    PATRONI_SCHEDULED,
    PATRONI_STATE,
    PATRONI_UNLISTED,
    PATRONI_UNSUPPORTED,
    PATRONI_VERSIONS,
    PG_DOWN_LEADER,
    PG_DOWN_LEADER_ROUTED,
    PG_DOWN_ROUTED,
    PG_PENDING,
    PG_ROWS_CAPPED,
    PG_SLOW,
    PG_UNREACHABLE,
    PGBACKREST_QUEUE,
    PGBACKREST_READ,
    POSTGRES_UNSUPPORTED,
    REPLICATION_LAG,
    REPLICATION_UPSTREAM,
    REST_PENDING,
    REST_SLOW,
    REST_UNREACHABLE,
    ROLE_LEADER_IN_RECOVERY,
    ROLE_PRIMARY_NOT_LEADER,
    ROUTING_NO_READER,
    ROUTING_NO_WRITER,
    ROUTING_READER_DOWN,
    ROUTING_SEVERAL_WRITERS,
    ROUTING_WRITES_TO_NON_LEADER,
    SLOTS_PERMANENT_MISSING,
    SLOTS_RETAINED,
    SOURCE_ERROR,
    TLS_EXPIRY,
    WAL_DISK,
)
from pgtop_ha.judge.serverlog import log_findings
from pgtop_ha.judge.sessions import session_findings
from pgtop_ha.judge.slots import absent_slot_level, missing_permanent_slots, slot_level, top_retainer
from pgtop_ha.judge.support import patroni_unsupported, postgres_unsupported
from pgtop_ha.judge.wal import archiver_marks, horizon_holder, horizon_level, wal_disk_level
from pgtop_ha.models.derive import listed_processes, member_names
from pgtop_ha.models.forecast import FailoverForecast
from pgtop_ha.models.haproxy import Pools, is_up, routes
from pgtop_ha.models.leader import is_leader, pg_primary
from pgtop_ha.models.numbers import binary_size
from pgtop_ha.models.roles import is_standby_leader
from pgtop_ha.models.servers import UNJOINED_FIX, known_names, member_of, unjoined, upstream_of
from pgtop_ha.models.snapshot import ClusterSnapshot, NodeSnapshot
from pgtop_ha.models.sources import member_state, node_state
from pgtop_ha.models.text import skeleton
from pgtop_ha.models.thresholds import Level, Thresholds
from pgtop_ha.models.verdict import Mark, Verdict

ARCHIVE_RECOVERY = "in archive recovery"  # Patroni's state of a member restoring WAL from the archive


def problem(
    level: Level, node: str | None, text: str, short: str = "", *, key: str = "", rule: str
) -> Verdict:
    """One thing wrong right now, as a verdict on ``node`` (None: the cluster)."""
    return Verdict(rule=rule, level=level, subject=node, text=text, short=short, key=key)


def member_problems(
    snapshot: ClusterSnapshot, name: str, t: Thresholds, pools: Pools, now: datetime
) -> list[Verdict]:
    """What is wrong with one member, worst first; contradictions between sources included."""
    m = snapshot.member(name)
    n = snapshot.node(name)
    writers = routes(snapshot, pools, "writer")
    w = writers.get(name)
    routed = w is not None and is_up(w)
    leader = is_leader(m)
    out: list[Verdict] = []
    # Only an expired timeout or a failed connection is "down": a slow answer is not.
    pg = node_state(n) if n is not None else None
    pg_down = pg == "unreachable"
    if pg_down and leader and routed:
        out.append(
            problem(
                Level.CRIT,
                name,
                "PG DOWN, still routed (Patroni leader, HAProxy writer UP)",
                "PG DOWN, still routed",
                rule=PG_DOWN_LEADER_ROUTED.id,
            )
        )
    elif pg_down and leader:
        out.append(
            problem(
                Level.CRIT, name, "PG DOWN on the Patroni leader", "PG DOWN on leader", rule=PG_DOWN_LEADER.id
            )
        )
    elif pg_down and routed:
        out.append(
            problem(
                Level.CRIT,
                name,
                "PG DOWN, HAProxy still routes writes here",
                "PG DOWN, routed",
                rule=PG_DOWN_ROUTED.id,
            )
        )
    elif pg_down:
        out.append(
            problem(Level.CRIT, name, "PostgreSQL unreachable", "PG unreachable", rule=PG_UNREACHABLE.id)
        )
    elif pg == "slow":
        out.append(
            problem(Level.WARN, name, "PostgreSQL slow (last answer kept)", "PG slow", rule=PG_SLOW.id)
        )
    elif pg == "pending":
        out.append(
            problem(Level.WARN, name, "PostgreSQL: no answer yet", "PG no answer yet", rule=PG_PENDING.id)
        )
    rest = member_state(m) if m is not None else None
    if m is not None and m.unlisted:
        # No failover candidate while Patroni does not list it, whatever else it answers: one
        # line, with its REST API's state when that is down too (its Patroni stopped).
        text = "not in Patroni's /cluster" + (", REST unreachable" if rest == "unreachable" else "")
        out.append(
            problem(Level.CRIT, name, text, "not in /cluster", key="unlisted", rule=PATRONI_UNLISTED.id)
        )
        if rest == "unreachable":
            rest = None
    if rest == "unreachable":
        # No age in the text: a problem keeps its row (and its key) while it lasts.
        out.append(
            problem(
                Level.CRIT, name, "Patroni REST unreachable", "REST unreachable", rule=REST_UNREACHABLE.id
            )
        )
    elif rest == "slow":
        out.append(
            problem(Level.WARN, name, "Patroni REST slow (last answer kept)", "REST slow", rule=REST_SLOW.id)
        )
    elif rest == "pending":
        out.append(
            problem(
                Level.WARN, name, "Patroni REST: no answer yet", "REST no answer yet", rule=REST_PENDING.id
            )
        )
    primary = pg_primary(n)
    if leader and primary is False and (m is None or not is_standby_leader(m.role)):
        out.append(
            problem(
                Level.CRIT,
                name,
                "Patroni leader but PG in recovery",
                "leader in recovery",
                rule=ROLE_LEADER_IN_RECOVERY.id,
            )
        )
    if m is not None and not leader and primary is True:
        said = m.role or "?"
        out.append(
            problem(
                Level.CRIT,
                name,
                f"PG primary but Patroni says {said}",
                "PG primary, not leader",
                key="pg primary",
                rule=ROLE_PRIMARY_NOT_LEADER.id,
            )
        )
    if routed and m is not None and not leader:
        out.append(
            problem(
                Level.CRIT,
                name,
                "HAProxy routes writes to a non-leader",
                "writes to non-leader",
                rule=ROUTING_WRITES_TO_NON_LEADER.id,
            )
        )
    # A replica restoring WAL from the archive is as healthy as one streaming (check_patroni counts
    # both); a standby leader doing so follows no primary, and says so.
    settled = ("running", "streaming") if leader else ("running", "streaming", ARCHIVE_RECOVERY)
    if m is not None and m.state and m.state not in settled:
        level = Level.CRIT if m.state in ("crashed", "stopped", "start failed") else Level.WARN
        out.append(
            problem(level, name, f"Patroni state {m.state}", key="patroni state", rule=PATRONI_STATE.id)
        )
    if m is not None and not leader:
        lv = lag_level(t, m.lag_bytes)
        if lv > Level.OK:
            out.append(
                problem(
                    lv,
                    name,
                    f"replica lag {binary_size(m.lag_bytes)}",
                    key="replica lag",
                    rule=REPLICATION_LAG.id,
                )
            )
    if m is not None and m.pending_restart:
        out.append(problem(Level.WARN, name, "pending restart", rule=PATRONI_PENDING_RESTART.id))
    for which, end in member_certs(snapshot, name):
        days = cert_days_left(end, now)
        if (lv := cert_level(days)) > Level.OK and days is not None:
            when = "expired" if days < 0 else f"expires in {days:.0f} days"
            text = f"{which} certificate {when} ({end:%Y-%m-%d})"
            out.append(
                problem(lv, name, text, f"{which} cert {when}", key=f"cert {which}", rule=TLS_EXPIRY.id)
            )
    if (why := upstream_mismatch(snapshot, name)) is not None:
        out.append(problem(Level.WARN, name, why, "not its replicatefrom", rule=REPLICATION_UPSTREAM.id))
    out.extend(_server_problems(snapshot, name, pools))
    if n is not None and (why := postgres_unsupported(n.server_version)):
        out.append(problem(Level.WARN, name, why, "PG version unsupported", rule=POSTGRES_UNSUPPORTED.id))
    if m is not None and (why := patroni_unsupported(m.patroni_version)):
        out.append(problem(Level.WARN, name, why, "Patroni version unsupported", rule=PATRONI_UNSUPPORTED.id))
    return out


# The server grades (judge.routing) that no other problem of the member already says.
_SERVER_ONLY = frozenset({ROUTING_READER_DOWN.id, HAPROXY_CHECK_UNANSWERED.id})


def _server_problems(snapshot: ClusterSnapshot, name: str, pools: Pools) -> Iterable[Verdict]:
    for srv in snapshot.haproxy.servers:
        if (
            member_of(srv) == name
            and (mark := server_mark(snapshot, pools.kind(srv.proxy), srv)).rule in _SERVER_ONLY
        ):
            text = f"{mark.text} ({srv.proxy})"
            yield problem(mark.level, name, text, mark.text, key=f"{mark.rule} {srv.proxy}", rule=mark.rule)


def upstream_mismatch(snapshot: ClusterSnapshot, name: str) -> str | None:
    """A cascading standby streaming from another member than its replicatefrom tag names."""
    m = snapshot.member(name)
    want = m.tags.get("replicatefrom") if m is not None else None
    got = upstream_of(snapshot, name)
    if not isinstance(want, str) or got is None or got == want:
        return None
    return f"streams from {got}, not from {want} (its replicatefrom)"


def cluster_problems(
    snapshot: ClusterSnapshot,
    t: Thresholds,
    pools: Pools,
    now: datetime,
    members: Mapping[str, Sequence[Verdict]] | None = None,
    told: FailoverForecast | None = None,
) -> list[Verdict]:
    """Every current problem of the cluster, worst first; ``members``, ``told``: already judged."""
    names = member_names(snapshot)
    out: list[Verdict] = []
    leaders = [m.name for m in snapshot.members if is_leader(m)]
    if snapshot.members and not leaders:
        out.append(problem(Level.CRIT, None, "no leader: Patroni has no primary", rule=LEADER_NONE.id))
    if len(leaders) > 1:
        out.append(
            problem(
                Level.CRIT,
                None,
                "several leaders: " + ", ".join(leaders),
                key="several leaders",
                rule=LEADER_SEVERAL.id,
            )
        )
    up_writers = [s for s, srv in routes(snapshot, pools, "writer").items() if is_up(srv)]
    for proxy in sorted({s.proxy for s in snapshot.haproxy.servers if pools.kind(s.proxy) == "reader"}):
        servers = [s for s in snapshot.haproxy.servers if s.proxy == proxy]
        if (pool := pool_mark("reader", servers, ())).rule == ROUTING_NO_READER.id:
            text = f"{pool.text} in {proxy}"
            out.append(problem(pool.level, None, text, key=f"no reader {proxy}", rule=pool.rule))
    if snapshot.haproxy.servers and not up_writers:
        out.append(problem(Level.CRIT, None, "HAProxy has no writer UP", rule=ROUTING_NO_WRITER.id))
    if len(up_writers) > 1:
        out.append(
            problem(
                Level.CRIT,
                None,
                "HAProxy writer UP on " + ", ".join(up_writers),
                key="writers",
                rule=ROUTING_SEVERAL_WRITERS.id,
            )
        )
    if snapshot.haproxy.not_shown:
        text = f"HAProxy: {snapshot.haproxy.not_shown} more servers not shown (past the row cap; pools first)"
        out.append(
            problem(
                Level.WARN, None, text, "HAProxy rows capped", key="haproxy rows", rule=HAPROXY_ROWS_CAPPED.id
            )
        )
    if snapshot.haproxy.error:
        out.append(
            problem(
                Level.WARN,
                None,
                f"HAProxy stats: {snapshot.haproxy.error}",
                key="haproxy stats",
                rule=HAPROXY_STATS.id,
            )
        )
    out.extend(_routing_unread(snapshot, pools))
    out.extend(identity_problems(snapshot))
    if snapshot.cluster.pause:
        out.append(problem(Level.WARN, None, "cluster in maintenance mode (paused)", rule=PATRONI_PAUSED.id))
    out.extend(_patroni_notes(snapshot))
    for name in names:
        known = members.get(name) if members is not None else None
        out.extend(known if known is not None else member_problems(snapshot, name, t, pools, now))
        out.extend(_node_problems(snapshot.node(name), t, snapshot.taken_at))  # as of the reading
        missing = missing_permanent_slots(snapshot, name)
        if missing:
            out.append(
                problem(
                    absent_slot_level(is_leader(snapshot.member(name))),
                    name,
                    "permanent slot missing: " + ", ".join(missing),
                    key="slots missing",
                    rule=SLOTS_PERMANENT_MISSING.id,
                )
            )
    for node in unreported(snapshot):
        found = receiver_findings(node)
        out.extend(problem(f.level, node.name, f.text, key=f.rule, rule=f.rule) for f in found)
    out.extend(problem(f.level, None, f.text, rule=f.rule) for f in pooler_findings(snapshot))
    out.extend(problem(Level.WARN, None, e, rule=SOURCE_ERROR.id) for e in snapshot.errors)
    for probe in snapshot.probes:
        if (mark := probe_mark(snapshot, probe)) is not None:
            key = f"{mark.rule} {probe.endpoint} {probe.kind}"
            out.append(problem(mark.level, None, mark.text, key=key, rule=mark.rule))
    out.extend(malformed_problems(snapshot))
    out.extend(problem(m.level, None, m.text, key=m.rule, rule=m.rule) for m in no_stanza_marks(snapshot))
    if snapshot.members:
        found = forecast_marks(snapshot, told if told is not None else forecast(snapshot), t)
        out.extend(problem(m.level, None, m.text, key=m.rule, rule=m.rule) for m in found)
    said: set[tuple[str, str]] = set()  # the queue and a failed read are the same for every stanza
    for stanza, marks in backup_marks(snapshot).items():
        for m in marks:
            key = m.part if m.rule in (PGBACKREST_QUEUE.id, PGBACKREST_READ.id) else f"{stanza} {m.part}"
            if (m.rule, key) not in said:
                said.add((m.rule, key))
                out.append(problem(m.level, None, m.text, key=f"{m.rule} {key}", rule=m.rule))
    return sorted(out, key=lambda p: -p.level)


def malformed_problems(snapshot: ClusterSnapshot) -> list[Verdict]:
    """Fields Patroni sent with the wrong type: each answer's named once, and read as unknown."""
    found = [(None, snapshot.cluster.malformed), *((m.name, m.malformed) for m in snapshot.members)]
    return [
        problem(Level.WARN, node, "; ".join(notes), "fields of the wrong type", key="malformed",
                rule=PATRONI_MALFORMED.id)
        for node, notes in found
        if notes
    ]  # fmt: skip


def identity_problems(snapshot: ClusterSnapshot) -> list[Verdict]:
    """Names that can pass for another: listed twice, sent with hidden characters, or look-alikes."""
    out = [
        problem(Level.CRIT, None, f"/cluster lists one name for several members: {d}", "duplicate member",
                key=f"duplicate {d}", rule=IDENTITY_DUPLICATE.id)
        for d in snapshot.cluster.duplicates
    ]  # fmt: skip
    for m in snapshot.members:
        if m.hidden is not None:
            text = f"member name held hidden characters ({m.hidden}), removed"
            out.append(problem(Level.WARN, m.name, text, "hidden characters", rule=IDENTITY_HIDDEN.id))
    for s in snapshot.haproxy.servers:
        if s.hidden is not None:
            text = f"HAProxy server {s.proxy}/{s.server} held hidden characters ({s.hidden}), removed"
            out.append(problem(Level.WARN, None, text, "hidden characters", rule=IDENTITY_HIDDEN.id))
    skeletons: dict[str, list[str]] = {}
    for name in member_names(snapshot):
        skeletons.setdefault(skeleton(name), []).append(name)
    for names in skeletons.values():
        if len(names) > 1:
            text = "member names look alike: " + ", ".join(ascii(n) for n in names)
            out.append(problem(Level.WARN, None, text, "look-alike names", rule=IDENTITY_LOOK_ALIKE.id))
    return out


def _routing_unread(snapshot: ClusterSnapshot, pools: Pools) -> list[Verdict]:
    """HAProxy answered, but its routing cannot be read against Patroni's roles: what to set."""
    # Only once Patroni has named its members: before that every server would be "unknown".
    servers = snapshot.haproxy.servers
    if not servers or not snapshot.members or not snapshot.cluster.reachable:
        return []
    known = known_names(snapshot)
    pooled = [s for s in servers if pools.kind(s.proxy) is not None]
    # A backend of members that is no pool (Patroni's example calls its one pool by the scope,
    # `listen batman`), or every backend when none is a pool: the Route column would stay empty.
    loose = sorted(
        {s.proxy for s in servers if pools.kind(s.proxy) is None and (member_of(s) in known or not pooled)}
    )
    out: list[Verdict] = []
    if loose:
        out.append(
            problem(
                Level.WARN,
                None,
                f"HAProxy backend {_some(loose)} is no writer or reader pool, routing not judged; "
                "add it to [haproxy] writer_backends or reader_backends"
                if len(loose) == 1
                else f"HAProxy backends {_some(loose)} are no writer or reader pools, routing not "
                "judged; add them to [haproxy] writer_backends or reader_backends",
                "HAProxy backend no pool",
                key="haproxy pools",
                rule=HAPROXY_BACKEND_NO_POOL.id,
            )
        )
    strangers = unjoined(pooled, known)
    if strangers:
        servers_are = "1 server is" if len(strangers) == 1 else f"{len(strangers)} servers are"
        out.append(
            problem(
                Level.WARN,
                None,
                f"HAProxy: {servers_are} no Patroni member, routing not joined to roles; "
                f"{UNJOINED_FIX}: {_some(strangers)}",
                "HAProxy servers unjoined",
                key="haproxy unjoined",
                rule=HAPROXY_SERVERS_UNJOINED.id,
            )
        )
    return out


def _some(names: list[str], shown: int = 3) -> str:
    more = f" (+{len(names) - shown})" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


def patroni_view(snapshot: ClusterSnapshot) -> PatroniView:
    """The leader, members and streaming replicas the poolers are checked against."""
    leaders = [m.name for m in snapshot.members if is_leader(m)]
    leader = leaders[0] if len(leaders) == 1 else None
    return PatroniView(
        leader=leader,
        members=frozenset(m.name for m in snapshot.members),
        streaming=frozenset(
            m.name
            for m in snapshot.members
            if m.name != leader and (m.state or "") in ("streaming", "running")
        ),
    )


def pooler_findings(snapshot: ClusterSnapshot) -> list[Mark]:
    """pgBouncer's and pgpool-II's contradictions with Patroni, each text led by its pooler's name."""
    if not (snapshot.pgbouncer or snapshot.pgpool):
        return []
    patroni = patroni_view(snapshot)
    found = [(b.name, m) for b in snapshot.pgbouncer for m in bouncer_findings(b, patroni)]
    found += [(p.name, m) for p in snapshot.pgpool for m in pgpool_findings(p, patroni)]
    return [replace(m, text=f"{name}: {m.text}") for name, m in found]


# What stays on the banner while it lasts: a state the operator chose or must not forget.
BANNER_RULES = frozenset({PATRONI_PAUSED.id, PATRONI_SCHEDULED.id, PATRONI_FAILSAFE.id})


def banner_notes(snapshot: ClusterSnapshot) -> tuple[str, ...]:
    """Maintenance mode, a scheduled switchover or restart, failsafe mode: the banner's lines."""
    notes = [p for p in _patroni_notes(snapshot) if p.rule in BANNER_RULES]
    paused = ("cluster in maintenance mode (paused)",) if snapshot.cluster.pause else ()
    return paused + tuple(f"{p.subject}: {p.text}" if p.subject else p.text for p in notes)


def _patroni_notes(snapshot: ClusterSnapshot) -> Iterable[Verdict]:
    """What Patroni says is planned or unusual: failsafe, versions apart, a scheduled action."""
    if any(m.failsafe_active for m in snapshot.members):
        text = "failsafe mode active: the DCS is unreachable, the leader keeps running on its members' word"
        yield problem(
            Level.WARN, None, text, "failsafe mode active", key="failsafe", rule=PATRONI_FAILSAFE.id
        )
    versions = sorted({m.patroni_version for m in snapshot.members if m.patroni_version})
    if len(versions) > 1:
        text = f"Patroni versions differ ({', '.join(versions)}): an upgrade in progress?"
        yield problem(
            Level.WARN, None, text, "Patroni versions differ", key="versions", rule=PATRONI_VERSIONS.id
        )
    planned = snapshot.cluster.scheduled_switchover
    if planned:
        to = planned.get("to")
        text = f"switchover scheduled at {planned.get('at', '?')}" + (f" to {to}" if to else "")
        yield problem(
            Level.WARN, None, text, "switchover scheduled", key="scheduled", rule=PATRONI_SCHEDULED.id
        )
    for m in snapshot.members:
        if m.scheduled_restart:
            text = f"restart scheduled at {m.scheduled_restart.get('schedule', '?')}"
            yield problem(
                Level.WARN, m.name, text, "restart scheduled", key="scheduled", rule=PATRONI_SCHEDULED.id
            )


def _node_problems(n: NodeSnapshot | None, t: Thresholds, read_at: datetime) -> Iterable[Verdict]:
    if n is None or not n.reachable:
        return
    # The reader adds the postmaster, which pg_stat_activity (the count) does not list.
    for what, shown, total in (
        ("slots", len(n.slots), n.slots_total),
        ("lock processes", len(n.locks or ()), n.locks_total),
        ("processes", listed_processes(n), n.processes_total),
    ):
        if total is not None and total > shown:
            text = f"{total - shown} more {what} not shown ({total}; past the row cap)"
            yield problem(
                Level.WARN, n.name, text, f"{what} capped", key=f"{what} capped", rule=PG_ROWS_CAPPED.id
            )
    for slot in n.slots:
        lv = slot_level(t, slot)  # the same grade as the Slots pane and the overview's worst slot
        if lv > Level.OK:
            why = "conflicting" if slot.conflicting else slot.wal_status
            text = f"slot {slot.slot_name} retains {binary_size(slot.retained_bytes)}"
            if why in ("conflicting", "lost", "unreserved"):
                text += f", {why}"
            yield problem(lv, n.name, text, key=f"slot {slot.slot_name}", rule=SLOTS_RETAINED.id)
    if (lv := wal_disk_level(t, n.wal_disk)) > Level.OK and n.wal_disk is not None:
        keeper = top_retainer(n)
        text = f"pg_wal {binary_size(n.wal_disk.bytes)}, past max_wal_size + wal_keep_size"
        if keeper is not None:
            text += f"; slot {keeper.slot_name} retains {binary_size(keeper.retained_bytes)}"
        yield problem(lv, n.name, text, "pg_wal large", key="pg_wal", rule=WAL_DISK.id)
    worst = max(n.horizon, key=lambda h: horizon_level(t, h), default=None)
    if worst is not None and (lv := horizon_level(t, worst)) > Level.OK:
        # No age in the text (a problem keeps its row while it lasts): the Horizon pane has them.
        text = f"xmin horizon held by {horizon_holder(worst)}"
        yield problem(lv, n.name, text, "xmin horizon held", key="horizon", rule=HORIZON_HELD.id)
    if n.archiver is not None:
        for m in archiver_marks(t, n.archiver, pg_primary(n)):
            yield problem(m.level, n.name, m.text, key=m.rule, rule=m.rule)
    for m in hugepages_marks(n):
        yield problem(m.level, n.name, m.text, key=m.rule, rule=m.rule)
    for r in n.replication:
        for f in one_per_rule(walsender_findings(r, t, read_at)):
            yield problem(f.level, n.name, f.text, key=f"{f.rule} {standby_name(r)}", rule=f.rule)
    # Sessions queued behind a lock (an ALTER TABLE behind a long transaction stops every query
    # of the table): read every cycle from pg_stat_activity, so the overview says it while the
    # Locks pane is not on screen. Graded by the longest waiting query's run time (an upper
    # bound of its wait: PostgreSQL gives a wait's start only in pg_locks).
    waits = [p.lock_query_s for p in n.processes if p.lock_query_s is not None and isfinite(p.lock_query_s)]
    if waits:
        longest = max(waits)
        lv = t.lock_wait_s.grade(longest)
        if lv > Level.OK:
            who = "1 session waits" if len(waits) == 1 else f"{len(waits)} sessions wait"
            text = f"{who} on a lock, longest query {int(longest)}s (l: Locks)"
            yield problem(lv, n.name, text, key="lock waits", rule=LOCKS_WAITS.id)
    for m in log_findings(n, read_at):
        yield problem(m.level, n.name, f"{m.text} (j: Log)", key=m.rule, rule=m.rule)
    for pid, m in session_findings(n, t):
        yield problem(m.level, n.name, f"{m.text} (a: Sessions)", key=f"{m.rule} {pid}", rule=m.rule)
