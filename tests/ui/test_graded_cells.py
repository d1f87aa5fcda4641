"""Every mark on screen is a verdict: what any pane colours, `check` and Problems say with its rule."""

from __future__ import annotations

import functools
from collections.abc import Callable
from datetime import timedelta

import pytest

from pgtop_ha.judge.judgement import Judgement, judgement
from pgtop_ha.judge.rules import REPLICATION_STANDBY_LAG, RULES
from pgtop_ha.judge.sources import node_freshness
from pgtop_ha.judge.verdicts import worst
from pgtop_ha.models.derive import member_names
from pgtop_ha.models.snapshot import ClusterSnapshot, Probe
from pgtop_ha.models.thresholds import Band, Level
from pgtop_ha.ui.panes import cluster
from pgtop_ha.ui.panes.base import Context
from pgtop_ha.ui.panes.registry import PANES
from tests.judge import test_marks_agree as agree
from tests.models.builders import node
from tests.ui import fixtures as fx

SETTINGS = fx.settings()
POOLS = SETTINGS.haproxy.pools()
LATER = fx.T0 + timedelta(seconds=20)


def _probed() -> ClusterSnapshot:
    writer = Probe(
        endpoint="w", kind="writer", error="refused", errors=3, first_error="refused", last_ok_at=fx.T0
    )
    reader = Probe(
        endpoint="r", kind="reader", ok=True, answered_by="node1", in_recovery=False, errors=0,
        last_ok_at=LATER,
    )  # fmt: skip
    return fx.healthy(LATER).model_copy(update={"probes": (writer, reader)})


def _archive_failing() -> ClusterSnapshot:
    snap = fx.healthy(LATER)
    primary = snap.node("node1")
    assert primary is not None and primary.archiver is not None
    failing = primary.archiver.model_copy(update={"last_failed_time": LATER, "failed_count": 3})
    return node(snap, "node1", archiver=failing)


def _first_read() -> ClusterSnapshot:
    return node(fx.healthy(LATER), "node3", reachable=False, slow_s=0.4, last_ok_at=None)


SCENES: dict[str, Callable[[], list[ClusterSnapshot]]] = {
    "healthy": lambda: [fx.healthy(), fx.healthy(LATER)],
    "primary killed": lambda: [fx.healthy(), fx.kill_primary()],
    "failed over": lambda: [fx.healthy(), fx.failed_over()],
    "lagging": lambda: [fx.healthy(), fx.subscriber_copy(fx.lagging(fx.healthy(LATER)))],
    "frozen": lambda: [fx.healthy(), fx.frozen()],
    "lock queue": lambda: [fx.healthy(), fx.locked()],
    "sessions": lambda: [fx.healthy(), fx.sessioned()],
    "statements": lambda: [fx.healthy(), fx.stated()],
    "server log": lambda: [fx.healthy(), fx.logged()],
    "parameters": lambda: [fx.healthy(), fx.tuned()],
    "poolers": lambda: [fx.healthy(), fx.pooled(fx.healthy(LATER), following=False)],
    "cold cache": lambda: [fx.cached(fx.healthy()), fx.cached(fx.failed_over())],
    "probes": lambda: [fx.healthy(), _probed()],
    "archiving fails": lambda: [fx.healthy(), _archive_failing()],
    "first read under way": lambda: [fx.healthy(), _first_read()],
}
for _case, (_build, *_) in agree.CASES.items():
    SCENES[_case] = functools.partial(lambda build: [fx.healthy(), build()], _build)


def _graded(
    snaps: list[ClusterSnapshot], judged: Judgement | None = None
) -> list[tuple[str, str, Level, str | None]]:
    """(table, column, level, rule) of every cell above OK that any pane shows for the last snapshot."""
    snap = snaps[-1]
    ctx = Context(
        thresholds=SETTINGS.thresholds,
        pools=POOLS,
        now=snap.taken_at,
        history=tuple(snaps[:-1]),
        judgement=judged,
    )
    out = []
    for pane in PANES:
        for table in pane.tables:
            for row in table.rows_of(snap, ctx):
                for column, c in row.cells.items():
                    if c.level is not None and c.level > Level.OK:
                        out.append((table.id, column, c.level, c.rule))
    return out


@pytest.mark.parametrize("scene", list(SCENES))
def test_every_graded_cell_is_a_verdict_of_its_rule(scene: str) -> None:
    snaps = SCENES[scene]()
    judged = judgement(snaps[-1], SETTINGS.thresholds, POOLS, ())
    verdicts = judged.verdicts
    held = {(v.rule, v.level) for v in verdicts}
    graded = _graded(snaps, judged)
    unnamed = [(t, c) for t, c, _, rule in graded if rule is None]
    assert not unnamed, f"cells coloured with no rule behind them: {unnamed}"
    assert {rule for *_, rule in graded} <= set(RULES)
    without = [(t, c, int(lv), r) for t, c, lv, r in graded if not any(v == r and h >= lv for v, h in held)]
    assert not without, f"cells whose rule is no verdict at their level: {without}"
    # And back: every verdict is on screen with its rule and level (the Problems pane lists them).
    shown = {(rule, int(level)) for _, _, level, rule in graded}
    assert {(r, lv) for r, lv in held if lv > Level.OK} <= shown
    # So `check` is never quieter than the screen.
    assert worst(verdicts) >= max((lv for _, _, lv, _ in graded), default=Level.OK)


def _standby_lag(snap: ClusterSnapshot, ctx: Context) -> set[Level | None]:
    """The levels of the cells every pane colours by the standby lag rule."""
    rows = [row for pane in PANES for table in pane.tables for row in table.rows_of(snap, ctx)]
    return {c.level for row in rows for c in row.cells.values() if c.rule == REPLICATION_STANDBY_LAG.id}


def test_the_panes_grade_by_the_judgement_they_are_given_not_by_their_own() -> None:
    snap = SCENES["lagging"]()[-1]
    strict = SETTINGS.thresholds.model_copy(update={"lag_bytes": Band(warn=0, crit=1)})
    lenient = SETTINGS.thresholds.model_copy(
        update={"lag_bytes": Band(warn=2**60, crit=2**61), "lag_s": Band(warn=1e9, crit=2e9)}
    )
    by_strict = judgement(snap, strict, POOLS, ())
    assert REPLICATION_STANDBY_LAG.id in {v.rule for v in by_strict.verdicts}
    # The context's own thresholds are lenient: graded by themselves, the panes show no lag.
    alone = Context(thresholds=lenient, pools=POOLS, now=snap.taken_at)
    assert _standby_lag(snap, alone) == set()
    given = Context(thresholds=lenient, pools=POOLS, now=snap.taken_at, judgement=by_strict)
    assert Level.CRIT in _standby_lag(snap, given)


def test_the_scenes_grade_something_of_most_subjects() -> None:
    rules = {rule for build in SCENES.values() for *_, rule in _graded(build())}
    assert len(rules) >= 22, sorted(r for r in rules if r)


@pytest.mark.parametrize("scene", list(SCENES))
def test_the_header_grades_each_node_as_its_reach_verdicts(scene: str) -> None:
    snap = SCENES[scene]()[-1]
    problems = judgement(snap, SETTINGS.thresholds, POOLS, ()).verdicts
    reach = {r.id for r in cluster.REACH}
    for name in member_names(snap):
        level, _ = node_freshness(snap, name, snap.taken_at, SETTINGS.thresholds)
        said = max((v.level for v in problems if v.subject == name and v.rule in reach), default=Level.OK)
        assert level == said, (name, level, [v for v in problems if v.subject == name])
