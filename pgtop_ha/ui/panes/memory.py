"""Memory pane: per-node totals and HugePages, then the top backends by Pss with page tables."""

from __future__ import annotations

from pgtop_ha.models.snapshot import ClusterSnapshot, NodeSnapshot, Process
from pgtop_ha.ui.format import count, human_bytes
from pgtop_ha.ui.panes.base import Column, Context, PaneSpec, Row, cell, num

TOP = 8

COLUMNS = (
    Column("node", "Node"),
    Column("pid", "PID", right=True),
    Column("what", "Process"),
    Column("state", "State"),
    Column("pss", "Pss", right=True),
    Column("uss", "USS", right=True),
    Column("rss", "RSS", right=True),
    Column("pt", "PageTbl", right=True),
    Column("swap", "Swap", right=True),
)


def _sum(procs: tuple[Process, ...], attr: str) -> int | None:
    values = [getattr(p, attr) for p in procs if getattr(p, attr) is not None]
    return sum(values) if values else None


def _total(node: NodeSnapshot) -> Row:
    procs = node.processes
    huge = "-"
    if node.hugepages_total:
        used = node.hugepages_total - (node.hugepages_free or 0)
        huge = f"HugePages {count(used)}/{count(node.hugepages_total)}"
    note = node.unavailable.get("processes.memory")
    if note is None and node.memory_source:
        note = f"via {node.memory_source}"
    return Row(
        key=f"{node.name}|total",
        node=node.name,
        cells=(
            cell(node.name),
            num("", None),
            cell(f"TOTAL {len(procs)} procs" + (f", {huge}" if huge != "-" else "")),
            cell(note or ""),
            num(human_bytes(_sum(procs, "pss_bytes")), _sum(procs, "pss_bytes")),
            num(human_bytes(_sum(procs, "uss_bytes")), _sum(procs, "uss_bytes")),
            num(human_bytes(_sum(procs, "rss_bytes")), _sum(procs, "rss_bytes")),
            num(human_bytes(_sum(procs, "pagetable_bytes")), _sum(procs, "pagetable_bytes")),
            num(human_bytes(_sum(procs, "swap_bytes")), _sum(procs, "swap_bytes")),
        ),
    )


def rows(snapshot: ClusterSnapshot, ctx: Context) -> list[Row]:
    """Per node a total row, then its TOP processes by Pss (RSS counts shared_buffers each time)."""
    out = []
    for node in sorted(snapshot.nodes, key=lambda n: n.name):
        if not node.reachable:
            continue
        out.append(_total(node))
        ranked = sorted(node.processes, key=lambda p: p.pss_bytes or 0, reverse=True)[:TOP]
        for p in ranked:
            what = p.backend_type or "?"
            if p.application_name:
                what += f" ({p.application_name})"
            out.append(
                Row(
                    key=f"{node.name}|{p.pid}",
                    node=node.name,
                    cells=(
                        cell(node.name),
                        num(count(p.pid), p.pid),
                        cell(what),
                        cell(p.state or "-"),
                        num(human_bytes(p.pss_bytes), p.pss_bytes),
                        num(human_bytes(p.uss_bytes), p.uss_bytes),
                        num(human_bytes(p.rss_bytes), p.rss_bytes),
                        num(human_bytes(p.pagetable_bytes), p.pagetable_bytes),
                        num(human_bytes(p.swap_bytes), p.swap_bytes),
                    ),
                )
            )
    return out


PANE = PaneSpec("memory", "Memory", "7", COLUMNS, rows)
