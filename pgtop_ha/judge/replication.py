"""Replication's rules: each walsender and each standby's own receiver, as the pane and `check` grade them.

The Replication pane's marks and the problems are both read from these findings, so they agree.
"""

from __future__ import annotations

from datetime import datetime

from pgtop_ha.judge.rules import (
    REPLICATION_NOT_STREAMING,
    REPLICATION_RECEIVER,
    REPLICATION_SILENT,
    REPLICATION_STANDBY_LAG,
)
from pgtop_ha.models.derive import stage_lag_seconds, standby_silent
from pgtop_ha.models.snapshot import ClusterSnapshot, NodeSnapshot, Replication
from pgtop_ha.models.thresholds import Level, Thresholds
from pgtop_ha.models.verdict import Mark


def lag_level(t: Thresholds, lag_bytes: int | None, lag_s: float | None = None) -> Level:
    """Replication lag graded by bytes and by seconds, the worse of the two."""
    return max(t.lag_bytes.grade(lag_bytes), t.lag_s.grade(lag_s))


def standby_name(r: Replication) -> str:
    """A walsender's standby as the pane names it: its application_name, else its pid."""
    return r.application_name or (str(r.pid) if r.pid is not None else "?")


def walsender_findings(r: Replication, t: Thresholds, now: datetime) -> tuple[Mark, ...]:
    """Every rule that holds for one walsender (lag, a state other than streaming, a silent standby)."""
    name = standby_name(r)
    out: list[Mark] = []
    _, _, replay_s = stage_lag_seconds(r, now)
    # One mark per column it colours; the problems keep the worse one (one_per_rule).
    for part, lv in (
        ("replay", t.lag_bytes.grade(r.replay_lag_bytes)),
        ("replay_s", t.lag_s.grade(replay_s)),
    ):
        if lv > Level.OK:
            out.append(Mark(REPLICATION_STANDBY_LAG.id, lv, f"standby {name} replay lag", part))
    if r.state not in (None, "streaming"):
        out.append(
            Mark(
                REPLICATION_NOT_STREAMING.id,
                Level.WARN,
                f"standby {name}: walsender {r.state}, not streaming",
                "state",
            )
        )
    elif standby_silent(r, now):
        out.append(
            Mark(
                REPLICATION_SILENT.id, Level.WARN, f"standby {name} has not replied for two status intervals"
            )
        )
    return tuple(out)


def one_per_rule(marks: tuple[Mark, ...]) -> tuple[Mark, ...]:
    """The worst mark of each rule, in first-seen order: one problem per rule and subject."""
    best: dict[str, Mark] = {}
    for m in marks:
        if m.rule not in best or m.level > best[m.rule].level:
            best[m.rule] = m
    return tuple(best.values())


def unreported(snapshot: ClusterSnapshot) -> list[NodeSnapshot]:
    """Reachable standbys no reachable upstream lists among its walsenders (their receiver speaks)."""
    covered = {standby_name(r) for n in snapshot.nodes if n.reachable for r in n.replication}
    return [
        n
        for n in sorted(snapshot.nodes, key=lambda n: n.name)
        if n.reachable and n.in_recovery and n.name not in covered
    ]


def walsender_marks(snapshot: ClusterSnapshot, r: Replication, t: Thresholds) -> tuple[Mark, ...]:
    """A walsender's findings as of the snapshot's reading (not the screen's clock: a replay agrees)."""
    return walsender_findings(r, t, snapshot.taken_at)


def receiver_status(node: NodeSnapshot) -> str:
    """A standby's WAL receiver status, or "no receiver"."""
    wr = node.wal_receiver
    return wr.status if wr is not None and wr.status else "no receiver"


def receiver_findings(node: NodeSnapshot) -> tuple[Mark, ...]:
    """A standby's own receiver that is not streaming (no upstream reports it)."""
    status = receiver_status(node)
    if status == "streaming":
        return ()
    said = "no WAL receiver" if status == "no receiver" else f"WAL receiver {status}"
    return (Mark(REPLICATION_RECEIVER.id, Level.WARN, f"{said}; no upstream lists this standby"),)
