"""Waits pane: per node, what processes wait on now and over the last minute, with a trend.

Sampled from each snapshot's pg_stat_activity (no extra query); models/waits.py says which
processes count. The Kind column tells the client's side (ClientRead/ClientWrite: the network or
a slow application) from the database's (Lock, IO, LWLock) and CPU.
"""

from __future__ import annotations

from pgtop_ha.judge.rules import LOCKS_WAITS
from pgtop_ha.models.snapshot import ClusterSnapshot
from pgtop_ha.models.waits import kind, window
from pgtop_ha.ui.format import count, shown, sparkline
from pgtop_ha.ui.panes.base import Column, Context, PaneSpec, Place, Row, by_rule, cell, name_column, num

COLUMNS = (
    name_column("node", "Node"),
    Column("kind", "Kind"),
    Column("class", "Class"),
    Column("event", "Event"),
    Column("now", "Now", right=True),
    Column("mean", "Avg 1m", right=True),
    Column("trend", "Last minute"),
)


def rows(snapshot: ClusterSnapshot, ctx: Context) -> list[Row]:
    """Every wait seen on a node in the last minute, the most frequent first."""
    out = []
    for t in window(ctx.history, snapshot):
        k = kind(t.wait_class, t.event)
        # Lock waits are coloured as the judge grades them on the node (by how long they last).
        on_node = ctx.on(snapshot, t.node) if k == "lock" and t.now else ()
        out.append(
            Row(
                key=f"{t.node}|{t.wait_class}|{t.event}",
                node=t.node,
                cells={
                    "node": cell(t.node),
                    "kind": by_rule(cell(k), on_node, LOCKS_WAITS),
                    "class": cell(shown(t.wait_class)),
                    "event": cell(shown(t.event) if t.event else "-"),
                    "now": num(count(t.now), t.now),
                    "mean": num(f"{t.mean:.1f}", t.mean),
                    "trend": cell(sparkline(t.samples, width=20), sort=t.mean),
                },
            )
        )
    return out


PANE = PaneSpec(
    id="waits",
    title="Waits",
    key="w",
    columns=COLUMNS,
    rows=rows,
    per_member=True,
    help="top wait events per node over the last minute (key only)",
    place=Place(dashboard=False),
)
