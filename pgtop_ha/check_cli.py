"""`pgtop-ha check`: the judge's verdicts for scripts and monitoring, in the monitoring-plugin format."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Sequence
from typing import Any

from pgtop_ha.clock import system_clock
from pgtop_ha.collect.poller import Poller
from pgtop_ha.collect.snapshot_cli import first_problem, nothing_reachable
from pgtop_ha.engines.session import Session
from pgtop_ha.judge.verdicts import healthy, worst
from pgtop_ha.models.haproxy import is_up, routes
from pgtop_ha.models.leader import is_leader
from pgtop_ha.models.snapshot import POSTGRES_OFF, ClusterSnapshot
from pgtop_ha.models.text import clean
from pgtop_ha.models.thresholds import Band, Level
from pgtop_ha.models.verdict import Verdict
from pgtop_ha.settings import Settings

UNKNOWN = 3  # the monitoring-plugin code for "could not tell"
STATUS = {0: "OK", 1: "WARNING", 2: "CRITICAL", UNKNOWN: "UNKNOWN"}
SHOWN = 3  # verdicts named on the status line; the rest follow one per line


def unknown_why(snap: ClusterSnapshot) -> str | None:
    """Why the cluster's state cannot be told from ``snap`` (None when it can)."""
    if nothing_reachable(snap):
        return f"nothing was reachable ({first_problem(snap)})"
    if not snap.cluster.reachable and not snap.members:
        return "Patroni's /cluster did not answer: the members and the leader are not known"
    return None


def _num(value: float) -> str:
    """A perfdata number: whole numbers in full (no exponent), others to three decimals."""
    return str(int(value)) if float(value).is_integer() else f"{value:.3f}"


def _perf(label: str, value: float | None, unit: str = "", band: Band | None = None) -> str | None:
    if value is None:
        return None
    warn, crit = (_num(band.warn), _num(band.crit)) if band is not None else ("", "")
    return f"{label}={_num(value)}{unit};{warn};{crit};0"


def perfdata(snap: ClusterSnapshot, settings: Settings) -> list[str]:
    """Figures for graphs, in the monitoring-plugin format (label=value[UOM];warn;crit;min;max)."""
    t = settings.thresholds
    pools = settings.haproxy.pools()
    lags = [m.lag_bytes for m in snap.members if not is_leader(m) and m.lag_bytes is not None]
    slots = [
        s.retained_bytes for n in snap.nodes if n.reachable for s in n.slots if s.retained_bytes is not None
    ]
    ready = [n.archiver.ready_count for n in snap.nodes if n.reachable and n.archiver is not None]
    writers = routes(snap, pools, "writer")
    parts = [
        _perf("members", len(snap.members)),
        _perf("leaders", sum(1 for m in snap.members if is_leader(m))),
        _perf("pg_reachable", sum(1 for n in snap.nodes if n.reachable) if snap.postgres_read else None),
        _perf("writers_up", sum(1 for s in writers.values() if is_up(s)) if snap.haproxy.servers else None),
        _perf("max_lag", max(lags) if lags else None, "B", t.lag_bytes),
        _perf("max_slot_retained", max(slots) if slots else None, "B", t.slot_retained_bytes),
        _perf("archive_ready", max((r for r in ready if r is not None), default=None), "", t.archive_ready),
    ]
    return [p for p in parts if p is not None]


def _line(v: Verdict) -> str:
    who = f"{v.subject}: " if v.subject and not v.text.startswith(f"{v.subject}:") else ""
    return clean(f"{who}{v.text}")


def status_line(code: int, verdicts: Sequence[Verdict], why: str | None, perf: Sequence[str]) -> str:
    """The plugin's first line: status, the worst verdicts in words, then perfdata after '|'."""
    if why is not None:
        text = why
    else:
        bad = [v for v in verdicts if v.counts and v.level > Level.OK]
        if not bad:
            text = "healthy" if not verdicts else f"healthy ({len(verdicts)} within their grace period)"
        else:
            text = "; ".join(_line(v) for v in bad[:SHOWN])
            if len(bad) > SHOWN:
                text += f" (+{len(bad) - SHOWN} more)"
    line = f"PGTOP-HA {STATUS[code]} - {clean(text).replace('|', '/')}"
    return f"{line} | {' '.join(perf)}" if perf else line


async def _observe(
    settings: Settings, wait_s: float | None
) -> tuple[ClusterSnapshot, tuple[Verdict, ...], int]:
    """Poll once (or until healthy within ``wait_s``); the last snapshot, its verdicts and polls made."""
    poller = Poller.from_settings(settings, system_clock)
    session = Session(clock=system_clock, judging=settings.judging())
    deadline = time.monotonic() + (wait_s or 0.0)
    polls = 0
    try:
        while True:
            began = time.monotonic()
            snap = await poller.cycle()
            polls += 1
            session.observe(snap)
            verdicts = session.judged(snap).verdicts
            done = wait_s is None or (unknown_why(snap) is None and healthy(verdicts))
            if done or time.monotonic() >= deadline:
                return snap, verdicts, polls
            await asyncio.sleep(max(0.0, settings.interval - (time.monotonic() - began)))
    finally:
        await poller.aclose()


def run_check(settings: Settings, *, as_json: bool, wait_healthy: float | None) -> int:
    """Print the status line (or JSON) and return 0 OK, 1 WARNING, 2 CRITICAL or 3 UNKNOWN."""
    snap, verdicts, polls = asyncio.run(_observe(settings, wait_healthy))
    why = unknown_why(snap)
    code = UNKNOWN if why is not None else int(worst(verdicts, settled=wait_healthy is not None))
    perf = perfdata(snap, settings)
    if as_json:
        doc: dict[str, Any] = {
            "status": STATUS[code],
            "exit_code": code,
            "unknown": why,
            "taken_at": snap.taken_at.isoformat(),
            "polls": polls,
            "verdicts": [v.model_dump(mode="json") for v in verdicts],
            "perfdata": perf,
            "postgres_read": snap.postgres_read,
        }
        print(json.dumps(doc, indent=2, ensure_ascii=True))
        return code
    print(status_line(code, verdicts, why, perf))
    if not snap.postgres_read:
        print(f"PostgreSQL {POSTGRES_OFF}: judged from Patroni and HAProxy alone")
    for v in verdicts:
        mark = "" if v.counts else " (within its grace period)"
        print(f"{Level(v.level).name} {v.rule}: {_line(v)}{mark}")
    if wait_healthy is not None and not healthy(verdicts):
        print(f"not healthy after {wait_healthy:g}s")
    return code
