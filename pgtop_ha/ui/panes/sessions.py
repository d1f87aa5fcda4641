"""Sessions pane: every member's client sessions, the longest running first; idle ones counted.

Read only while this pane is on screen (the "sessions" need adds its columns to pg_stat_activity).
"""

from __future__ import annotations

from pgtop_ha.models.derive import listed_processes
from pgtop_ha.models.snapshot import ClusterSnapshot, Process
from pgtop_ha.models.sources import node_state
from pgtop_ha.models.verdict import Mark
from pgtop_ha.ui.format import age, age_step, count, query_line, shown
from pgtop_ha.ui.panes.base import (
    Column,
    Context,
    PaneSpec,
    Place,
    Row,
    blanks,
    cell,
    marked,
    more_row,
    name_column,
    num,
    sortable,
    why_row,
)

CLIENT = "client backend"
IDLE = "idle"

COLUMNS = (
    name_column("node", "Node"),
    Column("pid", "PID", right=True),
    Column("db", "DB", width=12),
    Column("user", "User", width=12),
    Column("app", "Application", width=16),
    Column("client", "Client", width=15),
    Column("state", "State", width=19),
    Column("wait", "Waits on", width=18),
    Column("time", "Query", right=True),
    Column("xact", "Xact", right=True),
    Column("since", "In state", right=True),
    Column("xmin", "Xmin age", right=True),
    Column("query", "Query text", width=60),
)


def running_for(p: Process) -> float | None:
    """How long the session has been at it: its query when active, else its transaction."""
    return p.query_s if p.state == "active" else p.xact_s


def _age(seconds: float | None) -> tuple[str, float | None]:
    # The step, not the second: a row stays the same object while its age text does not change.
    return age(seconds), age_step(seconds)


def _session_row(node: str, p: Process, ctx: Context, marks: tuple[Mark, ...]) -> Row:
    wait = f"{p.wait_event_type}:{p.wait_event}" if p.wait_event_type else "-"
    text, step = _age(running_for(p) if p.state == "active" else None)
    xact, xact_step = _age(p.xact_s)
    since, since_step = _age(p.state_s)
    return Row(
        key=f"{node}|{p.pid}",
        node=node,
        also=f"{p.application_name or ''} {p.usename or ''}",
        cells={
            "node": cell(node),
            "pid": num(count(p.pid), p.pid),
            "db": cell(shown(p.datname or "-")),
            "user": cell(shown(p.usename or "-")),
            "app": cell(shown(p.application_name or "-")),
            "client": cell(shown(p.client_addr or "local")),
            "state": marked(shown(p.state or "?"), marks, "state"),
            "wait": cell(shown(wait)),
            "time": num(text, step),
            "xact": marked(xact, marks, "xact", sortable(xact_step)),
            "since": num(since, since_step),
            "xmin": num(count(p.xmin_age), p.xmin_age),
            "query": cell(query_line(p.query or "")),
        },
    )


def rows(snapshot: ClusterSnapshot, ctx: Context) -> list[Row]:
    """Per node its non-idle client sessions, longest running first, then a count of the idle."""
    out: list[Row] = []
    for node in sorted(snapshot.nodes, key=lambda n: n.name):
        if node_state(node) == "unreachable":
            continue
        reason = node.unavailable.get("sessions") or node.unavailable.get("processes")
        if reason:
            out.append(why_row(COLUMNS, node.name, "query", reason))
            continue
        clients = [p for p in node.processes if p.backend_type == CLIENT]
        busy = [p for p in clients if p.state != IDLE]
        busy.sort(key=lambda p: -(running_for(p) or 0.0))
        judged = ctx.judged(snapshot)
        out.extend(_session_row(node.name, p, ctx, judged.session(p)) for p in busy)
        idle = len(clients) - len(busy) + (node.idle_sessions or 0)
        if idle:
            cells = {**blanks(*(c.key for c in COLUMNS)), "node": cell(node.name)}
            cells["state"] = cell(f"{idle} idle")
            out.append(Row(key=f"{node.name}|idle", node=node.name, cells=cells))
        out.extend(more_row(COLUMNS, node.name, listed_processes(node), node.processes_total, "processes"))
    return out


def backend_of(row_key: str) -> tuple[str, int] | None:
    """The session a row shows: (member, pid); None for the idle count and the notes."""
    node, _, pid = row_key.rpartition("|")
    return (node, int(pid)) if node and pid.isdigit() else None


PANE = PaneSpec(
    id="sessions",
    title="Sessions",
    key="a",
    columns=COLUMNS,
    rows=rows,
    help="client sessions, longest first; k/K cancel/terminate",
    place=Place(dashboard=False),
    needs=frozenset({"sessions"}),
    per_member=True,
    backend_of=backend_of,
)
