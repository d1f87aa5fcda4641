"""What changed between two snapshots: roles, reachability, HAProxy routing. Pure, no I/O."""

from __future__ import annotations

from datetime import datetime

from pgtop_ha.models.base import Frozen
from pgtop_ha.models.snapshot import ClusterSnapshot


class Event(Frozen):
    """One change seen between two snapshots (or an action recorded by the operator screen)."""

    at: datetime
    kind: str
    node: str | None = None
    text: str
    severity: int = 0  # 0 info, 1 warn, 2 crit: same scale as health.Level


def _role(snap: ClusterSnapshot, name: str) -> str | None:
    m = snap.member(name)
    return None if m is None else (m.role or m.own_role)


def _pg_role(snap: ClusterSnapshot, name: str) -> str | None:
    n = snap.node(name)
    if n is None or not n.reachable or n.in_recovery is None:
        return None
    return "standby" if n.in_recovery else "primary"


def diff(prev: ClusterSnapshot | None, cur: ClusterSnapshot) -> tuple[Event, ...]:
    """Events that turn ``prev`` into ``cur``, in a stable order; none for the first snapshot."""
    if prev is None:
        return ()
    at = cur.taken_at
    out: list[Event] = []
    if prev.cluster.leader != cur.cluster.leader:
        out.append(
            Event(
                at=at,
                kind="leader",
                node=cur.cluster.leader,
                text=f"leader {prev.cluster.leader or 'none'} → {cur.cluster.leader or 'none'}",
                severity=2 if cur.cluster.leader is None else 1,
            )
        )
    if bool(prev.cluster.pause) != bool(cur.cluster.pause):
        word = "paused (maintenance mode)" if cur.cluster.pause else "resumed"
        out.append(Event(at=at, kind="pause", text=f"cluster {word}", severity=1))
    names = sorted({m.name for m in prev.members + cur.members} | {n.name for n in cur.nodes})
    for name in names:
        out.extend(_member_events(prev, cur, name, at))
    out.extend(_haproxy_events(prev, cur, at))
    return tuple(out)


def _member_events(prev: ClusterSnapshot, cur: ClusterSnapshot, name: str, at: datetime) -> list[Event]:
    out: list[Event] = []
    pm, cm = prev.member(name), cur.member(name)
    if pm is None and cm is not None:
        out.append(Event(at=at, kind="member", node=name, text="member joined", severity=1))
    elif pm is not None and cm is None:
        out.append(Event(at=at, kind="member", node=name, text="member left", severity=2))
    before, after = _role(prev, name), _role(cur, name)
    if pm is not None and cm is not None and before != after:
        out.append(Event(at=at, kind="role", node=name, text=f"Patroni role {before} → {after}", severity=1))
    if pm is not None and cm is not None and pm.state != cm.state:
        bad = cm.state not in ("running", "streaming")
        out.append(
            Event(
                at=at,
                kind="state",
                node=name,
                text=f"Patroni state {pm.state} → {cm.state}",
                severity=1 if bad else 0,
            )
        )
    if pm is not None and cm is not None and pm.reachable != cm.reachable:
        text = "Patroni REST reachable again" if cm.reachable else "Patroni REST unreachable"
        sev = 0 if cm.reachable else 2
        out.append(Event(at=at, kind="reachability", node=name, text=text, severity=sev))
    pn, cn = prev.node(name), cur.node(name)
    if pn is not None and cn is not None and pn.reachable != cn.reachable:
        text = "PostgreSQL reachable again" if cn.reachable else "PostgreSQL unreachable"
        sev = 0 if cn.reachable else 2
        out.append(Event(at=at, kind="reachability", node=name, text=text, severity=sev))
    pr, cr = _pg_role(prev, name), _pg_role(cur, name)
    if pr is not None and cr is not None and pr != cr:
        out.append(Event(at=at, kind="role", node=name, text=f"PostgreSQL {pr} → {cr}", severity=1))
    return out


def _haproxy_events(prev: ClusterSnapshot, cur: ClusterSnapshot, at: datetime) -> list[Event]:
    out: list[Event] = []
    if prev.haproxy.error is None and cur.haproxy.error is not None:
        text = f"HAProxy stats unavailable: {cur.haproxy.error}"
        out.append(Event(at=at, kind="haproxy", text=text, severity=1))
    if not cur.haproxy.servers:
        # An empty or cut-short stats read is "no data this cycle", not every server vanishing.
        return out
    before = {(s.proxy, s.server): s.status for s in prev.haproxy.servers}
    for srv in cur.haproxy.servers:
        key = (srv.proxy, srv.server)
        if key in before and before[key] != srv.status:
            down = not (srv.status or "").upper().startswith("UP")
            out.append(
                Event(
                    at=at,
                    kind="haproxy",
                    node=srv.server,
                    text=f"HAProxy {srv.proxy}/{srv.server} {before[key]} → {srv.status}",
                    severity=1 if down else 0,
                )
            )
    return out
