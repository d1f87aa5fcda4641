"""What an action reports back: one result per action, one line per node for resets."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from pgtop_ha.models.base import Frozen

# Called with one short line per step ("POST /switchover to node1", "waiting for node2 to lead").
Progress = Callable[[str], None]


class NodeResult(Frozen):
    """The outcome of one action on one node."""

    node: str
    ok: bool
    message: str
    duration_s: float = 0.0


class ActionResult(Frozen):
    """The outcome of one operator action, as shown on screen and written to the audit log."""

    action: str
    target: str | None = None
    ok: bool
    status: int | None = None
    reason: str | None = None
    message: str
    started_at: datetime
    duration_s: float
    nodes: tuple[NodeResult, ...] = ()
    new_leader: str | None = None
    steps: tuple[str, ...] = ()


class AuditEntry(Frozen):
    """One attempted action as appended to the audit log (never a password)."""

    at: datetime
    user: str
    cluster: str | None = None
    action: str
    target: str | None = None
    ok: bool
    status: int | None = None
    result: str
    duration_s: float
