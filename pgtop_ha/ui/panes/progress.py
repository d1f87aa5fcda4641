"""Progress pane: VACUUM, ANALYZE, CREATE INDEX, CLUSTER, base backups and COPY, with % and ETA."""

from __future__ import annotations

from pgtop_ha.models.derive import CopyRate, MaintenanceRate, copy_rates, copy_total, maintenance_rates
from pgtop_ha.models.snapshot import ClusterSnapshot, CopyProgress, Maintenance
from pgtop_ha.ui.format import age, bar, count, finite, human_bytes, rate, ratio
from pgtop_ha.ui.panes.base import Column, Context, PaneSpec, Row, cell, name_column, num

COLUMNS = (
    name_column("node", "Node"),
    Column("side", "What"),
    Column("relation", "Relation"),
    Column("phase", "Phase"),
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
        return "COPY publisher"
    if command.endswith("FROM"):
        return "COPY subscriber"
    return "COPY"


def _amount(value: int | None, unit: str | None) -> str:
    if unit == "bytes":
        return human_bytes(value)
    return f"{count(value)} {'blk' if unit == 'blocks' else 'tup'}" if value is not None else "?"


def _maintenance_row(node: str, m: Maintenance, speed: MaintenanceRate) -> Row:
    """The row of one maintenance operation, built from its model and its speed."""
    frac = _within(ratio(m.done, m.total))
    pct = None if frac is None else frac * 100
    per_s = None if speed.per_s is None else f"{_amount(round(speed.per_s), m.unit)}/s"
    cells = {
        "node": cell(node),
        "side": cell(m.command or "?"),
        "relation": cell(m.relation or m.datname or "-"),
        "phase": cell(m.phase or "?"),
        "bar": cell(bar(frac), sort=pct if pct is not None else -1.0),
        "pct": num(f"{pct:.0f}%" if pct is not None else "?", pct),
        "done": num(_amount(m.done, m.unit), m.done),
        "total": num(_amount(m.total, m.unit), m.total),
        "rate": num(per_s or "-", speed.per_s),
        "eta": num(age(speed.eta_s) if speed.eta_s is not None else "-", speed.eta_s),
        "who": cell(m.application_name or f"pid {m.pid}"),
    }
    return Row(key=f"{node}|m|{m.pid}", node=node, cells=cells)


def _fraction(copy: CopyProgress) -> float | None:
    percent = finite(copy.percent)
    return _within(percent / 100 if percent is not None else ratio(copy.bytes_processed, copy_total(copy)))


def _within(fraction: float | None) -> float | None:
    """A share done, held to 0..1 (a counter past its estimate is done, not 120 %)."""
    return None if fraction is None else max(0.0, min(1.0, fraction))


def rows(snapshot: ClusterSnapshot, ctx: Context) -> list[Row]:
    """A row per maintenance operation and per COPY, then per subscription its tables' states."""
    out = []
    rates = {} if ctx.previous is None else copy_rates(ctx.previous, snapshot)
    speeds = {} if ctx.previous is None else maintenance_rates(ctx.previous, snapshot)
    for node in sorted(snapshot.nodes, key=lambda n: n.name):
        for m in node.maintenance:
            out.append(_maintenance_row(node.name, m, speeds.get((node.name, m.pid), MaintenanceRate())))
        for c in node.copy_progress:
            frac = _fraction(c)
            total = copy_total(c)
            copy_rate = rates.get((node.name, c.pid), CopyRate())
            speed, eta = copy_rate.bytes_s, copy_rate.eta_s
            est = "~" if not c.bytes_total and total else ""
            pct = None if frac is None else frac * 100
            out.append(
                Row(
                    key=f"{node.name}|{c.pid}",
                    node=node.name,
                    cells={
                        "node": cell(node.name),
                        "side": cell(side(c)),
                        "relation": cell(c.relation or "?"),
                        "phase": cell(c.type or "-"),
                        "bar": cell(bar(frac), sort=pct if pct is not None else -1.0),
                        "pct": num(f"{est}{pct:.0f}%" if pct is not None else "?", pct),
                        "done": num(human_bytes(c.bytes_processed), c.bytes_processed),
                        "total": num(est + human_bytes(total) if total else "?", total),
                        "rate": num(rate(speed), speed),
                        "eta": num(age(eta) if eta is not None else "-", eta),
                        "who": cell(c.application_name or c.datname or "-"),
                    },
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
                    cells={
                        "node": cell(node.name),
                        "side": cell("subscription"),
                        "relation": cell(f"sub {sub.subname}" + (f" {sub.relation}" if sub.relation else "")),
                        "phase": cell("table sync"),
                        "bar": cell(bar(frac), sort=-1.0 if frac is None else frac * 100),
                        "pct": num(f"{ready}/{n}", frac),
                        "done": cell(text),
                        "total": cell(""),
                        "rate": cell(""),
                        "eta": cell(""),
                        "who": cell(f"pid {count(sub.pid)}" if sub.pid else "-"),
                    },
                )
            )
    return out


PANE = PaneSpec(
    id="progress",
    title="Progress",
    key="5",
    columns=COLUMNS,
    rows=rows,
    per_member=True,
    help="VACUUM, ANALYZE, CREATE INDEX, CLUSTER, backups, COPY",
)
