"""Disagreements between Patroni, PostgreSQL and HAProxy in one snapshot. Pure, no I/O.

Each check has a stable key (so the Timeline can say how long it has lasted) and a grace period:
some disagreements are normal for a few seconds during a switchover (a replica still on the old
timeline, Patroni's role ahead of pg_is_in_recovery()) and only count when they last.
"""

from __future__ import annotations

from pgtop_ha.judge.rules import (
    CLUSTER_PRIMARIES,
    CLUSTER_TIMELINES,
    PATRONI_CLOCK_SKEW,
    PATRONI_DCS_STALE,
    PG_DOWN_LEADER_ROUTED,
    ROLE_DISAGREES,
    ROUTING_WRITER_POOL,
)
from pgtop_ha.models.haproxy import Pools, is_up
from pgtop_ha.models.leader import exact_timeline, is_leader
from pgtop_ha.models.roles import is_standby_leader
from pgtop_ha.models.servers import known_names, member_of
from pgtop_ha.models.snapshot import ClusterSnapshot
from pgtop_ha.models.sources import member_state, node_state
from pgtop_ha.models.thresholds import Level
from pgtop_ha.models.verdict import Verdict

ROLE_GRACE_S = 10.0  # Patroni's role against pg_is_in_recovery(), timelines: normal in a switchover
DCS_STALE_LOOPS = 2  # dcs_last_seen older than this many loop_wait is stale
DEFAULT_LOOP_WAIT_S = 10
CLOCK_SKEW_S = 5.0  # dcs_last_seen further ahead of the answer's arrival than this: clocks differ


# A check's key names its rule before any ":" (the rest names its subject).
CHECK_RULES = {
    "primaries": CLUSTER_PRIMARIES.id,
    "writer": ROUTING_WRITER_POOL.id,
    "pg-down-routed": PG_DOWN_LEADER_ROUTED.id,
    "role": ROLE_DISAGREES.id,
    "timelines": CLUSTER_TIMELINES.id,
    "dcs": PATRONI_DCS_STALE.id,
    "clock": PATRONI_CLOCK_SKEW.id,
}


def check(
    key: str, text: str, node: str | None = None, level: int = Level.CRIT, grace_s: float = 0.0
) -> Verdict:
    """One disagreement in a snapshot, its rule named by its key; it counts once past ``grace_s``."""
    rule = CHECK_RULES[key.split(":", 1)[0]]
    return Verdict(rule=rule, level=Level(level), subject=node, text=text, key=key, grace_s=grace_s)


def _fresh(state: str) -> bool:
    return state in ("fresh", "slow")


def leader_of(snap: ClusterSnapshot) -> str | None:
    """Patroni's leader: /cluster's leader key, else the member whose role says so."""
    if snap.cluster.leader:
        return snap.cluster.leader
    leaders = [m.name for m in snap.members if is_leader(m)]
    return leaders[0] if len(leaders) == 1 else None


def writer_pool(snap: ClusterSnapshot, pools: Pools) -> list[str] | None:
    """Members UP in HAProxy's writer pool (sorted); None when HAProxy has no writer data."""
    servers = [s for s in snap.haproxy.servers if pools.kind(s.proxy) == "writer"]
    if not servers:
        return None
    return sorted({member_of(s) for s in servers if is_up(s)})


def leader_pg_ok(snap: ClusterSnapshot, leader: str) -> bool | None:
    """The leader's PostgreSQL takes writes (True), cannot (False), or is not known this cycle (None)."""
    n, m = snap.node(leader), snap.member(leader)
    if n is None:
        return None
    state = node_state(n)
    if state == "unreachable":
        return False
    if not _fresh(state) or n.in_recovery is None:
        return None
    if n.in_recovery and not (m is not None and is_standby_leader(m.role)):
        return False if state == "fresh" else None  # a kept (slow) answer proves nothing of now
    return True


# New connections the writer pool balanced since the last snapshot that show where writes go.
LANDED_ENOUGH = 2


def writes_landed(prev: ClusterSnapshot, snap: ClusterSnapshot, pools: Pools) -> dict[str, int]:
    """New connections HAProxy's balancer gave each writer-pool member between two snapshots (lbtot)."""
    before = {
        (s.proxy, s.server): s.selected_total for s in prev.haproxy.servers if pools.kind(s.proxy) == "writer"
    }
    out: dict[str, int] = {}
    for s in snap.haproxy.servers:
        was = before.get((s.proxy, s.server))
        if pools.kind(s.proxy) != "writer" or was is None or s.selected_total is None:
            continue
        grew = s.selected_total - was  # negative: HAProxy restarted, its counters anew
        if grew > 0:
            out[member_of(s)] = out.get(member_of(s), 0) + grew
    return out


def writes_ok(snap: ClusterSnapshot, pools: Pools, prev: ClusterSnapshot | None = None) -> bool | None:
    """Whether a client's write through HAProxy can succeed now; None when it cannot be told.

    False at the first sign it cannot: the leader key lost, the leader's PostgreSQL unreachable or
    in recovery, or the writer pool not routing to the leader alone. True once HAProxy routes
    writes to the leader and its PostgreSQL answers as primary. With ``prev``, a pool that still
    lists another server UP but sent every new connection since to the leader (`balance first`,
    the leader first) routes writes to the leader.
    """
    if not snap.cluster.reachable:
        return None  # the leader is unknown this cycle
    leader = leader_of(snap)
    if leader is None:
        return False if snap.members else None
    pg = leader_pg_ok(snap, leader)
    if pg is False:
        return False
    up = writer_pool(snap, pools)
    if up is None:
        # Without HAProxy (not configured) the leader's own answer is the write path.
        return pg if snap.haproxy.error and "not configured" in snap.haproxy.error else None
    if any(name not in known_names(snap) for name in up):
        return None  # a server that is no known member: where writes go is not known
    if up != [leader]:
        landed = writes_landed(prev, snap, pools) if prev is not None and leader in up else {}
        if list(landed) != [leader] or landed[leader] < LANDED_ENOUGH:
            return False
    # A leader whose PostgreSQL is not read (no node for it) is judged by its routing alone.
    return None if pg is None and snap.node(leader) is not None else True


def disagreements(
    snap: ClusterSnapshot, pools: Pools, *, role_grace_s: float = ROLE_GRACE_S
) -> list[Verdict]:
    """Every disagreement in ``snap`` between the sources, in a stable order."""
    out: list[Verdict] = []
    primaries = [
        n.name
        for n in snap.nodes
        if node_state(n) == "fresh" and n.in_recovery is False  # a kept old answer proves nothing
    ]
    if len(primaries) > 1:
        out.append(
            check(
                "primaries",
                f"{len(primaries)} members not in recovery: {', '.join(primaries)}",
            )
        )
    out.extend(_writer_checks(snap, pools))
    for m in snap.members:
        n = snap.node(m.name)
        if n is None or node_state(n) != "fresh" or n.in_recovery is None or not snap.cluster.reachable:
            continue
        said = m.role or m.own_role or "?"
        if is_leader(m) and n.in_recovery and not is_standby_leader(m.role):
            text = f"{m.name}: Patroni says {said}, PostgreSQL is in recovery"
            out.append(check(f"role:{m.name}", text, m.name, 2, role_grace_s))
        elif not is_leader(m) and not n.in_recovery:
            text = f"{m.name}: PostgreSQL is primary, Patroni says {said}"
            out.append(check(f"role:{m.name}", text, m.name, 2, role_grace_s))
    timelines = {
        n.name: tl
        for n in snap.nodes
        if node_state(n) == "fresh" and (tl := exact_timeline(n, snap.member(n.name))) is not None
    }
    # A member whose PostgreSQL is not read still has Patroni's word for its timeline in /cluster.
    said_by_patroni = {
        m.name: m.timeline
        for m in snap.members
        if m.name not in timelines and m.timeline is not None and m.state in ("running", "streaming")
    }
    if len(set(timelines.values()) | set(said_by_patroni.values())) > 1:
        shown = ", ".join(
            [f"{k} {v}" for k, v in sorted(timelines.items())]
            + [f"{k} {v} (Patroni's word)" for k, v in sorted(said_by_patroni.items())]
        )
        out.append(check("timelines", f"timelines differ: {shown}", None, 1, role_grace_s))
    config = snap.patroni_config
    loop_wait = (config.loop_wait if config and config.loop_wait else None) or DEFAULT_LOOP_WAIT_S
    limit = DCS_STALE_LOOPS * loop_wait
    for m in snap.members:
        if m.dcs_last_seen is None or m.last_ok_at is None or not _fresh(member_state(m)):
            continue
        # Compared with when that answer came (not now): a slow answer kept is not staleness.
        age = m.last_ok_at.timestamp() - m.dcs_last_seen
        if age < -CLOCK_SKEW_S:
            # A contact in the future hides staleness: the clocks, not the DCS, are what is known.
            text = (
                f"{m.name}: Patroni's last DCS contact is {-age:.0f} s in the future: its clock and "
                "this host's differ, so whether it reaches the DCS cannot be told"
            )
            out.append(check(f"clock:{m.name}", text, m.name, 1))
        elif age > limit:
            text = f"{m.name}: Patroni has not reached the DCS for over {limit:g} s"
            out.append(check(f"dcs:{m.name}", text, m.name, 2))
    return out


def _writer_checks(snap: ClusterSnapshot, pools: Pools) -> list[Verdict]:
    up = writer_pool(snap, pools)
    if up is None:
        return []
    out: list[Verdict] = []
    leader = leader_of(snap)
    if not up:
        out.append(check("writer:none", "HAProxy writer pool routes to no server"))
    elif snap.cluster.reachable:  # whether it routes to the leader needs the leader
        # A server that is no known member is its own warning (health's "unjoined"), not a
        # wrong writer: on a healthy cluster it would be a false alarm.
        known = known_names(snap)
        wrong = [s for s in up if s != leader and s in known]
        if wrong:
            who = f"not the leader {leader}" if leader else "and there is no leader"
            out.append(check("writer:wrong", f"HAProxy writer pool routes to {', '.join(wrong)}, {who}"))
    for name in up:
        m, n = snap.member(name), snap.node(name)
        if is_leader(m) and n is not None and node_state(n) == "unreachable":
            text = f"{name}: PostgreSQL down on the leader, HAProxy still routes writes to it"
            out.append(check(f"pg-down-routed:{name}", text, name))
    return out
