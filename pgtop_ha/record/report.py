"""`pgtop-ha events FILE`: a recording's timeline and failover stopwatch, for a failure-test report.

The timeline is the events as recorded (with markers and actions). The stopwatch figures are
recomputed: every recorded snapshot goes through a fresh Timeline, with the recorded markers
at their times, so a recording made before an improvement of the stopwatch still gets it.
"""

from __future__ import annotations

import json
import shutil
from datetime import datetime
from pathlib import Path
from typing import Any

from pgtop_ha.clock import system_clock
from pgtop_ha.engines.session import Session
from pgtop_ha.engines.timeline import Timeline
from pgtop_ha.models.event import Event
from pgtop_ha.models.haproxy import DEFAULT_POOLS, Pools
from pgtop_ha.models.sections import Judging
from pgtop_ha.models.text import clean, fit
from pgtop_ha.record.reader import Marker, Recording
from pgtop_ha.record.store import from_epoch

_CORE = ("at", "kind", "node", "text", "severity")
_LEVELS = {0: "info", 1: "WARN", 2: "CRIT"}
_HEADER_KEYS = (
    "pgtop_ha_version",
    "textual_version",
    "python_version",
    "sqlite_version",
    "role",
    "host",
    "started_at",
    "ended_at",
    "record_max",
    "interval",
    "thinned_until",
    "snapshots_thinned",
)


def recorded_pools(header: dict[str, Any]) -> Pools:
    """The writer/reader backend names the recording was judged with (today's defaults if absent)."""
    settings = header.get("settings")
    haproxy = settings.get("haproxy") if isinstance(settings, dict) else None
    if isinstance(haproxy, dict):
        writer, reader = haproxy.get("writer_backends"), haproxy.get("reader_backends")
        if isinstance(writer, list) and isinstance(reader, list):
            return Pools(tuple(map(str, writer)), tuple(map(str, reader)))
    return DEFAULT_POOLS


def recompute(recording: Recording, markers: list[Marker] | None = None) -> Timeline:
    """A fresh Timeline fed every recorded snapshot, with each marker before the first snapshot after it."""
    session = Session(clock=system_clock, judging=Judging(pools=recorded_pools(recording.header)))
    markers = recording.markers() if markers is None else markers
    session.replay(
        recording.snapshots(),
        [Event(at=m.at, kind="marker", text=m.text, source=m.source) for m in markers],
    )
    return session.timeline


DISK_FULL_BYTES = 1024**2  # free space below this on a recording's filesystem: full


def _disk_full(path: Path) -> bool:
    try:
        return shutil.disk_usage(path.parent).free < DISK_FULL_BYTES
    except OSError:
        return False


def build_report(recording: Recording, *, recompute_events: bool = False) -> dict[str, Any]:
    """The report as JSON-ready data: header, span, events, markers, failovers."""
    first, last = recording.first(), recording.last()
    markers = recording.markers()
    timeline = recompute(recording, markers)
    if recompute_events:
        # Actions cannot be derived from snapshots: keep the recorded ones.
        events = [e.model_dump(mode="json") for e in timeline.events()]
        events += [e for e in recording.event_rows() if e.get("kind") == "action"]
        events.sort(key=lambda e: str(e.get("at")))
    else:
        events = recording.event_rows()
    header = {k: recording.header[k] for k in _HEADER_KEYS if k in recording.header}
    return {
        "recording": str(recording.path),
        "header": header,
        "complete": "ended_at" in recording.header,
        # Why it ended early, as the recorder wrote it; else whether its disk is full now.
        "stopped": recording.header.get("stopped_early"),
        "disk_full": _disk_full(recording.path),
        "span": {
            "from": first.when.isoformat() if first else None,
            "to": last.when.isoformat() if last else None,
            "seconds": round(last.taken_at - first.taken_at, 3) if first and last else 0.0,
            "snapshots": recording.count(),
        },
        "events": events,
        "markers": [{"at": m.at.isoformat(), "text": m.text, "source": m.source} for m in markers],
        "failovers": [f.model_dump(mode="json") for f in timeline.failovers()],
        # Rows that could not be read (damaged, hostile, from another program): skipped, counted.
        "skipped_rows": recording.skipped,
    }


def _time(value: Any, with_ms: bool = True) -> str:
    try:
        when = datetime.fromisoformat(str(value)).astimezone()
    except ValueError:
        return clean(str(value))[:23]
    return when.strftime("%H:%M:%S.%f")[:12] if with_ms else when.strftime("%H:%M:%S")


def _seconds(value: Any) -> str:
    return f"{value:.1f} s" if isinstance(value, int | float) else "-"


_QUIET = ("id", "source")  # in the JSON; noise in a table


def _extra(row: dict[str, Any], skip: tuple[str, ...]) -> str:
    extras = []
    for key, value in row.items():
        if key in skip or key in _QUIET or value in (None, "", [], {}):
            continue
        if key == "count" and value == 1:
            continue
        if key == "duration_s" and isinstance(value, int | float):
            extras.append(f"lasted {value:.1f} s")
        elif key == "ended_at":
            extras.append(f"until {_time(value)}")
        else:
            extras.append(f"{key}={clean(str(value))[:60]}")
    return f" ({', '.join(extras)})" if extras else ""


def _failover_lines(n: int, f: dict[str, Any]) -> list[str]:
    old = clean(str(f.get("old_leader") or "?"))[:64]
    new = clean(str(f["new_leader"]))[:64] if f.get("new_leader") else None
    head = f"  {n}. {_time(f.get('lost_at'))} leader {old} lost"
    head += f" → {new} elected after {_seconds(f.get('election_s'))}" if new else " → no new leader yet"
    if f.get("leader_kept") is True:
        head = f"  {n}. {_time(f.get('lost_at'))} writes failed on the leader {old}, no leader change"
    if not f.get("done"):
        head += " (still running when the recording ended)"
    lines = [head]
    if f.get("leader_down_at"):
        lines.append(
            f"     {old} stopped answering at {_time(f.get('leader_down_at'))}: "
            f"new leader {_seconds(f.get('down_to_elected_s'))} later"
        )
    if f.get("write_outage_from"):
        to = _time(f.get("write_outage_to")) if f.get("write_outage_to") else "…"
        since = _time(f.get("write_outage_from"))
        bounds = [
            f"{what} after {_time(f.get(key))}"
            for what, key in (("began", "write_outage_from_after"), ("ended", "write_outage_to_after"))
            if f.get(key)
        ]
        seen = f" ({', '.join(bounds)}: the polls before)" if bounds else ""
        lines.append(f"     write outage {since} → {to}: {_seconds(f.get('write_outage_s'))}{seen}")
    if f.get("client_write_outage_from"):
        to = _time(f.get("client_write_outage_to")) if f.get("client_write_outage_to") else "…"
        since = _time(f.get("client_write_outage_from"))
        seconds = _seconds(f.get("client_write_outage_s"))
        lines.append(f"     client writes (write probe) down {since} → {to}: {seconds}")
    lag = f.get("lag_at_promotion_bytes")
    slots = f.get("permanent_slots_ok")
    if f.get("leader_kept") is True:
        return lines
    lost_s = f.get("lag_at_promotion_s")
    if isinstance(lag, int) and lag and isinstance(lost_s, int | float):
        lag = f"{lag} B (the old leader's last {lost_s:.1f} s of writes or more)"
    elif lag is not None:
        lag = f"{lag} B"
    lines.append(
        f"     lag at promotion: {'-' if lag is None else lag}; "
        f"replicas streaming after {_seconds(f.get('replicas_streaming_s'))}; "
        f"permanent slots: {'-' if slots is None else ('ok' if slots else 'MISSING')}"
    )
    shown = (
        "lost_at", "old_leader", "new_leader", "elected_at", "election_s", "write_outage_from",
        "write_outage_to", "write_outage_s", "write_outage_from_after", "write_outage_to_after",
        "lag_at_promotion_bytes", "lag_at_promotion_s",
        "replicas_streaming_at",
        "replicas_streaming_s", "permanent_slots_ok", "done", "leader_down_at", "down_to_elected_s",
        "client_write_outage_from", "client_write_outage_to", "client_write_outage_s", "leader_kept",
    )  # fmt: skip
    more = _extra(f, shown)
    if more:
        lines.append(f"     {more.strip(' ()')}")
    return lines


NAME_LIMIT = 64  # a longer node name (a hostile recording's) ends in "…"


def format_events(events: list[dict[str, Any]]) -> str:
    """Events (as JSON rows) in the timeline's text format: a header line, then one line each."""
    # Columns as wide as their widest value: a name cut to fit could read as another member's.
    nodes = [fit(clean(str(e.get("node") or "-")), NAME_LIMIT) for e in events]
    kinds = [fit(clean(str(e.get("kind"))), NAME_LIMIT) for e in events]
    nw, kw = max([4, *map(len, nodes)]), max([4, *map(len, kinds)])
    out = [f"{'TIME':<12}  {'LEVEL':<5}  {'NODE':<{nw}}  {'KIND':<{kw}}  WHAT"]
    for e, node, kind in zip(events, nodes, kinds, strict=True):
        severity = e.get("severity")
        level = _LEVELS.get(severity if isinstance(severity, int) else 0, "info")
        out.append(
            f"{_time(e.get('at')):<12}  {level:<5}  {node:<{nw}}  {kind:<{kw}}  "
            f"{clean(str(e.get('text')))}{_extra(e, _CORE)}"
        )
    if not events:
        out.append("(no events)")
    return "\n".join(out)


def format_report(report: dict[str, Any]) -> str:
    """The report as a readable text table (local times)."""
    h, span = report["header"], report["span"]
    out = [
        f"{report['recording']}: {h.get('role', '?')} on {h.get('host', '?')}, "
        f"pgtop-ha {h.get('pgtop_ha_version', '?')}, Python {h.get('python_version', '?')}",
    ]
    if span["from"]:
        start = datetime.fromisoformat(span["from"]).astimezone()
        out.append(
            f"from {start:%Y-%m-%d %H:%M:%S %z} to {_time(span['to'], False)}: "
            f"{span['seconds']:.0f} s, {span['snapshots']} snapshots"
        )
    if "thinned_until" in h:
        out.append(f"snapshots thinned before {_time(from_epoch(float(h['thinned_until'])).isoformat())}")
    if report.get("skipped_rows"):
        out.append(f"{report['skipped_rows']} rows could not be read and were skipped (a damaged file?)")
    if report.get("stopped"):
        out.append(f"the recorder stopped early ({clean(str(report['stopped']))[:200]}): it ends there")
    elif not report["complete"] and report.get("disk_full"):
        out.append("not closed cleanly, and its disk is full now: the recorder could not write; it ends at "
                   "its last whole cycle")  # fmt: skip
    elif not report["complete"]:
        out.append("not closed cleanly (the recorder was killed or could not write): it ends at its last "
                   "whole cycle")  # fmt: skip
    out += ["", format_events(report["events"])]
    out += ["", "Write outages and failovers (stopwatch, recomputed from the snapshots)"]
    for n, f in enumerate(report["failovers"], 1):
        out += _failover_lines(n, f)
    if not report["failovers"]:
        out.append("  (no write outage, no leader lost)")
    return "\n".join(out)


def run_events(path: Path, *, as_json: bool, recompute_events: bool = False) -> int:
    """`pgtop-ha events FILE [--json]`: print the report; the exit code."""
    recording = Recording.open(path)
    try:
        report = build_report(recording, recompute_events=recompute_events)
    finally:
        recording.close()
    print(json.dumps(report, indent=2, ensure_ascii=False) if as_json else format_report(report))
    return 0
