"""The fleet's rules as a Prometheus rule file: recorded once per evaluation, alerted by the engine.

The same RULES and PromQL the fleet screen asks live (judge/fleet.py), so the two never differ;
the reads over the last hour are recorded once a minute by a group of their own.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass

from pgtop_ha.judge.fleet import (
    BY_LEVEL,
    CRIT,
    EVALUATIONS,
    HOURLY_EVALUATIONS,
    HOURLY_EVERY_S,
    LEVEL,
    MEMBERS,
    PRIMARIES,
    RANKED,
    RULE_POINTS,
    RULES,
    RULES_VERSION,
    SETTLE,
    SEVERITY,
    VERSION,
    WORST,
    FleetSeries,
    level_expr,
    promql_string,
)
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

GROUP = "pgtop-ha-fleet"
HOURLY_GROUP = "pgtop-ha-fleet-hourly"
ALERTS_GROUP = "pgtop-ha-fleet-alerts"  # the alerts' own group, when they read no record of GROUP's
RULES_FILE = "pgtop-ha.rules.yml"  # its name beside a prometheus.yml the lab writes


@dataclass(frozen=True)
class Alert:
    """What an alert says and how long its rule must hold before it fires."""

    name: str
    summary: str
    look: str  # what a DBA should look at, and the pgtop-ha key that opens it
    for_s: int  # at least two scrapes: members scraped apart disagree for one (two leaders in a switchover)


ALERTS: dict[str, Alert] = {
    LEADER_NONE.id: Alert(
        "PgtopHaNoLeader",
        "no member is the leader",
        "writes fail until Patroni elects one: open the cluster (Enter), Overview (o)",
        30,
    ),
    LEADER_SEVERAL.id: Alert(
        "PgtopHaSeveralLeaders",
        "more than one member says it is the leader",
        "split brain: open the cluster (Enter), Cluster pane (c), HAProxy pools (h)",
        30,
    ),
    ROUTING_WRITER_POOL.id: Alert(
        "PgtopHaWriterPool",
        "HAProxy's writer pool does not have exactly one server UP",
        "writes go nowhere or to two places: open the cluster (Enter), HAProxy pane (h)",
        30,
    ),
    PATRONI_DCS_STALE.id: Alert(
        "PgtopHaDcsStale",
        "a member has not reached the DCS for a minute",
        "failover is blind without the DCS: open the cluster (Enter), Cluster pane (c)",
        30,
    ),
    PATRONI_MEMBER_DOWN.id: Alert(
        "PgtopHaMemberDown",
        "a member seen in the last hour is not running",
        "one fewer standby to fail over to: open the cluster (Enter), Cluster pane (c)",
        60,
    ),
    PATRONI_NOT_STREAMING.id: Alert(
        "PgtopHaReplicaNotStreaming",
        "a running replica is not streaming",
        "it falls behind: open the cluster (Enter), Replication pane (r)",
        60,
    ),
    REPLICATION_LAG.id: Alert(
        "PgtopHaReplicaLag",
        "a replica's replay lags the leader past [thresholds] lag_bytes",
        "a failover now would lose that WAL or wait: open the cluster, Replication (r)",
        120,
    ),
    PATRONI_PAUSED.id: Alert(
        "PgtopHaPaused",
        "the cluster is in maintenance mode: no automatic failover",
        "nobody takes over if the leader dies: open the cluster (Enter), Overview (o)",
        300,
    ),
    PATRONI_PENDING_RESTART.id: Alert(
        "PgtopHaPendingRestart",
        "a member needs a restart for a changed parameter",
        "plan the restart: open the cluster (Enter), Cluster pane (c)",
        300,
    ),
}


def _quoted(text: str) -> str:
    """A YAML double-quoted scalar (JSON's escapes are YAML's)."""
    return json.dumps(text, ensure_ascii=True)


def _identity(queries: FleetSeries) -> str:
    """The version series, labelled with what the rules were written for (a mismatch is told)."""
    expr = f"vector({VERSION})"
    for label, value in queries.rules_identity().items():
        expr = f'label_replace({expr}, "{label}", {promql_string(value)}, "", "")'
    return expr


def rule_file(
    queries: FleetSeries,
    version: str,
    hourly_every_s: int = HOURLY_EVERY_S,
    *,
    standalone_alerts: bool = False,
    alert_for: Mapping[str, int] | None = None,
) -> str:
    """The rule file's text: the hourly group, then the rules and one alert per crit and warn rule.

    ``standalone_alerts``: each alert evaluates its rule's own PromQL, in a group of its own, rather
    than read the points its group recorded, for a ruler that sees a record only at its next
    evaluation (vmalert); it costs about as much again per evaluation as the points.
    ``alert_for``: an alert's `for:` seconds by rule id, where not ALERTS' (ValueError for another id).
    """
    waits = {key: alert.for_s for key, alert in ALERTS.items()}
    for key, seconds in (alert_for or {}).items():
        if key not in waits:
            raise ValueError(f"{key!r} names no alert of the fleet; one of {', '.join(waits)}")
        waits[key] = seconds
    staged = dataclasses.replace(queries, staged=True)
    sc = queries.scope_label
    terms = staged.terms()
    tagged = " or ".join(f'label_replace({expr}, "rule", "{key}", "", "")' for key, expr in terms.items())

    def counted(series: str) -> str:
        return f"clamp_max(max({series}) + 1, {SETTLE})"

    def settled(series: str) -> str:
        return f"on () ({series} >= {SETTLE})"

    records = [
        # One read of every member's role gives both: the leaders, and each cluster there now.
        (PRIMARIES, queries.primaries()),
        (RULE_POINTS, tagged),
        (SEVERITY, f"sum by ({sc}) ({RULE_POINTS}) or {staged.total()} * 0"),
        # The page and the counts a screen reads, each one step from the severity: an engine whose
        # rules read the records an evaluation late (vmalert) lags both alike.
        (WORST, f"topk({RANKED}, {SEVERITY})"),
        (LEVEL, level_expr(SEVERITY)),
        (BY_LEVEL, f'count_values("level", {level_expr(SEVERITY)})'),
        # Last of the records: a ruler writing back in order has stored the rest once it reads these.
        # The alerts wait for the first; the screen for the second, counted from the hourly
        # group's first records, which its rules read too. A broken hourly group stops no alert.
        (EVALUATIONS, f"{counted(EVALUATIONS)} or vector(1)"),
        (HOURLY_EVALUATIONS, f"{counted(HOURLY_EVALUATIONS)} and on () (count({MEMBERS}) > 0) or vector(1)"),
        # Until then the fleet reads live, not a part or a first evaluation's guess.
        (RULES_VERSION, f"{_identity(queries)} and {settled(HOURLY_EVALUATIONS)}"),
    ]
    lines = [
        f"# Written by pgtop-ha {version} (`pgtop-ha fleet rules`) from its fleet rules; do not edit.",
        "# Check it with `promtool check rules`, then list it under rule_files in prometheus.yml.",
        "groups:",
        f"  - name: {HOURLY_GROUP}",
        f"    interval: {hourly_every_s}s",
        "    rules:",
    ]
    for name, expr in queries.hourly().items():
        lines += [f"      - record: {name}", f"        expr: {_quoted(expr)}"]
    lines += [f"  - name: {GROUP}", "    rules:"]
    for name, expr in records:
        lines += [f"      - record: {name}", f"        expr: {_quoted(expr)}"]
    alerting = settled(EVALUATIONS)
    # Only the primaries are read raw: the hourly records change too slowly for a late read to matter.
    own = dataclasses.replace(staged, live_primaries=True).terms() if standalone_alerts else {}
    if standalone_alerts:
        lines += [f"  - name: {ALERTS_GROUP}", "    rules:"]
    for key, alert in ALERTS.items():
        rule = RULES[key]
        severity = "critical" if rule.level == CRIT else "warning"
        points = f"({own[key]})" if standalone_alerts else RULE_POINTS + "{rule=" + _quoted(key) + "}"
        lines += [
            f"      - alert: {alert.name}",
            f"        expr: {_quoted(f'{points} > 0 and {alerting}')}",
            f"        for: {waits[key]}s",
            "        labels:",
            f"          severity: {severity}",
            f"          rule: {key}",
            "        annotations:",
            f"          summary: {_quoted(f'{{{{ $labels.{sc} }}}}: {alert.summary}')}",
            f"          description: {_quoted(alert.look)}",
        ]
    return "\n".join(lines) + "\n"


def alerted() -> dict[str, str]:
    """Each alerted rule and its alert's name (every crit and warn rule has one)."""
    return {key: alert.name for key, alert in ALERTS.items()}
