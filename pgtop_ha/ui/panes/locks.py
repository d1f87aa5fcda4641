"""Locks pane: blocking trees per node (root blocker, then its waiters), and locks per mode.

Read only while this pane is on screen (the "locks" need: one more part of the same statement).
"""

from __future__ import annotations

from pgtop_ha.judge.rules import LOCKS_WAITS
from pgtop_ha.models.locks import STOPS_EVERYTHING, blocking_trees
from pgtop_ha.models.snapshot import ClusterSnapshot
from pgtop_ha.models.sources import node_state
from pgtop_ha.models.verdict import Verdict
from pgtop_ha.ui.format import age, count, query_line, shown
from pgtop_ha.ui.panes.base import (
    Column,
    Context,
    PaneSpec,
    Place,
    Row,
    Table,
    by_rule,
    cell,
    more_row,
    name_column,
    num,
    why_row,
)

COLUMNS = (
    name_column("node", "Node"),
    Column("pid", "PID"),
    Column("role", "Role"),
    Column("mode", "Waits for"),
    Column("relation", "Relation", width=32),
    Column("xact", "Xact age", right=True),
    Column("state", "State"),
    Column("who", "Who", width=16),
    Column("query", "Query", width=60),
)
COUNT_COLUMNS = (
    name_column("node", "Node"),
    Column("mode", "Lock mode"),
    Column("granted", "Granted", right=True),
    Column("waiting", "Waiting", right=True),
)


def rows(snapshot: ClusterSnapshot, ctx: Context) -> list[Row]:
    """Per node, each root blocker and its waiters indented below it; nodes not read say why."""
    out = []
    for node in sorted(snapshot.nodes, key=lambda n: n.name):
        if node_state(node) == "unreachable":
            continue
        reason = node.unavailable.get("locks")
        if reason:
            out.append(why_row(COLUMNS, node.name, "query", reason))
            continue
        # Coloured as the judge grades the node's lock waits (by how long they last), no sooner.
        graded = ctx.on(snapshot, node.name)
        for line in blocking_trees(node.locks or ()):
            p = line.process
            waits = p.waiting_mode is not None
            if not waits:
                role = f"blocks {line.waiters}"
                shown_at = graded if line.waiters and line.depth == 0 else _PLAIN
            else:
                role = "waits" + (f", blocks {line.waiters}" if line.waiters else "")
                shown_at = graded
            indent = "  " * line.depth + ("└ " if line.depth else "")
            out.append(
                Row(
                    key=f"{node.name}|{line.root}|{p.pid}|{line.depth}",
                    node=node.name,
                    cells={
                        "node": cell(node.name),
                        "pid": by_rule(cell(indent + count(p.pid), sort=p.pid), shown_at, LOCKS_WAITS),
                        "role": by_rule(cell(role), shown_at, LOCKS_WAITS),
                        "mode": by_rule(
                            cell(p.waiting_mode or "-"),
                            shown_at if p.waiting_mode == STOPS_EVERYTHING else _PLAIN,
                            LOCKS_WAITS,
                        ),
                        "relation": cell(shown(p.relation) if p.relation else "-"),
                        "xact": num(age(p.xact_age_s), p.xact_age_s),
                        "state": cell(p.state or "?"),
                        "who": cell(shown(p.application_name or p.usename or p.backend_type or "?")),
                        "query": cell(query_line(p.query or "")),
                    },
                )
            )
        out.extend(more_row(COLUMNS, node.name, len(node.locks or ()), node.locks_total, "more"))
    return out


def count_rows(snapshot: ClusterSnapshot, ctx: Context) -> list[Row]:
    """Heavyweight locks per mode and node; modes with waiters are marked."""
    out = []
    for node in sorted(snapshot.nodes, key=lambda n: n.name):
        if node_state(node) == "unreachable":
            continue
        graded = ctx.on(snapshot, node.name)
        for c in node.lock_counts or ():
            shown_at = graded if c.waiting else _PLAIN
            out.append(
                Row(
                    key=f"{node.name}|{c.mode}",
                    node=node.name,
                    cells={
                        "node": cell(node.name),
                        "mode": by_rule(cell(c.mode), shown_at, LOCKS_WAITS),
                        "granted": num(count(c.granted), c.granted),
                        "waiting": by_rule(num(count(c.waiting), c.waiting), shown_at, LOCKS_WAITS),
                    },
                )
            )
    return out


_PLAIN: tuple[Verdict, ...] = ()


def root_blocker_of(row_key: str) -> tuple[str, int] | None:
    """The root blocker of the tree a row is in: (member, pid); cancel or terminate act on it."""
    parts = row_key.rsplit("|", 3)
    if len(parts) != 4 or not parts[1].isdigit():
        return None
    return parts[0], int(parts[1])


PANE = PaneSpec(
    id="locks",
    title="Locks",
    key="l",
    columns=COLUMNS,
    rows=rows,
    more=(Table("locks-modes", COUNT_COLUMNS, count_rows),),
    help="who blocks whom: root blockers, waiters, modes",
    place=Place(dashboard=False),
    needs=frozenset({"locks"}),
    backend_of=root_blocker_of,
    postgres=True,
)
