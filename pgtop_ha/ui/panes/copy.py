"""Copy pane: COPY progress with bars, rate and ETA, publisher and subscriber side."""

from __future__ import annotations

from pgtop_ha.models.snapshot import ClusterSnapshot, CopyProgress
from pgtop_ha.ui.format import age, bar, count, finite, human_bytes, rate, ratio
from pgtop_ha.ui.panes.base import Column, Context, PaneSpec, Row, cell, elapsed, num

COLUMNS = (
    Column("node", "Node"),
    Column("side", "Side"),
    Column("relation", "Relation"),
    Column("bar", "Progress"),
    Column("pct", "%", right=True),
    Column("done", "Done", right=True),
    Column("total", "Total", right=True),
    Column("rate", "Rate", right=True),
    Column("eta", "ETA", right=True),
    Column("who", "Who"),
)


def side(copy: CopyProgress) -> str:
    """Publisher side copies out (COPY TO), the subscriber copies in (COPY FROM)."""
    command = (copy.command or "").upper()
    if command.endswith("TO"):
        return "publisher"
    if command.endswith("FROM"):
        return "subscriber"
    return "?"


def _total(copy: CopyProgress) -> int | None:
    if copy.bytes_total:
        return copy.bytes_total
    return copy.estimated_total_bytes


def _fraction(copy: CopyProgress) -> float | None:
    percent = finite(copy.percent)
    fraction = percent / 100 if percent is not None else ratio(copy.bytes_processed, _total(copy))
    return None if fraction is None else max(0.0, min(1.0, fraction))


def _rate(snapshot: ClusterSnapshot, ctx: Context, node: str, copy: CopyProgress) -> float | None:
    prev = ctx.previous
    dt = elapsed(snapshot, prev)
    if prev is None or dt is None or copy.bytes_processed is None:
        return None
    pnode = prev.node(node)
    old = None if pnode is None else next((c for c in pnode.copy_progress if c.pid == copy.pid), None)
    if old is None or old.bytes_processed is None or copy.bytes_processed < old.bytes_processed:
        return None
    return ratio(copy.bytes_processed - old.bytes_processed, dt)


def rows(snapshot: ClusterSnapshot, ctx: Context) -> list[Row]:
    """A row per running COPY, then a row per subscription with its tables' sync states."""
    out = []
    for node in sorted(snapshot.nodes, key=lambda n: n.name):
        for c in node.copy_progress:
            frac = _fraction(c)
            total = _total(c)
            speed = _rate(snapshot, ctx, node.name, c)
            eta = None
            if speed and total and c.bytes_processed is not None:
                left = ratio(total - c.bytes_processed, speed)
                eta = None if left is None else max(0.0, left)
            est = "~" if not c.bytes_total and total else ""
            pct = None if frac is None else frac * 100
            out.append(
                Row(
                    key=f"{node.name}|{c.pid}",
                    node=node.name,
                    cells=(
                        cell(node.name),
                        cell(side(c)),
                        cell(c.relation or "?"),
                        cell(bar(frac), sort=pct if pct is not None else -1.0),
                        num(f"{est}{pct:.0f}%" if pct is not None else "?", pct),
                        num(human_bytes(c.bytes_processed), c.bytes_processed),
                        num(est + human_bytes(total) if total else "?", total),
                        num(rate(speed), speed),
                        num(age(eta) if eta is not None else "-", eta),
                        cell(c.application_name or c.datname or "-"),
                    ),
                )
            )
        for sub in node.subscriptions:
            # table_states counts tables per pg_subscription_rel.srsubstate letter (i,d,f,s,r).
            states = sub.table_states
            text = " ".join(f"{k}:{v}" for k, v in sorted(states.items())) or "-"
            ready = states.get("r", 0) + states.get("s", 0)
            n = sum(states.values())
            frac = ratio(ready, n)
            out.append(
                Row(
                    key=f"{node.name}|sub|{sub.subname}|{sub.relation or ''}",
                    node=node.name,
                    cells=(
                        cell(node.name),
                        cell("subscriber"),
                        cell(f"sub {sub.subname}" + (f" {sub.relation}" if sub.relation else "")),
                        cell(bar(frac), sort=-1.0 if frac is None else frac * 100),
                        num(f"{ready}/{n}", frac),
                        cell(text),
                        cell(""),
                        cell(""),
                        cell(""),
                        cell(f"pid {count(sub.pid)}" if sub.pid else "-"),
                    ),
                )
            )
    return out


PANE = PaneSpec("copy", "Copy", "5", COLUMNS, rows)
