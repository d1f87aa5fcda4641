"""Poolers against Patroni: a pgBouncer database pointing at a non-leader, pgpool-II's primary not
Patroni's leader, clients waiting for a server. Pure, no I/O."""

from __future__ import annotations

from pgtop_ha.models.base import Frozen
from pgtop_ha.models.poolers import BouncerDatabase, BouncerPool, PgBouncerState, PgpoolNode, PgpoolState
from pgtop_ha.models.thresholds import Level


class Finding(Frozen):
    """A contradiction between a pooler and Patroni (or within the pooler), with its level."""

    level: Level
    pooler: str
    what: str  # the finding without the pooler's name (a pane's row already names it)
    part: str = ""  # the column it colours beside the row's health

    @property
    def text(self) -> str:
        """The finding as Problems lists it: the pooler's name first."""
        return f"{self.pooler}: {self.what}"


class PatroniView(Frozen):
    """What Patroni says, as the poolers are checked against it."""

    leader: str | None = None  # None: no single leader known this cycle (nothing is checked)
    members: frozenset[str] = frozenset()
    streaming: frozenset[str] = frozenset()  # replicas Patroni reports streaming/running


def _unread(name: str, error: str | None) -> Finding:
    return Finding(level=Level.WARN, pooler=name, what=error or "no answer yet")


def database_finding(pooler: str, db: BouncerDatabase, patroni: PatroniView) -> Finding | None:
    """A pgBouncer database pointing at a member that is not the leader (or paused, disabled)."""
    leader = patroni.leader
    if db.member is not None and leader is not None and db.member != leader and db.member in patroni.members:
        return Finding(
            level=Level.CRIT,
            pooler=pooler,
            what=f"database {db.name} points at {db.member}, which is not the leader "
            f"({leader}); writes through it fail",
        )
    if db.paused or db.disabled:
        return Finding(
            level=Level.WARN,
            pooler=pooler,
            what=f"database {db.name} is {'paused' if db.paused else 'disabled'}",
        )
    return None


WAIT_CRIT_S = 5.0  # a client waiting this long for a server connection is an outage to it


def pool_finding(pooler: str, pool: BouncerPool) -> Finding | None:
    """Clients of a pool waiting for a server connection (CRIT once the oldest waits 5 s)."""
    if not pool.cl_waiting:
        return None
    wait = pool.maxwait_s or 0.0
    return Finding(
        level=Level.CRIT if wait >= WAIT_CRIT_S else Level.WARN,
        pooler=pooler,
        what=f"{pool.cl_waiting} clients of {pool.database}/{pool.user} wait for a server "
        f"(longest {wait:.1f}s)",
    )


def bouncer_findings(state: PgBouncerState, patroni: PatroniView) -> list[Finding]:
    """What is wrong in one pgBouncer: unread, a database pointing at a non-leader, waiting clients."""
    if not state.ok:
        return [_unread(state.name, state.error)]
    found = [database_finding(state.name, db, patroni) for db in state.databases]
    found += [pool_finding(state.name, pool) for pool in state.pools]
    return [f for f in found if f is not None]


def pgpool_primary(state: PgpoolState) -> PgpoolNode | None:
    """The node pgpool-II calls primary (None when it names none)."""
    return next((n for n in state.nodes if n.role == "primary"), None)


def node_finding(pooler: str, node: PgpoolNode, patroni: PatroniView) -> Finding | None:
    """A pgpool-II node against Patroni: a primary that is not the leader; down while it streams."""
    leader = patroni.leader
    if node.role == "primary" and leader is not None and node.member is not None and node.member != leader:
        return Finding(
            level=Level.CRIT,
            pooler=pooler,
            what=f"primary is {node.member}, Patroni's leader is {leader}; writes go to a replica",
            part="role",
        )
    if node.status in ("down", "unused") and node.member is not None and node.member in patroni.streaming:
        return Finding(
            level=Level.WARN,
            pooler=pooler,
            what=f"node {node.node_id} ({node.member}) is {node.status} in pgpool while "
            "Patroni says it streams; no reads go there",
            part="status",
        )
    return None


def missing_primary(state: PgpoolState, patroni: PatroniView) -> Finding | None:
    """pgpool-II names no primary while Patroni has a leader: writes through it fail."""
    if not state.ok or patroni.leader is None or not state.nodes or pgpool_primary(state) is not None:
        return None
    return Finding(
        level=Level.CRIT, pooler=state.name, what=f"no primary, Patroni's leader is {patroni.leader}"
    )


def pgpool_findings(state: PgpoolState, patroni: PatroniView) -> list[Finding]:
    """pgpool-II against Patroni: unread, no primary while Patroni has a leader, each node's finding."""
    if not state.ok:
        return [_unread(state.name, state.error)]
    found = [missing_primary(state, patroni), *(node_finding(state.name, n, patroni) for n in state.nodes)]
    return [f for f in found if f is not None]
