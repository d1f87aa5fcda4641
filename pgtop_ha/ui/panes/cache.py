"""Cache pane: each node's shared_buffers in use, its hottest relations, autoprewarm, and after a
failover the new primary's cache beside what the old one held (a cold cache is a slow first hour).

Read only while the pane is on screen, every 15 s (pg_buffercache visits every buffer).
"""

from __future__ import annotations

from pgtop_ha.judge.view import after_failover, relation_share, used_share
from pgtop_ha.models.leader import is_leader
from pgtop_ha.models.snapshot import ClusterSnapshot
from pgtop_ha.models.sources import node_state
from pgtop_ha.ui.format import count, human_bytes, shown
from pgtop_ha.ui.panes.base import (
    Column,
    Context,
    PaneSpec,
    Place,
    Row,
    Table,
    blanks,
    cell,
    name_column,
    num,
)

PAGE = 8192  # PostgreSQL's default block size: buffers shown in bytes
COLUMNS = (
    name_column("node", "Node"),
    Column("role", "Role"),
    Column("used", "In use", right=True),
    Column("bytes", "Cached", right=True),
    Column("dirty", "Dirty", right=True),
    Column("prewarm", "Autoprewarm"),
    Column("note", "Note", width=60),
)
TOP_COLUMNS = (
    name_column("node", "Node"),
    Column("relation", "Relation", width=40),
    Column("cached", "Cached", right=True),
    Column("share", "Of relation", right=True),
)


def _pct(share: float | None) -> str:
    return "?" if share is None else f"{share * 100:.0f}%"


def rows(snapshot: ClusterSnapshot, ctx: Context) -> list[Row]:
    """One row per node: share of shared_buffers in use; the failover's handover on the leader."""
    handover = after_failover(ctx.history, snapshot)
    out = []
    for node in sorted(snapshot.nodes, key=lambda n: n.name):
        if node_state(node) == "unreachable":
            continue
        leader = is_leader(snapshot.member(node.name))
        c = node.cache
        if c is None:
            why = node.unavailable.get("cache", "not read yet (every 15 s while this pane is on screen)")
            cells = {**blanks(*(col.key for col in COLUMNS)), "node": cell(node.name), "note": cell(why)}
            cells["role"] = cell("leader" if leader else "replica")
            out.append(Row(key=node.name, node=node.name, cells=cells))
            continue
        share = used_share(c)
        note = ""
        if handover is not None and handover.new == node.name:
            # Said, not graded: a cache warms by itself, and the judge grades one snapshot, not a handover.
            note = f"new leader: {_pct(share)} in use; {handover.old} held {_pct(handover.old_used)}"
        out.append(
            Row(
                key=node.name,
                node=node.name,
                cells={
                    "node": cell(node.name),
                    "role": cell("leader" if leader else "replica"),
                    "used": num(_pct(share), share),
                    "bytes": num(human_bytes((c.used or 0) * PAGE), c.used),
                    "dirty": num(count(c.dirty), c.dirty),
                    "prewarm": cell({True: "running", False: "off", None: "?"}[c.autoprewarm]),
                    "note": cell(note),
                },
            )
        )
    return out


def top_rows(snapshot: ClusterSnapshot, ctx: Context) -> list[Row]:
    """The hottest relations of each node's database, with how much of each is cached."""
    out = []
    for node in sorted(snapshot.nodes, key=lambda n: n.name):
        if node.cache is None or node_state(node) == "unreachable":
            continue
        for r in node.cache.top:
            share = relation_share(r.buffers or 0, r.relation_pages)
            out.append(
                Row(
                    key=f"{node.name}|{r.relation}",
                    node=node.name,
                    cells={
                        "node": cell(node.name),
                        "relation": cell(shown(r.relation)),
                        "cached": num(human_bytes((r.buffers or 0) * PAGE), r.buffers),
                        "share": num(_pct(share), share),
                    },
                )
            )
    return out


PANE = PaneSpec(
    id="cache",
    title="Cache",
    key="c",
    columns=COLUMNS,
    rows=rows,
    more=(Table("cache-top", TOP_COLUMNS, top_rows),),
    help="shared_buffers in use, hot relations, cold new primary",
    place=Place(dashboard=False),
    needs=frozenset({"cache"}),
    postgres=True,
)
