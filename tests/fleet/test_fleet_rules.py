"""`pgtop-ha fleet rules` as the ecosystem tests rule files: `promtool check rules`, `promtool test rules`.

One synthetic cluster per fault beside a healthy one: each fault fires its own alert and no other.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from pgtop_ha.cli import main
from pgtop_ha.collect.fleet_queries import FleetQueries, rules_state
from pgtop_ha.judge.fleet import (
    BY_LEVEL,
    CRIT,
    EVALUATIONS,
    HOURLY_EVALUATIONS,
    MEMBERS,
    MOVES,
    RULE_POINTS,
    RULES,
    RULES_VERSION,
    SEEN,
    SETTLE,
    SEVERITY,
    VERSION,
    WARN,
    WORST,
    Q,
    Sample,
)
from pgtop_ha.judge.fleet_rules import ALERTS, ALERTS_GROUP, HOURLY_GROUP, rule_file
from pgtop_ha.judge.rules import (
    LEADER_NONE,
    LEADER_SEVERAL,
    PATRONI_DCS_STALE,
    PATRONI_MEMBER_DOWN,
    PATRONI_NOT_STREAMING,
    PATRONI_PAUSED,
    PATRONI_PENDING_RESTART,
    REPLICATION_LAG,
    ROUTING_WRITER_POOL,
)

PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(
    PROMTOOL is None and os.environ.get("CI") != "true",
    reason="needs promtool (Debian's prometheus; scripts/setup installs it)",
)
SAMPLES = 60  # 15 minutes at 15 s
EVAL = "10m"
# The fault each cluster has; "healthy" has none.
NO_LEADER, LEADERS, WRITER, DCS = (
    LEADER_NONE.id,
    LEADER_SEVERAL.id,
    ROUTING_WRITER_POOL.id,
    PATRONI_DCS_STALE.id,
)
DOWN, LAGGING, PAUSED = PATRONI_MEMBER_DOWN.id, REPLICATION_LAG.id, PATRONI_PAUSED.id
STREAMING, RESTART = PATRONI_NOT_STREAMING.id, PATRONI_PENDING_RESTART.id
FAULTS = ("healthy", NO_LEADER, LEADERS, WRITER, DCS, DOWN, LAGGING, PAUSED, STREAMING, RESTART)


def _members(fault: str) -> dict[str, dict[str, str]]:
    """Series values per metric for members a (the leader) and b (a replica), in promtool's notation."""

    def flat(v: int) -> str:
        return f"{v}x{SAMPLES}"

    series = {
        "patroni_postgres_running": {"a": flat(1), "b": flat(1)},
        "patroni_primary": {"a": flat(1), "b": flat(0)},
        "patroni_postgres_streaming": {"a": flat(0), "b": flat(1)},
        "patroni_postgres_timeline": {"a": flat(1), "b": flat(1)},
        "patroni_pending_restart": {"a": flat(0), "b": flat(0)},
        "patroni_is_paused": {"a": flat(0), "b": flat(0)},
        "patroni_dcs_last_seen": {"a": f"0+15x{SAMPLES}", "b": f"0+15x{SAMPLES}"},  # now, every scrape
        "patroni_xlog_location": {"a": flat(1000)},
        "patroni_xlog_replayed_location": {"b": flat(1000)},
    }
    if fault == NO_LEADER:
        series["patroni_primary"]["a"] = flat(0)
        series["patroni_postgres_streaming"]["a"] = flat(1)  # a replica again, following nobody
    elif fault == LEADERS:
        series["patroni_primary"]["b"] = flat(1)
    elif fault == DCS:
        series["patroni_dcs_last_seen"] = {"a": flat(1), "b": flat(1)}  # stopped a long time ago
    elif fault == DOWN:
        series["patroni_postgres_running"]["b"] = f"1x20 0x{SAMPLES - 20}"
    elif fault == LAGGING:
        series["patroni_xlog_location"]["a"] = flat(100_000_000)
    elif fault == PAUSED:
        series["patroni_is_paused"] = {"a": flat(1), "b": flat(1)}
    elif fault == STREAMING:
        series["patroni_postgres_streaming"]["b"] = flat(0)
    elif fault == RESTART:
        series["patroni_pending_restart"]["b"] = flat(1)
    return series


def _input_series() -> list[dict[str, str]]:
    out = []
    for fault in FAULTS:
        for metric, members in _members(fault).items():
            for name, values in members.items():
                out.append({"series": f'{metric}{{scope="{fault}",name="{name}"}}', "values": values})
        writer = "0" if fault == WRITER else "1"
        out.append(
            {"series": f'haproxy_backend_active_servers{{proxy="pg_writer",scope="{fault}"}}',
             "values": f"{writer}x{SAMPLES}"}
        )  # fmt: skip
    return out


def _expected(rule: str) -> list[dict[str, Any]]:
    alert = ALERTS[rule]
    severity = "critical" if RULES[rule].level == CRIT else "warning"
    return [
        {
            "exp_labels": {"scope": rule, "rule": rule, "severity": severity},
            "exp_annotations": {"summary": f"{rule}: {alert.summary}", "description": alert.look},
        }
    ]


def _test_doc(rules: Path, series: list[dict[str, str]], **checks: object) -> dict[str, Any]:
    """A `promtool test rules` file: ``rules`` over ``series`` every 15 s, with ``checks``."""
    # promtool runs the groups in no set order unless told: as written, each after what it reads.
    order = [
        line.split(": ", 1)[1] for line in rules.read_text().splitlines() if line.startswith("  - name: ")
    ]
    return {
        "rule_files": [str(rules)],
        "evaluation_interval": "15s",
        "group_eval_order": order,
        "tests": [{"interval": "15s", "input_series": series, **checks}],
    }


def _test_file(rules: Path) -> dict[str, Any]:
    return _test_doc(
        rules,
        _input_series(),
        # Every alert at once: the cluster with its fault, and no other cluster, fires it.
        alert_rule_test=[
            {"eval_time": EVAL, "alertname": ALERTS[rule].name, "exp_alerts": _expected(rule)}
            for rule in ALERTS
        ],
        promql_expr_test=[
            {
                "expr": "pgtop_ha:fleet_clusters",
                "eval_time": EVAL,
                "exp_samples": [
                    {"labels": 'pgtop_ha:fleet_clusters{level="0"}', "value": 1},
                    {"labels": 'pgtop_ha:fleet_clusters{level="1"}', "value": 4},
                    {"labels": 'pgtop_ha:fleet_clusters{level="2"}', "value": 5},
                ],
            },
            # Fewer clusters than it ranks: the worst holds every one, the healthy one too.
            {
                "expr": "count(pgtop_ha:fleet_worst)",
                "eval_time": EVAL,
                "exp_samples": [{"value": len(FAULTS)}],
            },
        ],
    )


def _without_hourly(text: str) -> str:
    """A rule file's text without its hourly group."""
    head, rest = text.split(f"  - name: {HOURLY_GROUP}\n", 1)
    return head + "  - name" + rest.split("  - name", 1)[1]


def _unit_test(tmp_path: Path, doc: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    """`promtool test rules` on ``doc``, written as a file (JSON is YAML)."""
    tests = tmp_path / "tests.yml"
    tests.write_text(json.dumps(doc, indent=1))
    return _promtool("test", "rules", str(tests))


def _promtool(*args: str) -> subprocess.CompletedProcess[str]:
    assert PROMTOOL is not None, "promtool is missing: run scripts/setup"
    return subprocess.run([PROMTOOL, *args], capture_output=True, text=True, timeout=120, check=False)


def test_every_crit_and_warn_rule_has_its_alert() -> None:
    assert {k for k, r in RULES.items() if r.level in (CRIT, WARN)} == set(ALERTS)
    assert len({a.name for a in ALERTS.values()}) == len(ALERTS)
    assert set(FAULTS) - {"healthy"} == set(ALERTS)


@needs_promtool
@pytest.mark.parametrize("flags", [[], ["--standalone-alerts"]], ids=["recorded", "standalone"])
def test_the_rule_file_passes_promtool_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str]
) -> None:
    path = tmp_path / "pgtop-ha.rules.yml"
    assert main(["fleet", "rules", "--output", str(path), *flags]) == 0
    assert "promtool check rules" in capsys.readouterr().err
    out = _promtool("check", "rules", str(path))
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"{len(ALERTS) + 12} rules found" in out.stdout


STANDALONE = pytest.mark.parametrize("standalone", [False, True], ids=["recorded", "standalone"])


@needs_promtool
@STANDALONE
def test_each_fault_fires_its_alert_and_nothing_else(tmp_path: Path, standalone: bool) -> None:
    rules = tmp_path / "rules.yml"
    rules.write_text(rule_file(FleetQueries(), "test", standalone_alerts=standalone))
    out = _unit_test(tmp_path, _test_file(rules))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "SUCCESS" in out.stdout


def test_standalone_alerts_read_no_record_of_their_own_evaluation() -> None:
    text = rule_file(FleetQueries(), "test", standalone_alerts=True)
    head, alerts = text.split(f"  - name: {ALERTS_GROUP}\n", 1)
    assert "alert:" not in head and alerts.count("- alert:") == len(ALERTS)
    exprs = [line for line in alerts.splitlines() if line.lstrip().startswith("expr:")]
    assert len(exprs) == len(ALERTS)
    # The hourly records change too slowly for a late read to matter; the count only gates the start.
    slow = {SEEN, MOVES, MEMBERS, EVALUATIONS}
    for expr in exprs:
        assert set(re.findall(r"pgtop_ha:\w+", expr)) <= slow, expr
    assert rule_file(FleetQueries(), "test").count(f"{RULE_POINTS}{{rule=") == len(ALERTS)
    assert main(["fleet", "--standalone-alerts"]) == 2


def test_the_labels_of_the_settings_reach_the_rules(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = rule_file(FleetQueries(scope_label="cluster", selector='job="patroni"'), "test")
    assert 'patroni_primary{job=\\"patroni\\"}' in text and "by (cluster)" in text
    assert f"{RULE_POINTS}{{rule=" in text and "$labels.cluster" in text
    # Every member's series are read once an evaluation, but for the member joins: whether each is
    # running is read for the members down and the replicas not streaming, not for the writer pool.
    points = next(line for line in text.splitlines() if line.lstrip().startswith("expr:") and "rule" in line)
    assert points.count('patroni_postgres_running{job=\\"patroni\\"}') == 2
    writer = 'haproxy_backend_active_servers{proxy=\\"pg_writer\\"})'
    assert f"{writer} and on (cluster) pgtop_ha:fleet_primaries" in points
    # The console's lag threshold is the fleet's: one setting for the screen, the file and the alerts.
    config = tmp_path / "c.toml"
    config.write_text("[thresholds]\nlag_bytes = { warn = 1048576, crit = 8388608 }\n")
    assert main(["--config", str(config), "fleet", "rules"]) == 0
    assert ") > 1048576" in capsys.readouterr().out


def test_an_alerts_for_comes_from_the_settings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "c.toml"
    config.write_text('[fleet]\nalert_for = { "patroni.paused" = 600 }\n')
    assert main(["--config", str(config), "fleet", "rules"]) == 0
    text = capsys.readouterr().out
    block = text.split(f"- alert: {ALERTS[PAUSED].name}\n", 1)[1].split("- alert:", 1)[0]
    assert "for: 600s" in block
    assert text.count("for: 600s") == 1 and f"for: {ALERTS[DOWN].for_s}s" in text
    # A rule that has no alert, or a duration that is not one, is refused in one line.
    for bad, said in ((r'{ "patroni.switched" = 60 }', "names no alert"), (r'{ "patroni.paused" = -1 }', "")):
        config.write_text(f"[fleet]\nalert_for = {bad}\n")
        assert main(["--config", str(config), "fleet", "rules"]) == 2
        err = capsys.readouterr().err
        assert "alert_for" in err and said in err and "Traceback" not in err, err


def test_the_fleet_says_which_way_it_ranks_and_why() -> None:
    queries = FleetQueries()
    mine = {**queries.rules_identity(), "__name__": RULES_VERSION}
    now = 1_000_000.0

    def state(
        version: float,
        labels: dict[str, str],
        at: float | None,
        q: FleetQueries = queries,
        ranked: float = now,
    ) -> str:
        stamps = [Sample({Q: BY_LEVEL}, ranked), Sample({Q: WORST}, ranked)]
        stamps += [Sample({Q: RULES_VERSION}, at)] if at is not None else []
        read_at, said = rules_state([Sample(labels, version)], stamps, q, now, 60)
        assert (read_at is not None) is said.startswith("recorded rules")
        return said

    assert state(VERSION, mine, now - 14) == "recorded rules, evaluated 14 s ago"
    # Read where every series was written: the ranking shown after the version it follows.
    assert state(VERSION, mine, now - 14, ranked=now - 29) == "recorded rules, evaluated 29 s ago"
    assert "have not ranked the fleet yet" in state(VERSION, mine, None)
    assert f"records rules v0, this pgtop-ha's are v{VERSION}" in state(0, mine, now - 1)
    assert "written for another selector" in state(VERSION, {**mine, "selector": 'job="x"'}, now - 1)
    assert "not being evaluated" in state(VERSION, mine, now - 600)
    narrowed = FleetQueries(match='env="prod"', recorded_match_ok=False)
    assert "--match" in state(VERSION, mine, now - 1, narrowed)
    assert rules_state([], [], queries, now, 60) == (None, "live PromQL")


@needs_promtool
@STANDALONE
@pytest.mark.parametrize(
    ("rule", "metric"), [(WRITER, "haproxy_backend_active_servers"), (PAUSED, "patroni_is_paused")]
)
def test_an_alert_fires_within_its_for_plus_one_evaluation(
    tmp_path: Path, rule: str, metric: str, standalone: bool
) -> None:
    """A fault that begins at 5 min: pending until its `for:`, firing one evaluation after at most."""
    rules = tmp_path / "rules.yml"
    rules.write_text(rule_file(FleetQueries(), "test", standalone_alerts=standalone))
    series = [s for s in _input_series() if 'scope="healthy"' in s["series"]]
    began = 20  # samples of 15 s: the fault starts at 300 s
    healthy, faulty = ("1", "0") if rule == WRITER else ("0", "1")
    for s in series:
        if s["series"].startswith(metric):
            s["values"] = f"{healthy}x{began - 1} {faulty}x{SAMPLES - began}"
    alert = ALERTS[rule]
    start = began * 15
    fired = _expected(rule)
    fired[0]["exp_labels"]["scope"] = "healthy"  # the healthy cluster is the one that breaks here
    fired[0]["exp_annotations"]["summary"] = f"healthy: {alert.summary}"
    doc = _test_doc(
        rules,
        series,
        alert_rule_test=[
            {"eval_time": f"{start + alert.for_s - 15}s", "alertname": alert.name, "exp_alerts": []},
            {"eval_time": f"{start + alert.for_s + 15}s", "alertname": alert.name, "exp_alerts": fired},
        ],
    )
    out = _unit_test(tmp_path, doc)
    assert out.returncode == 0, out.stdout + out.stderr


@needs_promtool
@pytest.mark.parametrize("start", ["fresh", "restarted", "no hourly group"])
def test_nothing_is_read_or_alerted_before_the_rules_settle(tmp_path: Path, start: str) -> None:
    """From a ruler's start: no version and no alert for SETTLE evaluations (after a restart, none)."""
    text = rule_file(FleetQueries(), "test")
    if start == "no hourly group":
        # Its group failing (a query limit over the hour's samples) leaves the screen live and
        # stops no alert.
        text = _without_hourly(text)
    rules = tmp_path / "rules.yml"
    rules.write_text(text)
    series = [s for s in _input_series() if f'scope="{NO_LEADER}"' in s["series"]]
    settled = (SETTLE - 1) * 15  # the evaluation that counts SETTLE (the first counts one)
    version = [{"expr": f"count({RULES_VERSION})", "eval_time": f"{settled - 15}s", "exp_samples": []}]
    if start == "restarted":
        # Restarted within the lookback: the counts the run before wrote are read back, nothing waits.
        series += [{"series": name, "values": f"{SETTLE}x3"} for name in (EVALUATIONS, HOURLY_EVALUATIONS)]
        settled, version = 0, []
    written = [{"value": 1}] if start != "no hourly group" else []
    alert = ALERTS[NO_LEADER]
    fires = settled + alert.for_s
    doc = _test_doc(
        rules,
        series,
        alert_rule_test=[
            {"eval_time": f"{fires - 15}s", "alertname": alert.name, "exp_alerts": []},
            {"eval_time": f"{fires}s", "alertname": alert.name, "exp_alerts": _expected(NO_LEADER)},
        ],
        promql_expr_test=[
            *version,
            {"expr": f"count({RULES_VERSION})", "eval_time": f"{settled}s", "exp_samples": written},
        ],
    )
    out = _unit_test(tmp_path, doc)
    assert out.returncode == 0, out.stdout + out.stderr


@needs_promtool
def test_a_cluster_the_hourly_group_has_not_counted_is_ranked(tmp_path: Path) -> None:
    """Between two runs of the hourly group a new cluster is ranked: healthy at 0, leaderless graded."""
    # promtool runs every group at its evaluation_interval: the hourly group is taken out and its
    # series given as they stand before its next run, counting the old cluster only.
    rules = tmp_path / "rules.yml"
    rules.write_text(_without_hourly(rule_file(FleetQueries(), "test")))
    series = [
        {"series": f'{MEMBERS}{{scope="old"}}', "values": f"2x{SAMPLES}"},
        {"series": f'{MOVES}{{scope="old"}}', "values": f"0x{SAMPLES}"},
    ]
    series += [{"series": f'{SEEN}{{scope="old",name="{n}"}}', "values": f"1x{SAMPLES}"} for n in "ab"]
    for scope, fault in (("old", "healthy"), ("newcomer", "healthy"), ("leaderless", NO_LEADER)):
        for metric, members in _members(fault).items():
            for name, values in members.items():
                series.append({"series": f'{metric}{{scope="{scope}",name="{name}"}}', "values": values})
    expected = {"old": 0, "newcomer": 0, "leaderless": RULES[NO_LEADER].points()}
    samples = [{"labels": f'{SEVERITY}{{scope="{scope}"}}', "value": v} for scope, v in expected.items()]
    doc = _test_doc(
        rules, series, promql_expr_test=[{"expr": SEVERITY, "eval_time": EVAL, "exp_samples": samples}]
    )
    out = _unit_test(tmp_path, doc)
    assert out.returncode == 0, out.stdout + out.stderr


@needs_promtool
def test_the_screen_reads_what_the_last_evaluation_recorded(tmp_path: Path) -> None:
    """A level no cluster is on any more, and a cluster out of the worst, are not read from the lookback."""
    # Series that stop with no staleness marker (yet, through remote write): answered for minutes.
    series = [
        {"series": f'{BY_LEVEL}{{level="0"}}', "values": "3x8"},
        {"series": f'{BY_LEVEL}{{level="2"}}', "values": "1x4"},
        {"series": f'{WORST}{{scope="fixed"}}', "values": "100x4 0x4"},
        {"series": f'{WORST}{{scope="left"}}', "values": "10x4"},
        {"series": f'{WORST}{{scope="lagging"}}', "values": "5x8"},
    ]
    first = FleetQueries(evaluated_at=120.0).first()
    assert WORST in first["worst"] and SEVERITY not in first["worst"]
    counts = [{"labels": f'{BY_LEVEL}{{level="0"}}', "value": 3}]
    worst = [
        {"labels": f'{WORST}{{scope="lagging"}}', "value": 5},
        {"labels": f'{WORST}{{scope="fixed"}}', "value": 0},
    ]
    (tmp_path / "none.yml").write_text("groups: []\n")
    doc = _test_doc(
        tmp_path / "none.yml",
        series,
        promql_expr_test=[
            {"expr": first["counts"], "eval_time": "120s", "exp_samples": counts},
            {"expr": first["worst"], "eval_time": "120s", "exp_samples": worst},
        ],
    )
    out = _unit_test(tmp_path, doc)
    assert out.returncode == 0, out.stdout + out.stderr
