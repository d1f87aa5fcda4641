"""One judge: every output of one fact carries the same rule and level (verdicts, overview, check)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pgtop_ha
from pgtop_ha.check_cli import perfdata, status_line
from pgtop_ha.engines.timeline import Timeline
from pgtop_ha.judge import rules
from pgtop_ha.judge.checks import CHECK_RULES, disagreements
from pgtop_ha.judge.judgement import judgement
from pgtop_ha.judge.problems import cluster_problems
from pgtop_ha.judge.rules import RULES
from pgtop_ha.judge.verdicts import worst
from pgtop_ha.models.snapshot import ClusterSnapshot, Slot, WalReceiver
from pgtop_ha.models.thresholds import Level
from pgtop_ha.models.verdict import Verdict
from pgtop_ha.ui.panes import overview
from pgtop_ha.ui.panes.base import Context
from tests.models.builders import feed, healthy, member, node, pg_down, t
from tests.ui import fixtures as fx

SETTINGS = fx.settings()
POOLS = SETTINGS.haproxy.pools()
PACKAGE = Path(pgtop_ha.__file__).parent


def _verdicts(tl: Timeline, snap: ClusterSnapshot) -> tuple[Verdict, ...]:
    return judgement(snap, SETTINGS.thresholds, POOLS, tl.seen_checks()).verdicts


def test_a_healthy_cluster_has_no_verdict_and_says_ok() -> None:
    tl = Timeline(pools=POOLS)
    snap = healthy()
    feed(tl, [snap])
    verdicts = _verdicts(tl, snap)
    assert verdicts == () and worst(verdicts) == Level.OK
    line = status_line(0, verdicts, None, perfdata(snap, SETTINGS))
    assert line.startswith("PGTOP-HA OK - healthy | members=3;;;0 leaders=1;;;0 ")
    assert "max_lag=0B;16777216;268435456;0" in line  # whole numbers, no exponent


def test_one_fact_is_one_verdict_with_one_rule() -> None:
    # The leader's PostgreSQL down while HAProxy routes writes to it: a problem and a check both
    # see it; the verdicts carry it once.
    tl = Timeline(pools=POOLS)
    snaps = [healthy(0), pg_down(healthy(1), "node1")]
    feed(tl, snaps)
    verdicts = _verdicts(tl, snaps[-1])
    down = [v for v in verdicts if v.rule == "pg.down-leader-routed"]
    assert len(down) == 1 and down[0].level == Level.CRIT and down[0].subject == "node1"
    assert worst(verdicts) == Level.CRIT
    assert status_line(2, verdicts, None, []).startswith("PGTOP-HA CRITICAL - node1: PG DOWN, still routed")


def _timelines_differ(s: float) -> ClusterSnapshot:
    snap = node(healthy(s), "node1", timeline=4)
    return node(snap, "node2", timeline=4, wal_receiver=WalReceiver(status="streaming", received_tli=4))


def _timeline_row_level(snap: ClusterSnapshot, tl: Timeline) -> Level | None:
    ctx = Context(thresholds=SETTINGS.thresholds, pools=POOLS, now=snap.taken_at, checks=tuple(tl.checks()))
    (row,) = [r for r in overview.state_rows(snap, ctx) if r.key == "tl"]
    return row.cells["now"].level


def test_timelines_that_differ_are_graded_alike_in_the_overview_and_the_verdicts() -> None:
    tl = Timeline(pools=POOLS)
    early = _timelines_differ(1)
    feed(tl, [healthy(0), early])
    (v,) = [v for v in _verdicts(tl, early) if v.rule == "cluster.timelines"]
    # Within its grace (normal during a failover): no level in the overview, not counted.
    assert not v.counts and worst(_verdicts(tl, early)) == Level.OK
    assert _timeline_row_level(early, tl) is None
    late = _timelines_differ(12)
    feed(tl, [late])
    (v,) = [v for v in _verdicts(tl, late) if v.rule == "cluster.timelines"]
    assert v.counts and v.level == Level.WARN and v.since == t(1)
    assert _timeline_row_level(late, tl) == Level.WARN == worst(_verdicts(tl, late))


def test_a_conflicting_slot_is_a_problem_graded_as_the_slots_pane_grades_it() -> None:
    snap = healthy()
    n = snap.node("node2")
    assert n is not None
    slot = Slot(slot_name="sub", slot_type="logical", conflicting=True, retained_bytes=1024)
    snap = node(snap, "node2", slots=(*n.slots, slot))
    (p,) = [p for p in cluster_problems(snap, SETTINGS.thresholds, POOLS, t(0)) if "sub" in p.text]
    assert p.level == Level.CRIT and p.rule == "slots.retained" and p.text.endswith(", conflicting")


def _rules_named() -> tuple[set[str], list[str]]:
    """Every rule constant the package names (``X.id``), and every ``rule="..."`` string literal."""
    named: set[str] = set()
    literals: list[str] = []
    for path in PACKAGE.rglob("*.py"):
        for n in ast.walk(ast.parse(path.read_text())):
            if isinstance(n, ast.Attribute) and n.attr == "id" and isinstance(n.value, ast.Name):
                named.add(n.value.id)
            if isinstance(n, ast.keyword) and n.arg == "rule" and isinstance(n.value, ast.Constant):
                literals.append(f"{path.name}:{n.value.lineno}")
    return named, literals


def test_every_rule_is_an_object_and_each_is_given() -> None:
    named, literals = _rules_named()
    assert not literals, f"a rule given as a string, not its judge.rules constant: {literals}"
    constants = {name for name, value in vars(rules).items() if isinstance(value, rules.Rule)}
    assert len(constants) == len(RULES) == len(rules.ALL) > 50
    assert not constants - named, f"rules nothing gives: {sorted(constants - named)}"


def test_every_problem_names_its_rule() -> None:
    calls = 0
    for path in PACKAGE.rglob("*.py"):
        for call in ast.walk(ast.parse(path.read_text())):
            if isinstance(call, ast.Call) and getattr(call.func, "id", None) in ("problem", "Verdict"):
                calls += 1
                assert any(kw.arg == "rule" for kw in call.keywords), f"{path}:{call.lineno}"
    assert calls > 50


def test_the_checks_keys_each_map_to_a_rule() -> None:
    snaps = [pg_down(healthy(1), "node1"), _timelines_differ(1)]
    keys = {c.key.split(":", 1)[0] for s in snaps for c in disagreements(s, POOLS)}
    assert keys and keys <= set(CHECK_RULES)


def test_the_docs_list_every_rule() -> None:
    # docs/check.md's table is written by scripts/docs_tables.py from judge/rules.py.
    out = subprocess.run(
        [sys.executable, str(PACKAGE.parent / "scripts" / "docs_tables.py"), "--check"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    text = (PACKAGE.parent / "docs" / "check.md").read_text()
    assert all(f"| `{rule}` |" in text for rule in RULES)


def test_timelines_patroni_states_count_when_postgresql_is_not_read() -> None:
    snap = healthy(0)
    for name in ("node1", "node2", "node3"):
        snap = pg_down(snap, name)
    snap = member(member(member(snap, "node1", timeline=51), "node2", timeline=50), "node3", timeline=51)
    (check,) = [c for c in disagreements(snap, POOLS) if c.rule == "cluster.timelines"]
    assert check.text == (
        "timelines differ: node1 51 (Patroni's word), node2 50 (Patroni's word), node3 51 (Patroni's word)"
    )
    same = member(snap, "node2", timeline=51)
    assert not [c for c in disagreements(same, POOLS) if c.rule == "cluster.timelines"]
