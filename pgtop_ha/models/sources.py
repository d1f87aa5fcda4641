"""How each of a node's sources answers: fresh, slow (last answer kept), pending or unreachable."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pgtop_ha.models.snapshot import Member, NodeSnapshot

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
