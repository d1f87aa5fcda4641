"""How each of a node's sources answers (fresh, slow, pending, unreachable) and how old its data is."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pgtop_ha.models.derive import age_s
from pgtop_ha.models.snapshot import ClusterSnapshot, Member, NodeSnapshot
from pgtop_ha.models.thresholds import Level, Thresholds

# A poll that has waited this long for its answer makes its source "slow": the last answer is kept
# and shown with its age. Below this it is plain fresh data (a busy cycle, not a slow server).
SLOW_S = 1.0
# After a change (a role, a leader, an error, a routing change) the cluster is unsettled this long:
# every source is asked every cycle and the console keeps its fast cadence.
UNSETTLED_S = 30.0

SourceState = Literal["fresh", "slow", "pending", "unreachable"]


def source_state(reachable: bool, slow_s: float | None) -> SourceState:
    """Fresh, slow (last answer kept), pending (first poll still running) or unreachable."""
    if reachable:
        return "slow" if slow_s is not None and slow_s >= SLOW_S else "fresh"
    # Not reachable while a poll runs means it never answered yet: unknown, not a failure.
    return "pending" if slow_s is not None else "unreachable"


def member_state(m: Member) -> SourceState:
    """The state of a member's own Patroni REST source."""
    return source_state(m.reachable, m.slow_s)


def node_state(n: NodeSnapshot) -> SourceState:
    """The state of a node's PostgreSQL source."""
    return source_state(n.reachable, n.slow_s)


def unreachable(m: Member | None, n: NodeSnapshot | None) -> tuple[tuple[str, ...], datetime | None]:
    """Which of a node's sources are unreachable ("REST", "PG") and the newest last answer among them."""
    # One reading for the header's age and the row's ("✖ REST+PG 10s"): the age of what stopped
    # answering, not of a source read on a calmer cadence (a /patroni read 5 s ago).
    sources: tuple[tuple[str, Member | NodeSnapshot | None], ...] = (("REST", m), ("PG", n))
    down = [
        (what, x)
        for what, x in sources
        if x is not None and source_state(x.reachable, x.slow_s) == "unreachable"
    ]
    known = [x.last_ok_at for _, x in down if x.last_ok_at is not None]
    return tuple(what for what, _ in down), max(known) if known else None


def reach_level(down: bool, slow: bool) -> Level:
    """A member's reachability: CRIT when a source is down, WARN while one is slow."""
    return Level.CRIT if down else Level.WARN if slow else Level.OK


def stale_level(t: Thresholds, age_s: float | None) -> Level:
    """Seconds since the last fresh data graded; never seen at all is CRIT."""
    if age_s is None:
        return Level.CRIT
    return t.stale_s.grade(age_s)


def node_freshness(
    snapshot: ClusterSnapshot, name: str, now: datetime, t: Thresholds, *, stalled: bool = False
) -> tuple[Level, float | None]:
    """How a node answers, and how old its data is: the older of its Patroni and PostgreSQL last successes.

    CRIT as soon as either source's last read failed, however recent its last answer, aged from
    the last answer of what failed: the row below says "REST+PG 4s" in CRIT then, and a header
    still saying ✔ contradicted it. At least WARN while a read is slow (its last answer kept),
    as the row's "▲ REST+PG slow 2s" is. A source that answered its last read is fresh while
    snapshots come; once they stop (``stalled``), its data is graded by its age (``stale_s``).
    """
    stamps = []
    m, n = snapshot.member(name), snapshot.node(name)
    if m is not None:
        stamps.append(m.last_ok_at)
    if n is not None:
        stamps.append(n.last_ok_at)
    down, last = unreachable(m, n)
    if not stamps or any(s is None for s in stamps):
        # Never answered: down when a read failed, pending (WARN, as its row says) while the first runs.
        return reach_level(bool(down) or not stamps, True), None
    if down:
        # The age of what stopped answering, as its row says it: the /patroni read on its calm
        # cadence made a PostgreSQL down for 0 s read "✖5s", then "✖3s" on the next read.
        return reach_level(True, False), age_s(now, last)
    since = age_s(now, min(s for s in stamps if s is not None))
    # A member's own /patroni is read every patroni.calm_interval (5 s) while calm, as old by
    # design as stale_s.warn: a cycle that waited its budget for a frozen node1 made the header
    # read "node1 ▲5s node2 ▲5s node3 ▲5s" for a second, every healthy node a warning.
    level = stale_level(t, since) if stalled else Level.OK
    slow = (m is not None and member_state(m) == "slow") or (n is not None and node_state(n) == "slow")
    return max(level, reach_level(False, slow)), since


def stalled_after(interval: float, t: Thresholds) -> float:
    """Seconds without a snapshot after which the poll has stopped and data is graded by its age."""
    # A cycle waits at most its budget for a slow source, so a snapshot comes each interval;
    # three missed, and at least stale_s.warn, is a poll that stopped.
    return max(3 * interval, t.stale_s.warn)
