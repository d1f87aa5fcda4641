"""Sessions: a client's transaction open too long, and a session idle in one.

Judged from the oldest open transactions every node reports each cycle (NodeReadings.open_transactions),
so `check`, the overview and the Sessions pane give the same verdict whether or not that pane is open.
"""

from __future__ import annotations

from pgtop_ha.judge.rules import SESSIONS_IDLE_IN_TRANSACTION, SESSIONS_LONG_TRANSACTION
from pgtop_ha.models.snapshot import NodeSnapshot, OpenTransaction, Process
from pgtop_ha.models.thresholds import Band, Level, Thresholds
from pgtop_ha.models.verdict import Mark

IDLE_IN_TRANSACTION = ("idle in transaction", "idle in transaction (aborted)")


def _limit(t: Band, level: Level) -> str:
    """The limit ``level`` was crossed at, in words (600 -> "10m"): the text stays while it holds."""
    s = int(t.crit if level >= Level.CRIT else t.warn)
    if s % 3600 == 0 and s >= 3600:
        return f"{s // 3600}h"
    return f"{s // 60}m" if s % 60 == 0 and s >= 60 else f"{s}s"


def _marks(
    pid: int,
    who: str | None,
    state: str | None,
    xact_s: float | None,
    state_s: float | None,
    holds_xmin: bool | None,
    t: Thresholds,
) -> tuple[Mark, ...]:
    name = f"pid {pid}" + (f" ({who})" if who else "")
    out: list[Mark] = []
    level = t.xact_s.grade(xact_s)
    if level > Level.OK:
        text = f"{name} has had a transaction open past {_limit(t.xact_s, level)}"
        out.append(Mark(SESSIONS_LONG_TRANSACTION.id, level, text, "xact"))
    if state in IDLE_IN_TRANSACTION:
        level = t.idle_xact_s.grade(state_s)
        if level > Level.OK:
            text = f"{name} {state} past {_limit(t.idle_xact_s, level)}"
            if holds_xmin:
                text += ", holding the xmin horizon"
            out.append(Mark(SESSIONS_IDLE_IN_TRANSACTION.id, level, text, "state"))
    return tuple(out)


def open_transaction_marks(x: OpenTransaction, t: Thresholds) -> tuple[Mark, ...]:
    """What holds for one open transaction: too long, idle in it too long."""
    who = x.application_name or x.usename
    return _marks(x.pid, who, x.state, x.xact_s, x.state_s, x.holds_xmin, t)


def session_findings(node: NodeSnapshot, t: Thresholds) -> tuple[tuple[int, Mark], ...]:
    """The node's verdicts on its clients' open transactions, each with the backend's pid."""
    return tuple((x.pid, m) for x in node.open_transactions for m in open_transaction_marks(x, t))


def session_marks(p: Process, t: Thresholds) -> tuple[Mark, ...]:
    """The same rules on a row of the Sessions pane (its ages read with the pane's columns)."""
    holds = p.xmin_age is not None or None
    return _marks(p.pid, p.application_name or p.usename, p.state, p.xact_s, p.state_s, holds, t)
