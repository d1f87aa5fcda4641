"""Parameters pane: settings pending a restart and settings that differ between members.

Each member's value side by side, what applying it takes (its GUC context), the value a pending
one would take, and Patroni's /config value beside them. Read only while the pane is on screen,
on the cycles that follow a reload (the "parameters" need).
"""

from __future__ import annotations

from pgtop_ha.judge.rules import PATRONI_PENDING_RESTART
from pgtop_ha.models.derive import member_names
from pgtop_ha.models.parameters import parameters, restart_needed
from pgtop_ha.models.snapshot import ClusterSnapshot
from pgtop_ha.models.thresholds import Level
from pgtop_ha.ui.format import shown
from pgtop_ha.ui.panes.base import Column, Context, PaneSpec, Place, Row, by_rule, cell

FIXED = (
    Column("name", "Parameter"),
    Column("why", "Why"),
    Column("apply", "Takes"),
)
TAIL = (
    Column("pending", "After restart", width=24),
    Column("patroni", "Patroni /config", width=24),
)


def columns(snapshot: ClusterSnapshot) -> tuple[Column, ...]:
    """The fixed columns, one per member, then the pending value and Patroni's."""
    # A hostile /cluster may list a name twice: one column each (a table refuses duplicate keys).
    names = dict.fromkeys(member_names(snapshot))
    members = tuple(Column(f"m:{name}", shown(name, 24), width=24) for name in names)
    return FIXED + members + TAIL


def _after(values: dict[str, str]) -> str:
    if not values:
        return "-"
    if len(set(values.values())) == 1:
        return shown(next(iter(values.values())))  # the same on every member that waits
    return ", ".join(f"{n}: {shown(v)}" for n, v in values.items())


def rows(snapshot: ClusterSnapshot, ctx: Context) -> list[Row]:
    """Pending restarts first, then drift; a node whose settings were not read shows '-'."""
    names = list(dict.fromkeys(member_names(snapshot)))
    found = parameters(snapshot)
    found.sort(key=lambda p: (not p.pending, p.name))
    out = []
    for p in found:
        why = " + ".join(w for w, on in (("pending restart", bool(p.pending)), ("differs", p.drift)) if on)
        # Graded as the judge grades the members that wait (Patroni's pending_restart).
        waits = [q for node in p.pending for q in ctx.on(snapshot, node)]
        cells = {
            "name": by_rule(cell(shown(p.name)), waits, PATRONI_PENDING_RESTART),
            "why": by_rule(cell(why), waits, PATRONI_PENDING_RESTART),
            "apply": cell(restart_needed(p.context)),
            "pending": cell(_after(p.pending_values)),
            "patroni": cell(shown(p.patroni) if p.patroni is not None else "-"),
        }
        for name in names:
            value = p.values.get(name)
            # A value that differs is shown, not graded: members keep some apart by design
            # (log_directory, the recovery targets), and only the DBA knows which.
            cells[f"m:{name}"] = cell(shown(value) if value is not None else "-")
        out.append(Row(key=p.name, cells=cells))
    if not out:
        read = [n.name for n in snapshot.nodes if n.parameters]
        text = "nothing pending, no drift" if read else "settings not read yet (they are read after a reload)"
        cells = {c.key: cell("") for c in columns(snapshot)}
        cells["name"] = cell(text, Level.OK if read else None)
        out.append(Row(key="|none", cells=cells))
    return out


PANE = PaneSpec(
    id="parameters",
    title="Parameters",
    key="g",
    columns=FIXED + TAIL,
    dynamic_columns=columns,
    rows=rows,
    help="pending restarts, settings that differ between members",
    place=Place(dashboard=False),
    needs=frozenset({"parameters"}),
    postgres=True,
)
