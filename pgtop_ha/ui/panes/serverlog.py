"""Log pane: the members' own server logs, newest first: the last lines read, then older news.

The lines of the last snapshots, every severity; older than those, the lines the timeline kept as
events (ERROR, FATAL, PANIC, checkpoints, restarts, promotions).
"""

from __future__ import annotations

from datetime import datetime

from pgtop_ha.judge.rules import LOG_FATAL, LOG_PANIC
from pgtop_ha.models.snapshot import ClusterSnapshot
from pgtop_ha.ui.format import shown
from pgtop_ha.ui.panes.base import Column, Context, PaneSpec, Place, Row, by_rule, cell, name_column, why_row

MAX_LINES = 200

COLUMNS = (
    Column("time", "Time"),
    name_column("node", "Node"),
    Column("severity", "Severity"),
    Column("message", "Message", width=100),
)

Entry = tuple[datetime | None, str, str, str]  # at, node, severity, message
# A severity is coloured while the judge holds its rule on the node (a recent PANIC, a FATAL
# that keeps coming), not for every line that says it.
_RULES_OF = {"PANIC": (LOG_PANIC,), "FATAL": (LOG_FATAL,)}


def _entries(snapshot: ClusterSnapshot, ctx: Context) -> list[Entry]:
    out: list[Entry] = []
    seen: set[tuple[str, str]] = set()
    for snap in (*ctx.history, snapshot):
        for node in snap.nodes:
            for line in node.server_log.lines if node.server_log else ():
                out.append((line.at, node.name, line.severity or "?", line.message))
                seen.add((node.name, f"{line.severity}: {line.message}"))
    for ev in ctx.events:
        if ev.kind == "log" and ev.node is not None and (ev.node, ev.text) not in seen:
            severity, _, message = ev.text.partition(": ")
            out.append((ev.at, ev.node, severity, message))
    return out


def rows(snapshot: ClusterSnapshot, ctx: Context) -> list[Row]:
    """The newest MAX_LINES log entries of every member; members whose log is not read say why."""
    out: list[Row] = []
    for member in sorted(snapshot.nodes, key=lambda n: n.name):
        reason = member.unavailable.get("server_log")
        if reason and member.reachable:
            out.append(why_row(COLUMNS, member.name, "message", reason))
    entries = sorted(_entries(snapshot, ctx), key=lambda e: e[0].timestamp() if e[0] else 0.0, reverse=True)
    counts: dict[tuple[str, str], int] = {}
    for at, node, severity, message in entries[:MAX_LINES]:
        stamp = at.strftime("%H:%M:%S") if at else "-"
        n = counts[(node, stamp)] = counts.get((node, stamp), 0) + 1
        out.append(
            Row(
                key=f"{node}|{at.isoformat() if at else '-'}|{n}",
                node=node,
                cells={
                    "time": cell(stamp, sort=at.timestamp() if at else 0.0),
                    "node": cell(node),
                    "severity": by_rule(
                        cell(shown(severity)), ctx.on(snapshot, node), *_RULES_OF.get(severity, ())
                    ),
                    "message": cell(shown(message)),
                },
            )
        )
    return out


PANE = PaneSpec(
    id="log",
    title="Log",
    key="j",
    columns=COLUMNS,
    rows=rows,
    help="the members' server logs, newest first",
    place=Place(dashboard=False),
    postgres=True,
)
