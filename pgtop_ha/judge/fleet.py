"""The fleet view's data: Prometheus samples → one row per Patroni cluster, and history → events. Pure."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from pgtop_ha.judge.rules import (
    LEADER_NONE,
    LEADER_SEVERAL,
    PATRONI_DCS_STALE,
    PATRONI_MEMBER_DOWN,
    PATRONI_NOT_STREAMING,
    PATRONI_PAUSED,
    PATRONI_PENDING_RESTART,
    PATRONI_SWITCHED,
    REPLICATION_LAG,
    ROUTING_WRITER_POOL,
    Rule,
)
from pgtop_ha.models.event import Event
from pgtop_ha.models.thresholds import Level
from pgtop_ha.models.verdict import Verdict

LAG_WARN_BYTES = 16 * 1024 * 1024
Q = "q"  # the label each aggregate of the "fleet" query is tagged with


@dataclass(frozen=True, slots=True)
class Sample:
    """One instant-vector element: its labels and value."""

    labels: Mapping[str, str]
    value: float


@dataclass(frozen=True, slots=True)
class Series:
    """One range-vector element: its labels and (epoch seconds, value) points."""

    labels: Mapping[str, str]
    points: tuple[tuple[float, float], ...]


OK, WARN, CRIT = Level.OK, Level.WARN, Level.CRIT


@dataclass(frozen=True)
class FleetRule:
    """A registry rule as the fleet grades it: its level, its weight (per member where counted), a cap."""

    rule: Rule
    level: Level
    weight: int
    cap: int | None = None

    def points(self, times: int = 1) -> int:
        """What it adds to a cluster's severity: weight x times, capped, on its level's scale."""
        raw = self.weight * times
        return (raw if self.cap is None else min(raw, self.cap)) * SCALE[self.level]


# A level's points never reach the next level's scale (caps below): the severity sorts crit
# before warn before ok whatever the counts, and its scale tells the level.
SCALE = {CRIT: 1_000_000, WARN: 1_000, OK: 1}

# One table for both sides: Prometheus ranks and counts the fleet with it, build_rows grades a row.
# Keyed by the registry's rule ids (judge/rules.py), the ids verdicts and alerts carry.
RULES: dict[str, FleetRule] = {
    f.rule.id: f
    for f in (
        FleetRule(LEADER_NONE, CRIT, 100),
        FleetRule(LEADER_SEVERAL, CRIT, 100),
        FleetRule(ROUTING_WRITER_POOL, CRIT, 50),
        FleetRule(PATRONI_DCS_STALE, CRIT, 20),
        FleetRule(PATRONI_MEMBER_DOWN, CRIT, 10),  # per member down
        FleetRule(PATRONI_NOT_STREAMING, WARN, 5, cap=990),  # per replica not streaming
        FleetRule(REPLICATION_LAG, WARN, 5),
        FleetRule(PATRONI_PAUSED, WARN, 3),
        FleetRule(PATRONI_PENDING_RESTART, WARN, 1),
        FleetRule(PATRONI_SWITCHED, OK, 2),  # a switch in the last hour: sorted up, not a problem
    )
}


def level_expr(severity: str) -> str:
    """PromQL of the level a severity is on (0 ok, 1 warn, 2 crit), as level_of reads it."""
    return f"clamp_max(floor(log10({severity} + 1) / 3), {int(CRIT)})"


def level_of(severity: float) -> Level:
    """The level a severity is on (SCALE)."""
    return CRIT if severity >= SCALE[CRIT] else WARN if severity >= SCALE[WARN] else OK


# What `pgtop-ha fleet rules` records (judge/fleet_rules.py), and the fleet reads when it is there.
RULE_POINTS = "pgtop_ha:fleet_rule_points"  # per cluster and rule: its points where it applies
SEVERITY = "pgtop_ha:fleet_severity"  # per cluster: every rule's points summed (0: healthy)
WORST = "pgtop_ha:fleet_worst"  # the RANKED clusters of highest severity: a screen reads a page
RANKED = 200  # clusters WORST holds: as many as a refresh reads in full
LEVEL = "pgtop_ha:fleet_level"  # per cluster: 0 ok, 1 warn, 2 crit
BY_LEVEL = "pgtop_ha:fleet_clusters"  # clusters per level (label "level")
RULES_VERSION = "pgtop_ha:fleet_rules_version"  # which rules, for which labels and selector
EVALUATIONS = "pgtop_ha:fleet_evaluations"  # main group evaluations since the ruler began (to SETTLE)
HOURLY_EVALUATIONS = "pgtop_ha:fleet_evaluations_hourly"  # ... since the hourly group's records are there
# Evaluations before the alerts fire (EVALUATIONS) and the records are read (HOURLY_EVALUATIONS):
# the chain to the worst is four records deep, and a ruler that writes back (vmalert) reads each
# an evaluation late.
SETTLE = 5
# Recorded once so the rules read each hour-long range once a minute, not at every evaluation.
SEEN = "pgtop_ha:fleet_member_seen_1h"  # per member seen in the last hour: 1 running, 0 not
MOVES = "pgtop_ha:fleet_timeline_moves_1h"  # per cluster: how far its timeline moved in the hour
MEMBERS = "pgtop_ha:fleet_members"  # per cluster: its members seen in the last hour
PRIMARIES = "pgtop_ha:fleet_primaries"  # per cluster whose Patronis answer: how many lead (0 too)
HOURLY_EVERY_S = 60  # the interval of the group recording SEEN and MOVES
VERSION = 7  # raised whenever RULES or their PromQL change
LIVE = "live PromQL"

DCS_STALE_S = 60.0


def promql_string(value: str) -> str:
    """``value`` as a PromQL double-quoted string."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


@dataclass(frozen=True)
class FleetSeries:
    """Patroni's and HAProxy's series as the fleet's rules read them, and each rule over them in PromQL.

    Prometheus evaluates these (live, or recorded by `pgtop-ha fleet rules`); the screen's own
    reads build on them (collect/fleet_queries.py). Label names are configurable.
    """

    scope_label: str = "scope"
    name_label: str = "name"
    writer_backend: str = "pg_writer"
    selector: str = ""  # extra matchers, e.g. 'job="patroni"'
    match: str = ""  # more matchers: `fleet --match` and the screen's filter
    only: str = ""  # the clusters of a detail query, a matcher HAProxy's series take too
    lag_warn_bytes: int = LAG_WARN_BYTES  # the console's [thresholds] lag_bytes warn: one setting for both
    staged: bool = False  # read the rule file's own SEEN, MOVES, MEMBERS and PRIMARIES (fleet_rules.py)
    # With ``staged``: the primaries from Patroni's series, not recorded (an alert that reads no
    # record of its own evaluation: fleet_rules.py).
    live_primaries: bool = False

    def _sel(self) -> str:
        return ",".join(p for p in (self.selector, self.match, self.only) if p)

    def _m(self, metric: str) -> str:
        sel = self._sel()
        return f"{metric}{{{sel}}}" if sel else metric

    def tag(self, name: str, expr: str) -> str:
        """``expr`` with its answer labelled ``name`` (one query answers for several parts)."""
        return f'label_replace({expr}, "{Q}", "{name}", "", "")'

    def seen(self, *labels: str) -> str:
        """Every member seen in the last hour, one series per ``labels`` (after scope and name)."""
        by = ", ".join((self.scope_label, self.name_label, *labels))
        if self.staged and not labels:
            return SEEN
        return f"max by ({by}) (max_over_time({self._m('patroni_postgres_running')}[1h]))"

    def _primaries(self) -> str:
        return f"({self.primaries()})" if self.live_primaries else PRIMARIES

    def total(self) -> str:
        """Every cluster seen in the last hour, with its count of members."""
        if self.staged:
            # A cluster first scraped after the hourly group's last run is there by its Patronis.
            return f"({MEMBERS} or {self._primaries()})"
        return f"count by ({self.scope_label}) ({self.seen()})"

    def parts(self) -> dict[str, str]:
        """What a cluster's row reads, each part by name: its leader, members, lag, pools."""
        sc, nm = self.scope_label, self.name_label
        by = f"by ({sc})"
        # Patroni reports 0 for the leader and for a replica whose PostgreSQL does not answer.
        replayed = f"min {by} ({self._m('patroni_xlog_replayed_location')} > 0)"
        matchers = ",".join(m for m in (f'proxy="{self.writer_backend}"', self.only) if m)
        writer = f"haproxy_backend_active_servers{{{matchers}}}"
        return {
            "leader": f"max by ({sc}, {nm}) ({self._m('patroni_primary')}) == 1",
            "total": self.total(),
            "up": f"sum {by} ({self._m('patroni_postgres_running')})",
            "streaming": f"sum {by} ({self._m('patroni_postgres_streaming')})",
            "timeline": f"max {by} ({self._m('patroni_postgres_timeline')})",
            # Timelines only grow: how far they moved in the hour is how many switches. changes()
            # is not used: VictoriaMetrics counts a series' first sample in the window as one.
            "timeline_changes": MOVES
            if self.staged
            else (
                f"max {by} (max_over_time({self._m('patroni_postgres_timeline')}[1h]) "
                f"- min_over_time({self._m('patroni_postgres_timeline')}[1h]))"
            ),
            "pending_restart": f"sum {by} ({self._m('patroni_pending_restart')})",
            "paused": f"max {by} ({self._m('patroni_is_paused')})",
            "dcs_last_seen": f"min {by} ({self._m('patroni_dcs_last_seen')} > 0)",
            "lag": f"max {by} ({self._m('patroni_xlog_location')}) - on ({sc}) {replayed}",
            # HAProxy's exporter carries no Patroni selector: kept to the clusters selected (staged:
            # by the recorded clusters whose Patronis answer, not every member's series again).
            "writer": f"sum {by} ({writer}) and on ({sc}) "
            + (self._primaries() if self.staged else self._m("patroni_postgres_running")),
        }

    def leaders(self) -> str:
        """Per cluster with a leader, how many members say they are."""
        return f"count by ({self.scope_label}) ({self._m('patroni_primary')} == 1)"

    def primaries(self) -> str:
        """Per cluster whose Patronis answer, how many members say they lead (0 included)."""
        return f"sum by ({self.scope_label}) ({self._m('patroni_primary')})"

    def hourly(self) -> dict[str, str]:
        """What the rule file records once a minute: the reads over the last hour (SEEN, MOVES, MEMBERS)."""
        unstaged = dataclasses.replace(self, staged=False)
        return {
            SEEN: unstaged.seen(),
            MOVES: unstaged.parts()["timeline_changes"],
            MEMBERS: f"count by ({self.scope_label}) ({SEEN})",  # after SEEN, in the same group
        }

    def terms(self) -> dict[str, str]:
        """Each rule as PromQL: per cluster it applies to, its points (RULES)."""
        sc, nm = self.scope_label, self.name_label
        p = self.parts()
        running, primary = self._m("patroni_postgres_running"), self._m("patroni_primary")
        leaders = f"({self._primaries()} > 0)" if self.staged else self.leaders()
        gone = f"{self.seen()} unless on ({sc}, {nm}) ({running} == 1)"
        streaming = self._m("patroni_postgres_streaming")
        idle = f"({running} == 1) unless on ({sc}, {nm}) ({primary} == 1 or {streaming} == 1)"

        def flat(key: Rule, when: str) -> str:
            return f"({when}) * 0 + {RULES[key.id].points()}"

        def counted(key: Rule, what: str) -> str:
            rule = RULES[key.id]
            times = f"count by ({sc}) ({what}) * {rule.weight}"
            capped = times if rule.cap is None else f"clamp_max({times}, {rule.cap})"
            return f"{capped} * {SCALE[rule.level]}"

        terms = {
            LEADER_NONE: flat(LEADER_NONE, f"({p['total']}) unless on ({sc}) {leaders}"),
            LEADER_SEVERAL: flat(LEADER_SEVERAL, f"{leaders} > 1"),
            ROUTING_WRITER_POOL: flat(ROUTING_WRITER_POOL, f"({p['writer']}) != 1"),
            PATRONI_DCS_STALE: flat(PATRONI_DCS_STALE, f"time() - ({p['dcs_last_seen']}) > {DCS_STALE_S:g}"),
            PATRONI_MEMBER_DOWN: counted(PATRONI_MEMBER_DOWN, gone),
            PATRONI_NOT_STREAMING: counted(PATRONI_NOT_STREAMING, idle),
            REPLICATION_LAG: flat(REPLICATION_LAG, f"({p['lag']}) > {self.lag_warn_bytes}"),
            PATRONI_PAUSED: flat(PATRONI_PAUSED, f"({p['paused']}) == 1"),
            PATRONI_PENDING_RESTART: flat(PATRONI_PENDING_RESTART, f"({p['pending_restart']}) > 0"),
            PATRONI_SWITCHED: flat(PATRONI_SWITCHED, f"({p['timeline_changes']}) > 0"),
        }
        return {rule.id: expr for rule, expr in terms.items()}

    def severity(self) -> str:
        """Every cluster's severity (RULES' points summed; 0 when nothing applies)."""
        tagged = " or ".join(self.tag(k, v) for k, v in self.terms().items())
        return f"(sum by ({self.scope_label}) ({tagged}) or ({self.total()}) * 0)"

    def rules_identity(self) -> dict[str, str]:
        """The labels a rule file written for these queries carries on its version series."""
        return {"scope_label": self.scope_label, "name_label": self.name_label,
                "writer_backend": self.writer_backend, "selector": self.selector,
                "lag_warn_bytes": str(self.lag_warn_bytes)}  # fmt: skip


@dataclass(frozen=True)
class FleetCounts:
    """Every cluster Prometheus knows (under the selector), by state."""

    total: int = 0
    crit: int = 0
    warn: int = 0

    @property
    def ok(self) -> int:
        """Clusters with nothing wrong."""
        return max(0, self.total - self.crit - self.warn)


@dataclass(frozen=True)
class FleetPage:
    """One refresh: every cluster counted by state, the worst ones in full."""

    rows: list[FleetRow]
    counts: FleetCounts
    bytes_read: int = 0
    warnings: tuple[str, ...] = ()  # the engine's word that its answer is partial or doubtful
    source: str = LIVE  # how it was ranked: recorded rules (and how fresh), or live PromQL (and why)


def counts_of(samples: Sequence[Sample]) -> FleetCounts:
    """The "counts" answer: clusters per level (count_values by ``level``)."""
    got: dict[int, int] = {}
    for sample in samples:
        level = sample.labels.get("level")
        if level in ("0", "1", "2") and 0 <= sample.value < 1e9:
            got[int(level)] = int(sample.value)
    return FleetCounts(total=sum(got.values()), crit=got.get(CRIT, 0), warn=got.get(WARN, 0))


@dataclass(frozen=True, slots=True)
class FleetRow:
    """One cluster as the fleet screen shows it."""

    scope: str
    leader: str | None
    members_up: int
    members_total: int
    replicas: int
    streaming: int
    max_lag_bytes: int | None
    timeline: int | None
    timeline_changes: int
    pending_restart: int
    paused: bool
    dcs_age_s: float | None
    writer_up: int | None  # HAProxy writer backend's active servers; None where not scraped
    instances: tuple[str, ...] = ()  # host:port of each member's /metrics (its REST root)
    problems: tuple[Verdict, ...] = ()  # each rule that applies, on the cluster
    severity: int = 0  # the sort: RULES' points summed

    @property
    def said(self) -> tuple[str, ...]:
        """The problems' words, as the row shows them."""
        return tuple(p.text for p in self.problems)

    @property
    def level(self) -> Level:
        """OK, WARN or CRIT: the worst rule that applies, read off the severity."""
        return level_of(self.severity)


@dataclass
class _Acc:
    members: set[str] = field(default_factory=set)
    instances: dict[str, str] = field(default_factory=dict)
    leaders: list[str] = field(default_factory=list)
    values: dict[str, float] = field(default_factory=dict)


def build_rows(
    answers: Mapping[str, Sequence[Sample]],
    *,
    now: float,
    scope_label: str = "scope",
    name_label: str = "name",
    lag_warn_bytes: int = LAG_WARN_BYTES,
) -> list[FleetRow]:
    """Rows for the clusters the "fleet" answer holds, worst first; the "members" answer names them."""
    acc: dict[str, _Acc] = {}
    for s in answers.get("fleet", ()):
        scope = s.labels.get(scope_label)
        kind = s.labels.get(Q)
        if not scope or not kind:
            continue
        a = acc.get(scope) or acc.setdefault(scope, _Acc())
        if kind == "leader":
            a.leaders.append(s.labels.get(name_label) or "?")
        else:
            a.values[kind] = s.value
    for s in answers.get("members", ()):
        a_or_none = acc.get(s.labels.get(scope_label) or "")
        if a_or_none is None:
            continue  # a cluster not among the rows read in full
        name = s.labels.get(name_label) or s.labels.get("instance") or "?"
        a_or_none.members.add(name)
        instance = s.labels.get("instance")
        if instance:
            a_or_none.instances[name] = instance
    rows = [_row(scope, a, now, lag_warn_bytes) for scope, a in acc.items()]
    rows.sort(key=lambda r: (-r.severity, r.scope))
    return rows


def _count(value: float | None) -> int:
    return int(value) if value is not None and 0 <= value < 1e6 else 0


def _row(scope: str, a: _Acc, now: float, lag_warn_bytes: int) -> FleetRow:
    v = a.values
    leaders = sorted(a.leaders)
    total = max(len(a.members | set(leaders)), _count(v.get("total")), _count(v.get("up")))
    up = min(_count(v.get("up")), total)
    replicas = max(0, total - len(leaders))
    streaming = min(_count(v.get("streaming")), replicas)
    raw_lag = v.get("lag")
    lag = int(max(0.0, raw_lag)) if raw_lag is not None and leaders else None
    timeline = _count(v.get("timeline")) if "timeline" in v else None
    tl_changes = _count(v.get("timeline_changes"))
    pending = _count(v.get("pending_restart"))
    paused = v.get("paused") == 1
    seen = v.get("dcs_last_seen")
    dcs_age = max(0.0, now - seen) if seen is not None else None
    writer = _count(v.get("writer")) if "writer" in v else None
    # Each rule that applies: (key, times counted, the problem's words or "" when it is no problem).
    found: list[tuple[Rule, int, str]] = []
    if not leaders:
        found.append((LEADER_NONE, 1, "no leader"))
    elif len(leaders) > 1:
        found.append((LEADER_SEVERAL, 1, f"{len(leaders)} leaders"))
    if writer is not None and writer != 1:
        found.append((ROUTING_WRITER_POOL, 1, f"writer has {writer} UP"))
    if up < total:
        found.append((PATRONI_MEMBER_DOWN, total - up, f"{total - up} down"))
    idle = max(0, up - len(leaders) - streaming)  # replicas running but not streaming (down ones are down)
    if idle:
        found.append((PATRONI_NOT_STREAMING, idle, f"{idle} not streaming"))
    if lag is not None and lag > lag_warn_bytes:
        found.append((REPLICATION_LAG, 1, "lagging"))
    if paused:
        found.append((PATRONI_PAUSED, 1, "maintenance mode"))
    if dcs_age is not None and dcs_age > DCS_STALE_S:
        found.append((PATRONI_DCS_STALE, 1, "DCS not seen"))
    if pending:
        found.append((PATRONI_PENDING_RESTART, 1, "pending restart"))
    if tl_changes:
        found.append((PATRONI_SWITCHED, 1, ""))
    return FleetRow(
        scope=scope,
        leader=", ".join(leaders) or None,
        members_up=up,
        members_total=total,
        replicas=replicas,
        streaming=streaming,
        max_lag_bytes=lag,
        timeline=timeline,
        timeline_changes=tl_changes,
        pending_restart=pending,
        paused=paused,
        dcs_age_s=dcs_age,
        writer_up=writer,
        instances=tuple(a.instances[n] for n in sorted(a.instances)),
        problems=tuple(
            Verdict(rule=rule.id, level=RULES[rule.id].level, subject=scope, text=text)
            for rule, _, text in found
            if text
        ),
        severity=sum(RULES[rule.id].points(n) for rule, n, _ in found),
    )


def matches(row: FleetRow, text: str) -> bool:
    """Whether a filter text (case-insensitive substring) matches the row's cluster, leader or problems."""
    if not text:
        return True
    needle = text.lower()
    return any(needle in cell.lower() for cell in (row.scope, row.leader or "", *row.said))


# -- history from range queries -----------------------------------------------------------------


def _at(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, UTC)


def _by_member(series: Iterable[Series], name_label: str) -> dict[str, dict[float, float]]:
    out: dict[str, dict[float, float]] = {}
    for s in series:
        name = s.labels.get(name_label) or s.labels.get("instance") or "?"
        # Keyed to the millisecond: Prometheus's timestamps and start + k·step differ in the last bits.
        out.setdefault(name, {}).update((round(t, 3), v) for t, v in s.points)
    return out


def history_events(
    primary: Sequence[Series],
    timeline: Sequence[Series],
    running: Sequence[Series],
    *,
    steps: Sequence[float],
    name_label: str = "name",
) -> list[Event]:
    """Leader changes, timeline bumps and member outages from range series sampled at ``steps``."""
    events: list[Event] = []
    steps = [round(t, 3) for t in steps]
    prim = _by_member(primary, name_label)
    leader: str | None = None
    known = False  # whether the previous step had any sample: before the first, nothing changed
    for t in steps:
        now = sorted(n for n, pts in prim.items() if pts.get(t) == 1)
        cur = now[0] if len(now) == 1 else (None if not now else ", ".join(now))
        had, known = known, any(t in pts for pts in prim.values())
        if cur != leader and had:
            text = f"leader {leader or 'none'} → {cur or 'none'}"
            events.append(Event(at=_at(t), kind="leader", node=cur, text=text, severity=2, source="patroni"))
        leader = cur
    tl: int | None = None
    tls = _by_member(timeline, name_label)
    for t in steps:
        values = [int(pts[t]) for pts in tls.values() if t in pts]
        if values:
            top = max(values)
            if tl is not None and top > tl:
                events.append(
                    Event(
                        at=_at(t),
                        kind="timeline",
                        text=f"timeline {tl} → {top}",
                        severity=1,
                        source="patroni",
                    )
                )
            tl = top if tl is None else max(tl, top)
    for name, pts in sorted(_by_member(running, name_label).items()):
        down_since: float | None = None
        for t in steps:
            ok = pts.get(t) == 1
            if not ok and down_since is None and any(s < t for s in pts):
                down_since = t
            elif ok and down_since is not None:
                events.append(_member_down(name, down_since, t))
                down_since = None
        if down_since is not None:
            events.append(_member_down(name, down_since, None))
    events.sort(key=lambda e: e.at)
    return events


def _member_down(name: str, since: float, until: float | None) -> Event:
    """A member outage from ``since``, with its end and duration once it came back."""
    return Event(
        at=_at(since),
        kind="member",
        node=name,
        text=f"{name} down",
        severity=2,
        source="patroni",
        ended_at=None if until is None else _at(until),
        duration_s=None if until is None else until - since,
    )
