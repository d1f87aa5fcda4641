"""Statistics reset scopes: the exact function each runs, the version it needs, and the choices
a snapshot offers. Pure: no I/O."""

from __future__ import annotations

from typing import Literal

from pgtop_ha.judge.eligibility import find_leader
from pgtop_ha.models.base import Frozen
from pgtop_ha.models.snapshot import ClusterSnapshot

ResetKind = Literal[
    "slot", "archiver", "wal", "bgwriter", "checkpointer", "recovery_prefetch", "io", "database"
]
SHARED_KINDS: tuple[ResetKind, ...] = (
    "archiver",
    "wal",
    "bgwriter",
    "checkpointer",
    "recovery_prefetch",
    "io",
)
# server_version_num each scope needs.
MIN_VERSION: dict[ResetKind, int] = {
    "slot": 140000,
    "archiver": 0,
    "wal": 140000,
    "bgwriter": 0,
    "checkpointer": 170000,
    "recovery_prefetch": 150000,
    "io": 160000,
    "database": 0,
}
_LABEL: dict[ResetKind, str] = {
    "slot": "replication slot counters",
    "archiver": "archiver (archived/failed)",
    "wal": "WAL (pg_stat_wal)",
    "bgwriter": "bgwriter (+checkpointer <17)",
    "checkpointer": "checkpointer",
    "recovery_prefetch": "recovery prefetch",
    "io": "I/O (pg_stat_io)",
    "database": "current database",
}


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


class ResetScope(Frozen):
    """What to reset: a shared-statistics target, the current database, or one slot's counters."""

    kind: ResetKind
    slot_name: str | None = None

    @property
    def label(self) -> str:
        """A short human name."""
        if self.kind == "slot":
            return f"slot {self.slot_name} counters"
        return _LABEL[self.kind]

    @property
    def call(self) -> str:
        """The exact SQL call, as shown to the operator."""
        if self.kind == "slot":
            return f"pg_stat_reset_replication_slot({_quote(self.slot_name or '')})"
        if self.kind == "database":
            return "pg_stat_reset()"
        return f"pg_stat_reset_shared({_quote(self.kind)})"

    @property
    def function_name(self) -> str:
        """The function's name, for privilege messages."""
        return self.call.split("(", 1)[0]

    @property
    def signature(self) -> str:
        """The function's signature, as GRANT EXECUTE ON FUNCTION needs it."""
        return "pg_stat_reset()" if self.kind == "database" else f"{self.function_name}(text)"

    @property
    def statement(self) -> tuple[str, tuple[str, ...]]:
        """The statement to run and its parameters."""
        if self.kind == "slot":
            return "SELECT pg_stat_reset_replication_slot($1)", (self.slot_name or "",)
        if self.kind == "database":
            return "SELECT pg_stat_reset()", ()
        return "SELECT pg_stat_reset_shared($1)", (self.kind,)

    @property
    def min_version(self) -> int:
        """The oldest server_version_num that has this scope."""
        return MIN_VERSION[self.kind]

    def unsupported(self, version: int | None) -> str | None:
        """Why a server of ``version`` cannot run this reset, or None."""
        if version is None or version >= self.min_version:
            return None
        return f"{self.call} needs PostgreSQL {self.min_version // 10000}+"


class ResetTarget(Frozen):
    """A node a reset runs on, and how to reach its PostgreSQL."""

    name: str
    host: str
    port: int
    dbname: str | None = None
    server_version: int | None = None


class ResetChoice(Frozen):
    """A scope the operator can pick, with the nodes it may run on and the default among them."""

    scope: ResetScope
    nodes: tuple[ResetTarget, ...]
    default_nodes: tuple[str, ...]


def reset_targets(snapshot: ClusterSnapshot) -> tuple[ResetTarget, ...]:
    """Every node whose PostgreSQL address the snapshot knows."""
    out: list[ResetTarget] = []
    for node in snapshot.nodes:
        member = snapshot.member(node.name)
        host = node.host or (member.host if member is not None else None)
        port = node.port or (member.port if member is not None else None)
        if host and port:
            out.append(ResetTarget(name=node.name, host=host, port=port, server_version=node.server_version))
    known = {t.name for t in out}
    for member in snapshot.members:
        if member.name not in known and member.host and member.port:
            out.append(ResetTarget(name=member.name, host=member.host, port=member.port))
    return tuple(sorted(out, key=lambda t: t.name))


def reset_choices(snapshot: ClusterSnapshot) -> tuple[ResetChoice, ...]:
    """The scopes this cluster offers; slots per logical slot name, on the nodes that hold it."""
    targets = reset_targets(snapshot)
    leader = find_leader(snapshot)
    leader_name = leader.name if leader is not None else None
    choices: list[ResetChoice] = []
    slot_nodes: dict[str, list[str]] = {}
    for node in snapshot.nodes:
        for slot in node.slots:
            # Only logical slots have counters in pg_stat_replication_slots.
            if slot.slot_type in (None, "logical") and not slot.temporary:
                slot_nodes.setdefault(slot.slot_name, []).append(node.name)
    for name in sorted(slot_nodes):
        scope = ResetScope(kind="slot", slot_name=name)
        on = tuple(
            t for t in targets if t.name in slot_nodes[name] and scope.unsupported(t.server_version) is None
        )
        if on:
            choices.append(ResetChoice(scope=scope, nodes=on, default_nodes=tuple(t.name for t in on)))
    kinds: tuple[ResetKind, ...] = (*SHARED_KINDS, "database")
    for kind in kinds:
        scope = ResetScope(kind=kind)
        on = tuple(t for t in targets if scope.unsupported(t.server_version) is None)
        if not on:
            continue
        # Shared counters belong to the node that does the work (archiving: the primary).
        default = tuple(t.name for t in on if t.name == leader_name) or (on[0].name,)
        choices.append(ResetChoice(scope=scope, nodes=on, default_nodes=default))
    return tuple(choices)
