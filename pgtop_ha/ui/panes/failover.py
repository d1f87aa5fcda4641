"""Failover pane: if the leader died now, who Patroni would promote, why each other member would not,
and what each would lose (WAL the leader wrote that it has not flushed)."""

from __future__ import annotations

from pgtop_ha.models.snapshot import ClusterSnapshot
from pgtop_ha.ui.format import duration, human_bytes, shown
from pgtop_ha.ui.panes.base import (
    Column,
    Context,
    PaneSpec,
    Place,
    Row,
    blanks,
    cell,
    marked,
    name_column,
    num,
    placeholder,
    worst_state,
)

COLUMNS = (
    name_column("member", "Member"),
    Column("health", "Health"),
    Column("would", "If the leader died"),
    Column("position", "Behind", right=True),
    Column("priority", "Prio", right=True),
    Column("sync", "Sync"),
    Column("risk", "At risk", right=True),
    Column("risk_s", "At risk t", right=True),
    Column("why", "Why not"),
)
NO_LEADER = "no leader: nothing to forecast (Patroni is electing one, or cannot)"


def rows(snapshot: ClusterSnapshot, ctx: Context) -> list[Row]:
    """One row for the race as a whole, then one per member that could race."""
    f = ctx.forecast(snapshot)
    if f.leader is None:
        return [placeholder(COLUMNS, NO_LEADER)]
    marks = ctx.judged(snapshot).outlook()
    winner = " or ".join(f.winners) if f.winners else "nobody"  # a tie: whoever takes the key first
    outage = f"{duration(f.outage_min_s)}–{duration(f.outage_max_s)}" if f.outage_max_s is not None else "?"
    if f.past_outages_s:
        outage += f" (past here: {', '.join(duration(s) for s in f.past_outages_s)})"
    lost = f"; logical slots lost: {', '.join(f.slots_lost)}" if f.slots_lost else ""
    summary = f"{winner} takes over ({f.mode}, {f.policy}); writes stop about {outage}{lost}"
    head = Row(
        key="|race",
        cells={
            **blanks(*(c.key for c in COLUMNS)),
            "member": cell(f"⇢ {f.leader}"),
            "health": worst_state(marks),
            "would": marked(shown(summary), marks),
            "why": cell(shown("; ".join(m.text for m in marks))),
        },
    )
    mode = f"synchronous_mode {'off' if f.mode == 'async' else f.mode}" + (", strict" if f.strict else "")
    waits = f"; commits wait for {f.commit_waits_for}" if f.commit_waits_for else ""
    sync_row = Row(
        key="|sync",
        cells={
            **blanks(*(c.key for c in COLUMNS)),
            "member": cell("⇢ sync"),
            "would": cell(shown(mode + waits)),
        },
    )
    out = [head, sync_row]
    for c in f.contenders:
        known = c.position is not None and f.leader_position is not None
        behind = max(0, (f.leader_position or 0) - (c.position or 0)) if known else None
        if c.wins:
            would = "tie: first to the key" if len(f.winners) > 1 else "promoted"
        else:
            would = "races, loses" if c.eligible else "does not race"
        out.append(
            Row(
                key=c.name,
                node=c.name,
                cells={
                    "member": cell(c.name),
                    "health": worst_state(marks if c.wins else ()),
                    "would": cell(would),
                    "position": num(human_bytes(behind), behind),
                    "priority": num(str(c.priority), c.priority),
                    "sync": cell(c.sync_state or "?"),
                    "risk": num(human_bytes(c.at_risk_bytes), c.at_risk_bytes),
                    "risk_s": num(duration(c.at_risk_s), c.at_risk_s),
                    "why": cell(shown(c.reason)),
                },
            )
        )
    return out


PANE = PaneSpec(
    id="failover",
    title="Failover",
    key="f",
    columns=COLUMNS,
    rows=rows,
    help="if the leader died: who takes over, why not others",
    place=Place(dashboard=False),
)
