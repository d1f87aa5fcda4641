"""Probes pane: what applications see through each endpoint (a new connection per probe).

One row per endpoint: who answered and whether it should have (the leader for writers, a replica
for readers), latency, the current run of errors with its first text, the time since the last
success; the write probe's last outage has a row of its own.
"""

from __future__ import annotations

from pgtop_ha.models.snapshot import ClusterSnapshot
from pgtop_ha.ui.format import age, count, duration, shown
from pgtop_ha.ui.panes.base import (
    Column,
    Context,
    PaneSpec,
    Place,
    Row,
    cell,
    marked,
    num,
    placeholder,
    sortable,
    worst_state,
)

COLUMNS = (
    Column("endpoint", "Endpoint"),
    Column("kind", "Kind"),
    Column("health", "Health"),
    Column("answered", "Answered by"),
    Column("latency", "Latency", right=True),
    Column("errors", "Errors", right=True),
    Column("since_ok", "Last ok", right=True),
    Column("detail", "New connection per probe · first error of the run"),
)


NO_PROBES = "no probe endpoints; add [[probes.endpoints]] (e.g. HAProxy's writer port)"


def rows(snapshot: ClusterSnapshot, ctx: Context) -> list[Row]:
    """A row per probe, then a row per write outage the write probe measured (newest first)."""
    out: list[Row] = []
    for probe in snapshot.probes:
        found = () if (mark := ctx.judged(snapshot).probe(probe)) is None else (mark,)
        since = None if probe.last_ok_at is None else (ctx.now - probe.last_ok_at).total_seconds()
        latency = None if probe.latency_ms is None else probe.latency_ms / 1000
        answered = shown(probe.answered_by, 40) if probe.answered_by else "-"
        if probe.ok and probe.in_recovery is not None:
            answered += " (replica)" if probe.in_recovery else " (primary)"
        detail = ""
        if probe.errors:
            detail = shown(probe.first_error or probe.error or "")
        elif probe.error:
            detail = shown(probe.error)
        elif probe.slow_s is not None and probe.slow_s >= 1:
            detail = f"waiting {duration(probe.slow_s)}"
        out.append(
            Row(
                key=f"{probe.endpoint}|{probe.kind}",
                node=probe.answered_by,
                cells={
                    "endpoint": cell(shown(probe.endpoint, 40)),
                    "kind": cell(probe.kind),
                    "health": worst_state(found),
                    "answered": marked(answered, found),
                    "latency": num(duration(latency), latency),
                    "errors": marked(
                        count(probe.errors), found if probe.errors else (), sort=sortable(probe.errors)
                    ),
                    "since_ok": num(age(since), since),
                    "detail": marked(detail, found if probe.errors or probe.error else ()),
                },
            )
        )
        for outage in reversed(probe.outages[-3:]):
            out.append(
                Row(
                    key=f"{probe.endpoint}|{probe.kind}|{outage.started_at.isoformat()}",
                    cells={
                        "endpoint": cell(""),
                        "kind": cell("outage"),
                        "health": cell("past"),  # history, as the stopwatch keeps it: not a fault now
                        "answered": cell(shown(outage.member or "-", 40)),
                        "latency": num(duration(outage.duration_s), outage.duration_s),
                        "errors": num(count(outage.failures), outage.failures),
                        "since_ok": num(age((ctx.now - outage.ended_at).total_seconds()), 0.0),
                        "detail": cell(
                            f"writes down {outage.started_at:%H:%M:%S} → {outage.ended_at:%H:%M:%S} "
                            f"({duration(outage.duration_s)})"
                        ),
                    },
                )
            )
    if not snapshot.probes:
        out.append(placeholder(COLUMNS, NO_PROBES))
    return out


PANE = PaneSpec(
    id="probes",
    title="Probes",
    key="9",
    columns=COLUMNS,
    rows=rows,
    help="what applications see through each endpoint (key only)",
    place=Place(dashboard=False),
)
