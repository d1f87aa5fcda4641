"""What changed between two snapshots, as facts compared pairwise. Pure, no I/O.

An event is a keyed fact (a role, a server's status in a pool, a slot's wal_status) whose value
changed. A fact of a source that did not answer keeps its value: one outage is never a hundred
changes. The Timeline adds debounce, durations, checks and the stopwatch.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

from pgtop_ha.judge.slots import missing_permanent_slots, wal_status_rank
from pgtop_ha.judge.wal import archive_failing
from pgtop_ha.models.event import Event
from pgtop_ha.models.haproxy import state_word
from pgtop_ha.models.servers import member_of
from pgtop_ha.models.snapshot import ClusterSnapshot, Member
from pgtop_ha.models.sources import member_state, node_state, source_state

Key = tuple[str, ...]


@dataclass(frozen=True)
class Fact:
    """One keyed state read from a snapshot; ``scope`` names the source it depends on."""

    value: Hashable
    kind: str
    source: str
    node: str | None = None
    scope: str | None = None  # 'pg:NAME', 'rest:NAME', 'cluster', 'haproxy' or None (always known)
    label: str = ""  # the subject in texts, e.g. "HAProxy pg_writer/node1"
    severity: int = 1  # of the event when the state turns bad (describers refine it)


Change = tuple[Key, Fact | None, Fact | None]  # key, before, after (None: absent)
Describer = Callable[[Key, Fact | None, Fact | None], tuple[str, int] | None]


# -- reading facts from one snapshot ------------------------------------------------------------


def listed(m: Member) -> bool:
    """Patroni's /cluster lists the member now (the poller keeps a gone one a while, bare)."""
    return m.role is not None or m.state is not None


def _reach_value(state: str) -> str | None:
    """A source's state as a fact value; None while its first poll still runs (unknown)."""
    return None if state == "pending" else state


def _cluster_facts(snap: ClusterSnapshot) -> Iterable[tuple[Key, Fact]]:
    c = snap.cluster
    api = source_state(c.reachable, c.slow_s)
    yield ("cluster_api",), Fact(api, "reachability", "patroni", label="Patroni /cluster")
    yield ("leader",), Fact(c.leader, "leader", "patroni", node=c.leader, scope="cluster")
    yield ("pause",), Fact(bool(c.pause), "pause", "patroni", scope="cluster")
    for m in snap.members:
        name = m.name
        if listed(m):
            yield ("member", name), Fact("listed", "member", "patroni", node=name, scope="cluster")
        role = m.role or m.own_role
        yield ("role", name), Fact(role, "role", "patroni", node=name, scope="cluster")
        yield ("state", name), Fact(m.state, "state", "patroni", node=name, scope="cluster")
        rest = _reach_value(member_state(m))
        if rest is not None:
            yield ("rest", name), Fact(rest, "reachability", "patroni", node=name, label="Patroni REST")
        pending = bool(m.pending_restart)
        yield (
            ("pending_restart", name),
            Fact(pending, "pending_restart", "patroni", node=name, scope=f"rest:{name}"),
        )


def _node_facts(snap: ClusterSnapshot) -> Iterable[tuple[Key, Fact]]:
    for n in snap.nodes:
        name = n.name
        scope = f"pg:{name}"
        pg = _reach_value(node_state(n))
        if pg is not None:
            yield ("pg", name), Fact(pg, "reachability", "postgres", node=name, label="PostgreSQL")
        if n.in_recovery is not None:
            word = "standby" if n.in_recovery else "primary"
            yield ("recovery", name), Fact(word, "recovery", "postgres", node=name, scope=scope)
        for r in n.replication:
            app = r.application_name or f"pid {r.pid}"
            value = (r.state or "?", name)
            # A nameless walsender (a tool's replication connection, a standby without
            # application_name) is no member: its event belongs to the node it runs on, not to
            # a "node" called "pid N" in the events' Node column.
            where = r.application_name or name
            yield ("replication", app), Fact(value, "replication", "postgres", node=where, scope=scope)
        for slot in n.slots:
            if slot.temporary:
                continue  # pg_basebackup's and tablesync's come and go: not news
            sub = (name, slot.slot_name)
            label = f"slot {slot.slot_name}"
            yield ("slot", *sub), Fact("exists", "slot", "postgres", node=name, scope=scope, label=label)
            if n.in_recovery is False and slot.active is not None:
                # On a standby slots are kept inactive on purpose: only the primary's matter.
                fact = Fact(slot.active, "slot", "postgres", node=name, scope=scope, label=label)
                yield ("slot_active", *sub), fact
            if slot.wal_status is not None:
                fact = Fact(slot.wal_status, "slot", "postgres", node=name, scope=scope, label=label)
                yield ("slot_wal", *sub), fact
        for slot_name in missing_permanent_slots(snap, name):
            label = f"permanent slot {slot_name}"
            fact = Fact("missing", "slot", "postgres", node=name, scope=scope, label=label)
            yield ("permanent_slot", name, slot_name), fact
        a = n.archiver
        if a is not None:
            failing = archive_failing(a)
            label = (a.last_failed_wal or "") if failing else ""
            yield (
                ("archiver", name),
                Fact(failing, "archiver", "postgres", node=name, scope=scope, label=label),
            )
        for copy in n.copy_progress:
            what = " ".join(x for x in (copy.command or "COPY", copy.relation or "") if x)
            if copy.application_name:
                what += f" ({copy.application_name})"
            fact = Fact("running", "copy", "postgres", node=name, scope=scope, label=what)
            yield ("copy", name, str(copy.pid)), fact


def _haproxy_facts(snap: ClusterSnapshot) -> Iterable[tuple[Key, Fact]]:
    h = snap.haproxy
    stats = "unreachable" if h.error is not None else source_state(True, h.slow_s)
    yield ("haproxy_stats",), Fact(stats, "haproxy", "haproxy", label=h.error or "")
    for srv in h.servers:
        label = f"HAProxy {srv.proxy}/{srv.server}"
        word = state_word(srv.status)
        node = member_of(srv)
        fact = Fact(word, "haproxy", "haproxy", node=node, scope="haproxy", label=label)
        yield ("haproxy", srv.proxy, srv.server), fact


def facts(snap: ClusterSnapshot) -> dict[Key, Fact]:
    """Every fact the snapshot states, keyed."""
    out: dict[Key, Fact] = {}
    for family in (_cluster_facts, _node_facts, _haproxy_facts):
        out.update(family(snap))
    return out


def unknown_scopes(snap: ClusterSnapshot) -> set[str]:
    """Sources that did not answer this cycle: their facts keep their previous values."""
    out: set[str] = set()
    if not snap.cluster.reachable:
        out.add("cluster")
    for m in snap.members:
        if member_state(m) in ("unreachable", "pending"):
            out.add(f"rest:{m.name}")
    for n in snap.nodes:
        if node_state(n) in ("unreachable", "pending"):
            out.add(f"pg:{n.name}")
    if snap.haproxy.error is not None and not snap.haproxy.servers:
        out.add("haproxy")
    return out


def carry(prev: Mapping[Key, Fact], cur: Mapping[Key, Fact], unknown: set[str]) -> dict[Key, Fact]:
    """``cur`` with facts of unknown sources replaced by (or kept at) their previous values."""
    out = {k: f for k, f in cur.items() if f.scope not in unknown}
    for key, fact in prev.items():
        if key not in out and fact.scope in unknown:
            out[key] = fact
    return out


# -- describing a change ------------------------------------------------------------------------

# Order of families within one snapshot's events: the story reads top-down.
ORDER = (
    "cluster_api",
    "leader",
    "pause",
    "member",
    "role",
    "state",
    "rest",
    "pg",
    "recovery",
    "pending_restart",
    "replication",
    "haproxy_stats",
    "haproxy",
    "slot",
    "slot_active",
    "slot_wal",
    "permanent_slot",
    "archiver",
    "copy",
    "check",
)
_RANK = {name: i for i, name in enumerate(ORDER)}


def changes(prev: Mapping[Key, Fact], cur: Mapping[Key, Fact]) -> list[Change]:
    """Keys whose value differs (appearing and vanishing included), in story order."""
    out: list[Change] = []
    for key in set(prev) | set(cur):
        before, after = prev.get(key), cur.get(key)
        b = None if before is None else before.value
        a = None if after is None else after.value
        if before is not None and after is not None and b == a:
            continue
        if before is None and after is None:
            continue
        out.append((key, before, after))
    out.sort(key=lambda c: (_RANK.get(c[0][0], len(ORDER)), tuple(str(p) for p in c[0])))
    return out


def _value(f: Fact | None) -> Hashable:
    return None if f is None else f.value


def _leader(_key: Key, b: Fact | None, a: Fact | None) -> tuple[str, int] | None:
    if b is None:
        return None
    old, new = _value(b), _value(a)
    if new is None:
        return f"leader lost: {old} → none", 2
    if old is None:
        return f"leader elected: none → {new}", 1
    return f"leader {old} → {new}", 1


def _cluster_api(key: Key, b: Fact | None, a: Fact | None) -> tuple[str, int] | None:
    return _reach(key, b, a)


def _pause(_key: Key, b: Fact | None, a: Fact | None) -> tuple[str, int] | None:
    if b is None or a is None:
        return None
    return ("cluster paused (maintenance mode)", 1) if a.value else ("cluster resumed", 1)


def _member(_key: Key, b: Fact | None, a: Fact | None) -> tuple[str, int] | None:
    return ("member joined", 1) if b is None else ("member left", 2)


def _role(_key: Key, b: Fact | None, a: Fact | None) -> tuple[str, int] | None:
    if b is None or a is None or b.value is None or a.value is None:
        return None  # joining or leaving /cluster is the member event's news
    return f"Patroni role {b.value} → {a.value}", 1


def _state(_key: Key, b: Fact | None, a: Fact | None) -> tuple[str, int] | None:
    if b is None or a is None or b.value is None or a.value is None:
        return None
    bad = a.value not in ("running", "streaming")
    return f"Patroni state {b.value} → {a.value}", 1 if bad else 0


UNREACHABLE_WORDS = " unreachable"
SLOW_WORDS = " slow (last answer kept)"


def _reach(_key: Key, b: Fact | None, a: Fact | None) -> tuple[str, int] | None:
    """A source between fresh, slow (last answer kept) and unreachable (timeout or refused)."""
    if b is None or a is None:
        return None
    old, new, what = b.value, a.value, a.label
    if new == "unreachable":
        return what + UNREACHABLE_WORDS, 2
    if old == "unreachable":
        return (f"{what} reachable again", 0) if new == "fresh" else (f"{what} reachable again, slow", 1)
    if new == "slow":
        return what + SLOW_WORDS, 1
    return f"{what} answers in time again", 0


def without_preludes(evs: tuple[Event, ...]) -> tuple[Event, ...]:
    """``evs`` without a read's slowness that ended as that source's unreachability.

    A crash or a stop reads as "Patroni REST slow (last answer kept) — for 0.2 s" then "Patroni
    REST unreachable" in the same second: one thing, said twice (the overview shows one).
    """
    down = {
        (e.node, e.at, e.text.removesuffix(UNREACHABLE_WORDS))
        for e in evs
        if e.kind == "reachability" and e.text.endswith(UNREACHABLE_WORDS)
    }
    kept = tuple(
        e
        for e in evs
        if not (
            e.kind == "reachability"
            and e.text.endswith(SLOW_WORDS)
            and (e.node, e.ended_at, e.text.removesuffix(SLOW_WORDS)) in down
        )
    )
    return evs if len(kept) == len(evs) else kept


def _recovery(_key: Key, b: Fact | None, a: Fact | None) -> tuple[str, int] | None:
    if b is None or a is None:
        return None
    return f"PostgreSQL {b.value} → {a.value}", 1


def _pending_restart(_key: Key, b: Fact | None, a: Fact | None) -> tuple[str, int] | None:
    if b is None or a is None:
        return None
    return ("pending restart", 1) if a.value else ("restart no longer pending", 0)


def _replication(key: Key, b: Fact | None, a: Fact | None) -> tuple[str, int] | None:
    app = key[1]
    if a is None:
        assert b is not None
        _, sender = _pair(b.value)
        return f"replication {app}: no longer connected to {sender}", 1
    state, sender = _pair(a.value)
    if b is None:
        return f"replication {app}: {state} from {sender}", 0
    old_state, old_sender = _pair(b.value)
    if old_sender != sender:
        return f"replication {app}: {state} from {sender} (was {old_state} from {old_sender})", 0
    return f"replication {app}: {old_state} → {state} from {sender}", 0 if state == "streaming" else 1


def _pair(value: Hashable) -> tuple[str, str]:
    if isinstance(value, tuple) and len(value) == 2:
        return str(value[0]), str(value[1])
    return str(value), "?"


def _haproxy_stats(_key: Key, b: Fact | None, a: Fact | None) -> tuple[str, int] | None:
    if b is None or a is None:
        return None
    if a.value == "unreachable":
        return f"HAProxy stats unavailable: {a.label}", 1
    if b.value == "unreachable":
        return "HAProxy stats available again", 0
    return (
        ("HAProxy stats slow (last answer kept)", 1)
        if a.value == "slow"
        else ("HAProxy stats in time again", 0)
    )


def _haproxy(_key: Key, b: Fact | None, a: Fact | None) -> tuple[str, int] | None:
    if b is None or a is None:
        return None  # a server appearing or leaving the stats is configuration, not news
    return f"{a.label} {b.value} → {a.value}", 0 if a.value == "UP" else 1


def _slot(key: Key, b: Fact | None, a: Fact | None) -> tuple[str, int] | None:
    if b is None:
        return (f"{a.label} created", 0) if a is not None else None
    return (f"{b.label} dropped", 1) if a is None else None


def _slot_active(_key: Key, b: Fact | None, a: Fact | None) -> tuple[str, int] | None:
    if b is None or a is None:
        return None
    return (f"{a.label} active again", 0) if a.value else (f"{a.label} inactive", 1)


def _slot_wal(_key: Key, b: Fact | None, a: Fact | None) -> tuple[str, int] | None:
    if b is None or a is None:
        return None
    # Extended is a warning; unreserved and lost are as bad as an event gets (severity 2).
    return f"{a.label} wal_status {b.value} → {a.value}", min(wal_status_rank(str(a.value)), 2)


def _permanent_slot(_key: Key, b: Fact | None, a: Fact | None) -> tuple[str, int] | None:
    if a is not None:
        return f"{a.label} missing on this member", 1
    assert b is not None
    return f"{b.label} present again", 0


def _archiver(_key: Key, b: Fact | None, a: Fact | None) -> tuple[str, int] | None:
    if b is None or a is None or b.value == a.value:
        return None
    if a.value:
        return f"archiver failing{': ' + a.label if a.label else ''}", 2
    return "archiver recovered", 0


def _copy(_key: Key, b: Fact | None, a: Fact | None) -> tuple[str, int] | None:
    if a is not None and b is None:
        return f"COPY started: {a.label}", 0
    if b is not None and a is None:
        return f"COPY finished: {b.label}", 0
    return None


def _check(_key: Key, b: Fact | None, a: Fact | None) -> tuple[str, int] | None:
    if a is not None:
        return a.label, a.severity
    if b is not None:
        return f"resolved: {b.label}", 0
    return None


DESCRIBE: dict[str, Describer] = {
    "cluster_api": _cluster_api,
    "leader": _leader,
    "pause": _pause,
    "member": _member,
    "role": _role,
    "state": _state,
    "rest": _reach,
    "pg": _reach,
    "recovery": _recovery,
    "pending_restart": _pending_restart,
    "replication": _replication,
    "haproxy_stats": _haproxy_stats,
    "haproxy": _haproxy,
    "slot": _slot,
    "slot_active": _slot_active,
    "slot_wal": _slot_wal,
    "permanent_slot": _permanent_slot,
    "archiver": _archiver,
    "copy": _copy,
    "check": _check,
}


def describe(change: Change, at: datetime) -> Event | None:
    """The event one change makes (id 0), or None when the change is not news."""
    key, before, after = change
    describer = DESCRIBE.get(key[0])
    said = describer(key, before, after) if describer is not None else None
    if said is None:
        return None
    text, severity = said
    fact = after if after is not None else before
    assert fact is not None
    return Event(at=at, kind=fact.kind, node=fact.node, text=text, severity=severity, source=fact.source)


def diff(prev: ClusterSnapshot | None, cur: ClusterSnapshot) -> tuple[Event, ...]:
    """Events that turn ``prev`` into ``cur``, in a stable order; none for the first snapshot."""
    if prev is None:
        return ()
    before = facts(prev)
    after = carry(before, facts(cur), unknown_scopes(cur))
    out = (describe(c, cur.taken_at) for c in changes(before, after))
    return tuple(e for e in out if e is not None)
