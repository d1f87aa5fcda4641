"""pgpool-II pane: SHOW pool_nodes beside Patroni, and pool_processes in counts.

One row per backend node: pgpool's status and role, the backend's own, and the Patroni member at
that address, so a primary that is not Patroni's leader or a node kept down reads off one line.
"""

from __future__ import annotations

from pgtop_ha.judge.rules import POOLER_CONTRADICTION
from pgtop_ha.judge.view import Judgement
from pgtop_ha.models.derive import select_rates
from pgtop_ha.models.poolers import PgpoolState
from pgtop_ha.models.roles import short_name
from pgtop_ha.models.snapshot import ClusterSnapshot
from pgtop_ha.models.sources import source_state
from pgtop_ha.models.thresholds import Level
from pgtop_ha.ui.format import duration, human_bytes, per_second, shown
from pgtop_ha.ui.panes.base import (
    Column,
    Context,
    PaneSpec,
    Place,
    Row,
    blanks,
    cell,
    name_column,
    num,
    placeholder,
    state,
)

NO_PGPOOL = "no pgpool-II configured; add [[pgpool]] (host, port)"

COLUMNS = (
    Column("pooler", "pgpool"),
    Column("node", "Node", right=True),
    name_column("member", "Member"),
    Column("health", "Health"),
    Column("status", "Status"),
    Column("role", "pgpool role"),
    Column("pg_role", "PG role"),
    Column("patroni", "Patroni"),
    Column("weight", "LB wt", right=True),
    Column("selects", "Select/s", right=True),
    Column("delay", "Repl delay", right=True),
    Column("repl", "Repl state"),
    Column("detail", "Detail"),
)
_FILLED = ("pooler", "health", "detail")


# Every pooler finding is one rule's verdict (judge.problems.pooler_findings).
POOLER = POOLER_CONTRADICTION.id


def _previous(ctx: Context, name: str) -> PgpoolState | None:
    prev = ctx.previous
    return None if prev is None else next((p for p in prev.pgpool if p.name == name), None)


def _summary(p: PgpoolState, judged: Judgement) -> Row:
    """The pgpool-II's own row: unread (why), or its children in use and the state-wide finding."""
    if not p.ok:
        text = p.error or "not read yet"
        if source_state(True, p.slow_s) == "slow":
            text = f"waiting {duration(p.slow_s)}"
        level = max((f.level for f in judged.pgpool(p)), default=Level.OK)
    else:
        missing = judged.pgpool_primary(p)
        found = [f for n in p.nodes if (f := judged.pgpool_node(n)) is not None]
        level = max((f.level for f in (missing, *found) if f is not None), default=Level.OK)
        if missing:
            text = missing.text
        elif p.processes is not None:
            text = f"children busy {p.processes.busy}/{p.processes.children}"
            if found:
                text = f"{len(found)} node(s) disagree with Patroni · " + text
        else:
            text = f"pool_processes: {p.processes_error}" if p.processes_error else ""
    return Row(
        key=f"{p.name}|summary",
        cells={
            "pooler": cell(shown(p.name, 32)),
            "health": state(level, POOLER),
            **blanks(*(c.key for c in COLUMNS if c.key not in _FILLED)),
            "detail": cell(shown(text), level if level > Level.OK else None, rule=POOLER),
        },
    )


def rows(snapshot: ClusterSnapshot, ctx: Context) -> list[Row]:
    """A summary row per pgpool-II, then a row per backend node."""
    out: list[Row] = []
    judged = ctx.judged(snapshot)
    for p in snapshot.pgpool:
        out.append(_summary(p, judged))
        selects = select_rates(_previous(ctx, p.name), p)
        for n in p.nodes:
            finding = judged.pgpool_node(n) if p.ok else None
            level = finding.level if finding else Level.OK
            member = snapshot.member(n.member) if n.member else None
            patroni_role = "-" if member is None else short_name(member.role)
            if member is not None and member.state:
                patroni_role += f" ({member.state})"
            part = finding.part if finding else None
            delay = n.replication_delay
            sel = selects.get(n.node_id)
            out.append(
                Row(
                    key=f"{p.name}|{n.node_id}",
                    node=n.member,
                    cells={
                        "pooler": cell(""),
                        "node": num(str(n.node_id), n.node_id),
                        "member": cell(shown(n.member or f"{n.host}:{n.port}", 32)),
                        "health": state(level, POOLER),
                        "status": cell(
                            shown(n.status or "-", 16), level if part == "status" else None, rule=POOLER
                        ),
                        "role": cell(
                            shown(n.role or "-", 16), level if part == "role" else None, rule=POOLER
                        ),
                        "pg_role": cell(shown(n.pg_role or "-", 16)),
                        "patroni": cell(shown(patroni_role, 32)),
                        "weight": num("-" if n.lb_weight is None else f"{n.lb_weight:.2f}", n.lb_weight),
                        "selects": num(per_second(sel), sel),
                        "delay": num(human_bytes(delay), delay),
                        "repl": cell(
                            shown(" ".join(x for x in (n.replication_state, n.sync_state) if x) or "-", 24)
                        ),
                        "detail": cell(
                            shown(finding.text) if finding else "", level if finding else None, rule=POOLER
                        ),
                    },
                )
            )
    if not snapshot.pgpool:
        out.append(placeholder(COLUMNS, NO_PGPOOL))
    return out


PANE = PaneSpec(
    id="pgpool",
    title="pgpool-II",
    key="i",
    columns=COLUMNS,
    rows=rows,
    help="pool_nodes beside Patroni: primary, status (key only)",
    place=Place(dashboard=False),
)
