"""How old a node's data is, and how its reach is graded (models.sources says how each source answers)."""

from __future__ import annotations

from datetime import datetime

from pgtop_ha.models.derive import age_s
from pgtop_ha.models.snapshot import ClusterSnapshot
from pgtop_ha.models.sources import member_state, node_state, unreachable
from pgtop_ha.models.thresholds import Level, Thresholds


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
