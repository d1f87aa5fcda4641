"""Snapshot sequences for the timeline tests: the lab fixtures, changed one field at a time."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from pgtop_ha.engines.timeline import Timeline
from pgtop_ha.models.event import Event
from pgtop_ha.models.snapshot import ClusterSnapshot, HAProxyServer, Member, NodeSnapshot
from tests.ui import fixtures as fx

T0 = fx.T0


def t(seconds: float) -> datetime:
    """T0 plus ``seconds``."""
    return T0 + timedelta(seconds=seconds)


def healthy(seconds: float = 0.0, leader: str = "node1") -> ClusterSnapshot:
    """The healthy lab cluster at T0 + ``seconds``."""
    return fx.healthy(t(seconds), leader)


def member(snap: ClusterSnapshot, name: str, **kw: object) -> ClusterSnapshot:
    """``snap`` with member ``name``'s fields changed."""
    members = tuple(m.model_copy(update=kw) if m.name == name else m for m in snap.members)
    return snap.model_copy(update={"members": members})


def node(snap: ClusterSnapshot, name: str, **kw: object) -> ClusterSnapshot:
    """``snap`` with node ``name``'s PostgreSQL fields changed."""
    nodes = tuple(n.model_copy(update=kw) if n.name == name else n for n in snap.nodes)
    return snap.model_copy(update={"nodes": nodes})


def pg_down(snap: ClusterSnapshot, name: str) -> ClusterSnapshot:
    """Node ``name``'s PostgreSQL refused the connection (its last answer stays known)."""
    last = snap.taken_at - timedelta(seconds=1)
    down = NodeSnapshot(name=name, error="connection refused", last_ok_at=last)
    nodes = tuple(down if n.name == name else n for n in snap.nodes)
    return snap.model_copy(update={"nodes": nodes})


def rest_down(snap: ClusterSnapshot, name: str) -> ClusterSnapshot:
    """Member ``name``'s Patroni REST timed out (its own timeout expired)."""
    last = snap.taken_at - timedelta(seconds=3)
    return member(snap, name, reachable=False, error="no answer (timeout)", last_ok_at=last)


def writers(snap: ClusterSnapshot, *up: str) -> ClusterSnapshot:
    """HAProxy's writer pool with exactly ``up`` UP (every other writer server DOWN)."""
    servers: list[HAProxyServer] = []
    for s in snap.haproxy.servers:
        if s.proxy == "pg_writer":
            s = s.model_copy(update={"status": "UP" if s.server in up else "DOWN"})
        servers.append(s)
    return snap.model_copy(update={"haproxy": snap.haproxy.model_copy(update={"servers": tuple(servers)})})


def leader(snap: ClusterSnapshot, name: str | None) -> ClusterSnapshot:
    """Patroni's /cluster names ``name`` leader (None: no leader), roles following."""
    members: list[Member] = []
    for m in snap.members:
        if m.name == name:
            m = m.model_copy(update={"role": "leader", "state": "running"})
        elif m.role == "leader":
            m = m.model_copy(update={"role": "replica"})
        members.append(m)
    cluster = snap.cluster.model_copy(update={"leader": name})
    return snap.model_copy(update={"cluster": cluster, "members": tuple(members)})


def feed(timeline: Timeline, snaps: Iterable[ClusterSnapshot]) -> list[Event]:
    """Observe every snapshot; returns everything observe() reported, in order."""
    out: list[Event] = []
    for snap in snaps:
        out.extend(timeline.observe(snap))
    return out


def texts(timeline: Timeline) -> list[str]:
    """The timeline's event texts in order."""
    return [e.text for e in timeline.events()]


def only(timeline: Timeline, text: str) -> Event:
    """The one event whose text is ``text``, else the one that contains it (fails if not one)."""
    found = [e for e in timeline.events() if text == e.text] or [
        e for e in timeline.events() if text in e.text
    ]
    assert len(found) == 1, (text, [e.text for e in timeline.events()])
    return found[0]
