"""One snapshot judged once: its problems, its verdicts and its forecast, as every output reads them.

The session makes one per snapshot; the panes, Problems, `check` and `snapshot --json` all read it,
so a mark on screen and an exit code never come from two evaluations.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TypeVar

from pgtop_ha.judge.backup import backup_marks, no_stanza_marks
from pgtop_ha.judge.forecast import forecast, forecast_marks
from pgtop_ha.judge.memory import hugepages_marks
from pgtop_ha.judge.poolers import (
    bouncer_findings,
    database_finding,
    missing_primary,
    node_finding,
    pgpool_findings,
    pool_finding,
)
from pgtop_ha.judge.probes import probe_mark
from pgtop_ha.judge.problems import cluster_problems, member_problems, patroni_view
from pgtop_ha.judge.replication import receiver_findings, walsender_marks
from pgtop_ha.judge.routing import pool_mark, server_mark
from pgtop_ha.judge.sessions import session_marks
from pgtop_ha.judge.slots import absent_slot_level, slot_marks, worst_slot
from pgtop_ha.judge.verdicts import verdicts_of
from pgtop_ha.judge.wal import archiver_marks, horizon_level, wal_disk_level
from pgtop_ha.models.derive import member_names
from pgtop_ha.models.forecast import FailoverForecast
from pgtop_ha.models.haproxy import Pools
from pgtop_ha.models.leader import is_leader
from pgtop_ha.models.memo import kept
from pgtop_ha.models.poolers import BouncerDatabase, BouncerPool, PgBouncerState, PgpoolNode, PgpoolState
from pgtop_ha.models.snapshot import (
    Archiver,
    ClusterSnapshot,
    HAProxyServer,
    HorizonHolder,
    NodeSnapshot,
    Probe,
    Process,
    Replication,
    Slot,
    WalDisk,
)
from pgtop_ha.models.thresholds import Level, Thresholds
from pgtop_ha.models.verdict import Mark, Verdict

_T = TypeVar("_T")
_CLUSTER = object()  # the row of what is kept for the whole cluster (not the judgement: no cycle)


@dataclass(frozen=True, slots=True, weakref_slot=True)
class Judgement:
    """A snapshot's judgement as of its reading: each member's problems, the cluster's, the verdicts."""

    snapshot: ClusterSnapshot
    thresholds: Thresholds
    pools: Pools
    members: Mapping[str, tuple[Verdict, ...]]
    problems: tuple[Verdict, ...]  # the cluster's, worst first (members' included)
    verdicts: tuple[Verdict, ...]  # the problems and the timeline's disagreements, counted first
    forecast: FailoverForecast
    # A row's marks, made the first time a pane asks and kept with the judgement (models.memo).
    _rows: dict[Hashable, tuple[object, object]] = field(
        default_factory=dict, init=False, compare=False, repr=False
    )

    def on(self, node: str | None) -> tuple[Verdict, ...]:
        """The problems of ``node`` (None: the cluster's own), for a column's rules to colour by."""
        return self._row(("on", node), _CLUSTER, lambda: tuple(p for p in self.problems if p.subject == node))

    def member(self, name: str) -> tuple[Verdict, ...]:
        """What is wrong with member ``name``."""
        return self.members.get(name, ())

    def walsender(self, r: Replication) -> tuple[Mark, ...]:
        """A walsender's marks: lag, a state other than streaming, a silent standby."""
        return self._row("walsender", r, lambda: walsender_marks(self.snapshot, r, self.thresholds))

    def receiver(self, node: NodeSnapshot) -> tuple[Mark, ...]:
        """A standby's own receiver, when no upstream reports it."""
        return self._row("receiver", node, lambda: receiver_findings(node))

    def slot(self, slot: Slot) -> tuple[Mark, ...]:
        """A slot's marks by the column each colours."""
        return self._row("slot", slot, lambda: slot_marks(self.thresholds, slot))

    def absent_slot(self, member: str | None) -> Level:
        """A permanent slot missing on ``member`` (None: a standby's copy that would not survive)."""
        return absent_slot_level(member is not None and is_leader(self.snapshot.member(member)))

    def worst_slot(self) -> tuple[str, Slot, Level] | None:
        """(node, slot, level) of the cluster's worst slot."""
        return self._row("worst slot", _CLUSTER, lambda: worst_slot(self.snapshot, self.thresholds))

    def wal_disk(self, w: WalDisk | None) -> Level:
        """pg_wal's size against what PostgreSQL keeps by itself."""
        return wal_disk_level(self.thresholds, w)

    def horizon(self, h: HorizonHolder) -> Level:
        """A holder of the xmin horizon, by how long and how far it holds it."""
        return horizon_level(self.thresholds, h)

    def archiver(self, a: Archiver, primary: bool | None) -> tuple[Mark, ...]:
        """An archiver's queue and failures."""
        return self._row("archiver", a, lambda: archiver_marks(self.thresholds, a, primary))

    def hugepages(self, node: NodeSnapshot) -> tuple[Mark, ...]:
        """Shared memory outside the huge pages asked for."""
        return self._row("hugepages", node, lambda: hugepages_marks(node))

    def session(self, p: Process) -> tuple[Mark, ...]:
        """A session's marks: a long transaction, idle in transaction holding the horizon."""
        return self._row("session", p, lambda: session_marks(p, self.thresholds))

    def probe(self, probe: Probe) -> Mark | None:
        """A probe's mark (None when it found nothing wrong or has not run)."""
        return self._row("probe", probe, lambda: probe_mark(self.snapshot, probe))

    def server(self, srv: HAProxyServer, kind: str | None = None) -> Mark:
        """An HAProxy server's status against what its pool (``kind``, else its backend's) expects."""
        use = self.pools.kind(srv.proxy) if kind is None else kind
        return self._row(f"server {use}", srv, lambda: server_mark(self.snapshot, use, srv))

    def pool(self, kind: str | None, servers: Sequence[HAProxyServer]) -> Mark:
        """An HAProxy backend's grade from its servers' marks."""
        return pool_mark(kind, servers, [self.server(s, kind) for s in servers])

    def outlook(self) -> tuple[Mark, ...]:
        """The forecast's marks: no candidate, data at risk, a long write outage."""
        return self._row(
            "outlook", _CLUSTER, lambda: forecast_marks(self.snapshot, self.forecast, self.thresholds)
        )

    def backups(self) -> dict[str, tuple[Mark, ...]]:
        """Each pgBackRest stanza read and the marks that hold for it."""
        return self._row("backups", _CLUSTER, lambda: backup_marks(self.snapshot))

    def no_stanza(self) -> tuple[Mark, ...]:
        """pgBackRest read but listing no stanza, when somebody asked for it."""
        return self._row("no stanza", _CLUSTER, lambda: no_stanza_marks(self.snapshot))

    def bouncer(self, b: PgBouncerState) -> list[Mark]:
        """What is wrong in one pgBouncer, against Patroni."""
        return self._row("bouncer", b, lambda: bouncer_findings(b, patroni_view(self.snapshot)))

    def bouncer_database(self, db: BouncerDatabase) -> Mark | None:
        """A pgBouncer database pointing at a member that is not the leader."""
        return self._row("bouncer db", db, lambda: database_finding(db, patroni_view(self.snapshot)))

    def bouncer_pool(self, pool: BouncerPool) -> Mark | None:
        """Clients of a pgBouncer pool waiting for a server."""
        return self._row("bouncer pool", pool, lambda: pool_finding(pool))

    def pgpool(self, p: PgpoolState) -> list[Mark]:
        """What is wrong in one pgpool-II, against Patroni."""
        return self._row("pgpool", p, lambda: pgpool_findings(p, patroni_view(self.snapshot)))

    def pgpool_primary(self, p: PgpoolState) -> Mark | None:
        """pgpool-II names no primary while Patroni has a leader."""
        return self._row("pgpool primary", p, lambda: missing_primary(p, patroni_view(self.snapshot)))

    def pgpool_node(self, n: PgpoolNode) -> Mark | None:
        """One pgpool-II node against Patroni."""
        return self._row("pgpool node", n, lambda: node_finding(n, patroni_view(self.snapshot)))

    def _row(self, what: Hashable, row: object, make: Callable[[], _T]) -> _T:
        return kept(self._rows, (what, id(row)), row, make)


def judgement(
    snapshot: ClusterSnapshot,
    thresholds: Thresholds,
    pools: Pools,
    seen: Sequence[tuple[Verdict, datetime]] = (),
    outages: Sequence[float] | None = None,
) -> Judgement:
    """Judge ``snapshot`` once, with the timeline's disagreements ``seen`` and past write ``outages``."""
    now = snapshot.taken_at
    told = forecast(snapshot, outages)
    members = {n: tuple(member_problems(snapshot, n, thresholds, pools, now)) for n in member_names(snapshot)}
    problems = tuple(cluster_problems(snapshot, thresholds, pools, now, members, told))
    return Judgement(
        snapshot=snapshot,
        thresholds=thresholds,
        pools=pools,
        members=members,
        problems=problems,
        verdicts=verdicts_of(problems, seen, now),
        forecast=told,
    )
