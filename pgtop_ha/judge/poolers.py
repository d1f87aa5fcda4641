"""Poolers against Patroni: a pgBouncer database pointing at a non-leader, pgpool-II's primary not
Patroni's leader, clients waiting for a server. Pure, no I/O."""

from __future__ import annotations

from pgtop_ha.judge.rules import POOLER_CONTRADICTION
from pgtop_ha.models.base import Frozen
from pgtop_ha.models.poolers import BouncerDatabase, BouncerPool, PgBouncerState, PgpoolNode, PgpoolState
from pgtop_ha.models.thresholds import Level
from pgtop_ha.models.verdict import Mark


def _found(level: Level, what: str, part: str = "") -> Mark:
    """A contradiction between a pooler and Patroni (or within the pooler), without the pooler's name."""
    return Mark(POOLER_CONTRADICTION.id, level, what, part)


class PatroniView(Frozen):
    """What Patroni says, as the poolers are checked against it."""

    leader: str | None = None  # None: no single leader known this cycle (nothing is checked)
    members: frozenset[str] = frozenset()
    streaming: frozenset[str] = frozenset()  # replicas Patroni reports streaming/running


def _unread(error: str | None) -> Mark:
    return _found(Level.WARN, error or "no answer yet")


def database_finding(db: BouncerDatabase, patroni: PatroniView) -> Mark | None:
    """A pgBouncer database pointing at a member that is not the leader (or paused, disabled)."""
    leader = patroni.leader
    if db.member is not None and leader is not None and db.member != leader and db.member in patroni.members:
        return _found(
            Level.CRIT,
            f"database {db.name} points at {db.member}, which is not the leader "
            f"({leader}); writes through it fail",
        )
    if db.paused or db.disabled:
        return _found(
            Level.WARN,
            f"database {db.name} is {'paused' if db.paused else 'disabled'}",
        )
    return None


WAIT_CRIT_S = 5.0  # a client waiting this long for a server connection is an outage to it


def pool_finding(pool: BouncerPool) -> Mark | None:
    """Clients of a pool waiting for a server connection (CRIT once the oldest waits 5 s)."""
    if not pool.cl_waiting:
        return None
    wait = pool.maxwait_s or 0.0
    return _found(
        Level.CRIT if wait >= WAIT_CRIT_S else Level.WARN,
        f"{pool.cl_waiting} clients of {pool.database}/{pool.user} wait for a server (longest {wait:.1f}s)",
    )


def bouncer_findings(state: PgBouncerState, patroni: PatroniView) -> list[Mark]:
    """What is wrong in one pgBouncer: unread, a database pointing at a non-leader, waiting clients."""
    if not state.ok:
        return [_unread(state.error)]
    found = [database_finding(db, patroni) for db in state.databases]
    found += [pool_finding(pool) for pool in state.pools]
    return [f for f in found if f is not None]


def pgpool_primary(state: PgpoolState) -> PgpoolNode | None:
    """The node pgpool-II calls primary (None when it names none)."""
    return next((n for n in state.nodes if n.role == "primary"), None)


def node_finding(node: PgpoolNode, patroni: PatroniView) -> Mark | None:
    """A pgpool-II node against Patroni: a primary that is not the leader; down while it streams."""
    leader = patroni.leader
    if node.role == "primary" and leader is not None and node.member is not None and node.member != leader:
        return _found(
            Level.CRIT,
            f"primary is {node.member}, Patroni's leader is {leader}; writes go to a replica",
            "role",
        )
    if node.status in ("down", "unused") and node.member is not None and node.member in patroni.streaming:
        return _found(
            Level.WARN,
            f"node {node.node_id} ({node.member}) is {node.status} in pgpool while "
            "Patroni says it streams; no reads go there",
            "status",
        )
    return None


def missing_primary(state: PgpoolState, patroni: PatroniView) -> Mark | None:
    """pgpool-II names no primary while Patroni has a leader: writes through it fail."""
    if not state.ok or patroni.leader is None or not state.nodes or pgpool_primary(state) is not None:
        return None
    return _found(Level.CRIT, f"no primary, Patroni's leader is {patroni.leader}")


def pgpool_findings(state: PgpoolState, patroni: PatroniView) -> list[Mark]:
    """pgpool-II against Patroni: unread, no primary while Patroni has a leader, each node's finding."""
    if not state.ok:
        return [_unread(state.error)]
    found = [missing_primary(state, patroni), *(node_finding(n, patroni) for n in state.nodes)]
    return [f for f in found if f is not None]
