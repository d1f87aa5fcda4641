"""Who leads: Patroni's leader, PostgreSQL's primary, and each node's exact timeline."""

from __future__ import annotations

from pgtop_ha.models.roles import is_leader_role
from pgtop_ha.models.snapshot import Member, NodeSnapshot


def exact_timeline(n: NodeSnapshot, m: Member | None) -> int | None:
    """A node's timeline where it is exact: a primary's, its WAL receiver's, else Patroni's word for it."""
    # Without a WAL receiver a standby's timeline comes from its last restartpoint, minutes old
    # after a switch (a lower bound): once the leader crashed, "timelines differ: node1 4,
    # node2 5" was read of a replica on 5 since a switchover. Patroni asks the replica itself
    # (IDENTIFY_SYSTEM, once a loop): the newer of the two.
    if n.in_recovery is False:
        return n.timeline
    if n.wal_receiver is not None and n.wal_receiver.received_tli is not None:
        return n.wal_receiver.received_tli
    known = [tl for tl in (n.timeline, m.timeline if m is not None else None) if tl is not None]
    return max(known) if known else None


def is_leader(member: Member | None) -> bool:
    """Patroni calls this member the leader (or standby leader)."""
    if member is None:
        return False
    return is_leader_role(member.role or member.own_role)


def pg_primary(node: NodeSnapshot | None) -> bool | None:
    """PostgreSQL's own word: primary (True), in recovery (False), or not read (None)."""
    if node is None or not node.reachable or node.in_recovery is None:
        return None
    return not node.in_recovery
