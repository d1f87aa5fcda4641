"""The fleet view's data: Prometheus samples → one row per Patroni cluster, and history → events. Pure."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from pgtop_ha.models.event import Event

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


@dataclass(frozen=True)
class FleetQueries:
    """The PromQL of one refresh: two queries whatever the number of clusters; label names configurable.

    Prometheus aggregates per cluster (``by (scope)``) so an answer holds about one series per
    cluster and aggregate, tagged with label ``q``: 1,000 clusters are ~10,000 small series, not
    the 30,000+ labelled member series a plain selector returns (most of the CPU was JSON).
    """

    scope_label: str = "scope"
    name_label: str = "name"
    writer_backend: str = "pg_writer"
    selector: str = ""  # extra matchers, e.g. 'job="patroni"'

    def _m(self, metric: str) -> str:
        return f"{metric}{{{self.selector}}}" if self.selector else metric

    def _tag(self, name: str, expr: str) -> str:
        return f'label_replace({expr}, "{Q}", "{name}", "", "")'

    def all(self) -> dict[str, str]:
        """Query name → PromQL."""
        sc, nm = self.scope_label, self.name_label
        by = f"by ({sc})"
        leader = f"max by ({sc}, {nm}) ({self._m('patroni_primary')}) == 1"
        replayed = (
            f"min {by} ({self._m('patroni_xlog_replayed_location')} "
            f"unless on ({sc}, {nm}) ({self._m('patroni_primary')} == 1))"
        )
        parts = {
            "leader": leader,
            "up": f"sum {by} ({self._m('patroni_postgres_running')})",
            "streaming": f"sum {by} ({self._m('patroni_postgres_streaming')})",
            "timeline": f"max {by} ({self._m('patroni_postgres_timeline')})",
            "timeline_changes": f"max {by} (changes({self._m('patroni_postgres_timeline')}[1h]))",
            "pending_restart": f"sum {by} ({self._m('patroni_pending_restart')})",
            "paused": f"max {by} ({self._m('patroni_is_paused')})",
            "dcs_last_seen": f"min {by} ({self._m('patroni_dcs_last_seen')} > 0)",
            "lag": f"max {by} ({self._m('patroni_xlog_location')}) - on ({sc}) {replayed}",
            "writer": f'sum {by} (haproxy_backend_active_servers{{proxy="{self.writer_backend}"}})',
        }
        fleet = " or ".join(self._tag(k, v) for k, v in parts.items())
        members = f"max by ({sc}, {nm}, instance) (max_over_time({self._m('patroni_postgres_running')}[1h]))"
        return {"fleet": fleet, "members": members}


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
    problems: tuple[str, ...] = ()
    severity: int = 0

    def cells(self) -> tuple[str, ...]:
        """The row's texts, in COLUMNS order."""
        return (
            self.scope,
            self.leader or "NONE",
            f"{self.members_up}/{self.members_total}",
            f"{self.streaming}/{self.replicas}",
            _bytes(self.max_lag_bytes),
            "-" if self.timeline is None else str(self.timeline),
            str(self.timeline_changes),
            str(self.pending_restart) if self.pending_restart else "",
            "paused" if self.paused else "",
            "-" if self.dcs_age_s is None else f"{self.dcs_age_s:.0f}s",
            "-" if self.writer_up is None else ("1 UP" if self.writer_up == 1 else f"{self.writer_up} UP!"),
            "; ".join(self.problems),
        )


COLUMNS = ("cluster", "leader", "up", "streaming", "max lag", "TL", "TL Δ1h", "restart", "paused",
           "DCS seen", "writer", "problems")  # fmt: skip


def _bytes(n: int | None) -> str:
    if n is None:
        return "-"
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1024:
            return f"{n}{unit}"
        n //= 1024
    return f"{n}TB"


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
) -> list[FleetRow]:
    """Rows from a refresh's answers, worst first; samples without the scope label are skipped."""
    acc: dict[str, _Acc] = {}
    for s in answers.get("members", ()):
        scope = s.labels.get(scope_label)
        if not scope:
            continue
        a = acc.get(scope) or acc.setdefault(scope, _Acc())
        name = s.labels.get(name_label) or s.labels.get("instance") or "?"
        a.members.add(name)
        instance = s.labels.get("instance")
        if instance:
            a.instances[name] = instance
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
    rows = [_row(scope, a, now) for scope, a in acc.items()]
    rows.sort(key=lambda r: (-r.severity, r.scope))
    return rows


def _count(value: float | None) -> int:
    return int(value) if value is not None and 0 <= value < 1e6 else 0


def _row(scope: str, a: _Acc, now: float) -> FleetRow:
    v = a.values
    leaders = sorted(a.leaders)
    total = max(len(a.members | set(leaders)), _count(v.get("up")))
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
    problems: list[str] = []
    severity = 0
    if not leaders:
        problems.append("no leader")
        severity += 100
    elif len(leaders) > 1:
        problems.append(f"{len(leaders)} leaders")
        severity += 100
    if writer is not None and writer != 1:
        problems.append(f"writer has {writer} UP")
        severity += 50
    if up < total:
        problems.append(f"{total - up} down")
        severity += 10 * (total - up)
    if streaming < replicas:
        problems.append(f"{replicas - streaming} not streaming")
        severity += 5 * (replicas - streaming)
    if lag is not None and lag > LAG_WARN_BYTES:
        problems.append("lagging")
        severity += 5
    if tl_changes:
        severity += 2
    if paused:
        severity += 3
    if pending:
        severity += 1
    if dcs_age is not None and dcs_age > 60:
        problems.append("DCS not seen")
        severity += 20
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
        problems=tuple(problems),
        severity=severity,
    )


def matches(row: FleetRow, text: str) -> bool:
    """Whether a filter text (case-insensitive substring) matches the row's cluster, leader or problems."""
    if not text:
        return True
    needle = text.lower()
    return any(needle in cell.lower() for cell in (row.scope, row.leader or "", *row.problems))


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
