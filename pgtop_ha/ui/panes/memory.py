"""Memory pane: per-node totals and HugePages, then the top backends by Pss with page tables."""

from __future__ import annotations

import functools

from pgtop_ha.models.derive import shared_memory_on_hugepages
from pgtop_ha.models.snapshot import ClusterSnapshot, NodeSnapshot, Process
from pgtop_ha.models.verdict import Mark
from pgtop_ha.ui.format import count, human_bytes
from pgtop_ha.ui.panes.base import (
    Column,
    Context,
    PaneSpec,
    Row,
    SameInputs,
    cell,
    marked,
    name_column,
    num,
    same_row,
)

TOP = 8

COLUMNS = (
    name_column("node", "Node"),
    Column("pid", "PID", right=True),
    Column("what", "Process"),
    Column("state", "State"),
    Column("pss", "Pss", right=True),
    Column("uss", "USS", right=True),
    Column("rss", "RSS", right=True),
    Column("pt", "PageTbl", right=True),
    Column("swap", "Swap", right=True),
)


# Size columns and the Process field each shows.
_SIZES = (
    ("pss", "pss_bytes"),
    ("uss", "uss_bytes"),
    ("rss", "rss_bytes"),
    ("pt", "pagetable_bytes"),
    ("swap", "swap_bytes"),
)


def _sums(procs: tuple[Process, ...]) -> tuple[int | None, ...]:
    """Per size column, the sum over the processes that have it (None when none has)."""
    sums: list[int | None] = [None] * len(_SIZES)
    for p in procs:
        for i, (_, attr) in enumerate(_SIZES):
            v = getattr(p, attr)
            if v is not None:
                total = sums[i]
                sums[i] = v if total is None else total + v
    return tuple(sums)


def _total(node: NodeSnapshot) -> Row:
    note = node.unavailable.get("processes.memory")
    if note is None and node.memory_source:
        note = f"via {node.memory_source}"
    sums = _sums(node.processes)
    cells = {
        "node": cell(node.name),
        "pid": num("", None),
        "what": cell(f"TOTAL {len(node.processes)} procs"),  # HugePages: the row below (_hugepages)
        "state": cell(note or ""),
        **{key: num(human_bytes(v), v) for (key, _), v in zip(_SIZES, sums, strict=True)},
    }
    return same_row(f"{node.name}|total", cells, node.name)


def _hugepages(node: NodeSnapshot, found: tuple[Mark, ...]) -> Row | None:
    """HugePages of the node's host: total, free, reserved, and whether shared memory uses them."""
    h = node.hugepages
    if h is None or (not h.total and h.setting in (None, "off")):
        return None
    used = shared_memory_on_hugepages(h)
    size = human_bytes(h.size_bytes) if h.size_bytes else "?"
    text = f"HugePages {count(h.total)} × {size}: {count(h.free)} free, {count(h.reserved)} reserved"
    state = {True: "shm in them", False: "shm NOT in them", None: "shm ?"}[used]
    if h.shared_memory_pages is not None and h.shared_memory_pages > 0:
        text += f", {count(h.shared_memory_pages)} needed"
    cells = {
        "node": cell(node.name),
        "pid": num("", None),
        "what": cell(text),
        "state": marked(f"{h.setting or '?'}: {state}", found, "state"),
        **{key: num("", None) for key, _ in _SIZES},
    }
    return same_row(f"{node.name}|hugepages", cells, node.name)


def _process_row(node: str, rank: int, p: Process) -> Row:
    """The row of the node's rank-th process by Pss, built from its model."""
    what = p.backend_type or "?"
    if p.application_name:
        what += f" ({p.application_name})"
    cells = {
        "node": cell(node),
        "pid": num(count(p.pid), p.pid),
        "what": cell(what),
        "state": cell(p.state or "-"),
        **{key: num(human_bytes(getattr(p, attr)), getattr(p, attr)) for key, attr in _SIZES},
    }
    # Keyed by rank, not pid: two backends of near-equal Pss trade places often, and a row
    # removed and another added re-lays out the table; a rank's cells changing repaints one row.
    return same_row(f"{node}|#{rank}", cells, node)


def rows(snapshot: ClusterSnapshot, ctx: Context) -> list[Row]:
    """Per node a total row, then its TOP processes by Pss (RSS counts shared_buffers each time)."""
    out = []
    for node in sorted(snapshot.nodes, key=lambda n: n.name):
        if not node.reachable:
            continue
        # Memory is read every 15 s on the dashboard and a quiet server lists the same processes:
        # in between, the same models, hence the same rows.
        note = node.unavailable.get("processes.memory")
        inputs = (node.hugepages, note, node.memory_source, *node.processes)
        huge = ctx.judged(snapshot).hugepages(node)
        out.extend(_NODES.rows(node.name, inputs, functools.partial(_node_rows, node, huge)))
    return out


_NODES = SameInputs()


def _node_rows(node: NodeSnapshot, huge_marks: tuple[Mark, ...]) -> list[Row]:
    """The node's total, its HugePages and its TOP processes by Pss."""
    out = [_total(node)]
    huge = _hugepages(node, huge_marks)
    if huge is not None:
        out.append(huge)
    ranked = sorted(node.processes, key=lambda p: p.pss_bytes or 0, reverse=True)[:TOP]
    out.extend(_process_row(node.name, rank, p) for rank, p in enumerate(ranked, 1))
    return out


PANE = PaneSpec(
    id="memory",
    title="Memory",
    key="7",
    columns=COLUMNS,
    rows=rows,
    per_member=True,
    help="per node totals, HugePages, top backends by Pss",
    needs=frozenset({"memory"}),
    focus_needs=frozenset({"memory_focus"}),
)
