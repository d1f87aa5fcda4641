"""One lab per PostgreSQL and Patroni version: every pane and JSON field, read or not, and why."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pgtop_ha.collect.snapshot_cli import take_snapshot
from pgtop_ha.lab.cluster import Lab
from pgtop_ha.lab.configs import NATIVE_SLOT_SYNC
from pgtop_ha.models.snapshot import ClusterSnapshot
from pgtop_ha.settings import Settings, load_settings
from pgtop_ha.ui.panes.base import Context
from pgtop_ha.ui.panes.registry import PANES

# The cases `pytest -m matrix` walks: every PostgreSQL under Patroni 4.1, and 16 under 3.3.
CASES = ((14, "4.1"), (15, "4.1"), (16, "4.1"), (17, "4.1"), (18, "4.1"), (16, "3.3"))
# A pane whose whole source a version or a grant may lack, by its `unavailable` key.
PANE_SOURCE = {"copy": "copy_progress", "cache": "cache", "locks": "locks", "waits": "locks"}


# Filled by the tests, read by conftest's session end: one module both import by the same name.
REPORTS: dict[str, Report] = {}


def case_id(case: tuple[int, str]) -> str:
    """pg18-patroni4.1, the test id and the page's column."""
    return f"pg{case[0]}-patroni{case[1]}"


@dataclass
class Report:
    """What one version showed: per pane and per JSON field, read, not applicable, or failing."""

    postgres: str = ""
    patroni: str = ""
    panes: dict[str, str] = field(default_factory=dict)
    fields: dict[str, str] = field(default_factory=dict)  # only those not read, with why
    fields_read: int = 0
    verdicts: list[str] = field(default_factory=list)
    switchover_s: float | None = None
    kill_s: float | None = None

    def failing(self) -> list[str]:
        """Every pane or field that failed (an empty list on a good version)."""
        return [f"pane {k}: {v}" for k, v in self.panes.items() if v.startswith("✖")] + [
            f"{k}: {v}" for k, v in self.fields.items() if v.startswith("✖")
        ]


def snapshot(settings: Settings) -> ClusterSnapshot:
    """One full read, every optional part, judged."""
    return asyncio.run(take_snapshot(settings))


def pane_states(settings: Settings, before: ClusterSnapshot, snap: ClusterSnapshot) -> dict[str, str]:
    """Each pane's rows on this version: how many, not applicable (with why), or the error."""
    ctx = Context(
        thresholds=settings.thresholds, pools=settings.haproxy.pools(), now=snap.taken_at, history=(before,)
    )
    out = {}
    for pane in PANES:
        source = PANE_SOURCE.get(pane.id)
        reasons = {n.unavailable.get(source) for n in snap.nodes} if source else {None}
        if source and None not in reasons:
            reason = sorted(r for r in reasons if r)[0]
            out[pane.title] = reason if reason.startswith("n/a") else f"n/a: {reason}"
            continue
        try:
            count = sum(len(t.rows(snap, ctx)) for t in pane.tables)
        except Exception as exc:  # the page says which pane failed and how
            out[pane.title] = f"✖ {type(exc).__name__}: {exc}"
            continue
        out[pane.title] = f"✔ {count} row{'' if count == 1 else 's'}"
    return out


def _leaves(value: Any, path: str) -> Iterable[tuple[str, Any]]:
    if isinstance(value, dict):
        for key, sub in value.items():
            yield from _leaves(sub, f"{path}.{key}")
    elif isinstance(value, list) and value and isinstance(value[0], dict):
        for item in value:
            yield from _leaves(item, f"{path}[]")
    else:
        yield path, value


def field_states(snap: ClusterSnapshot) -> tuple[int, dict[str, str]]:
    """How many node fields some node read, and the others: not applicable (why) or never set."""
    doc = snap.model_dump(mode="json")
    seen: dict[str, bool] = {}
    for node in doc["nodes"]:
        for path, value in _leaves({k: v for k, v in node.items() if k != "unavailable"}, "node"):
            seen[path] = seen.get(path, False) or value not in (None, [], {})
    why: dict[str, str] = {}
    for node in snap.nodes:
        if node.error:
            why[f"node {node.name}"] = f"✖ {node.error}"
        for key, reason in node.unavailable.items():
            why.setdefault(f"node.{key}", reason if reason.startswith("n/a") else f"n/a: {reason}")
    for path, read in seen.items():
        if not read and not any(path.startswith(k) for k in why):
            why[path] = "empty on this lab"
    return sum(seen.values()), dict(sorted(why.items()))


def consume_failover_slots(lab: Lab) -> None:
    """Advance the lab's failover slots on the leader, as their consumer would (17+).

    A standby syncs a failover slot only once it has moved past the standby's own WAL position:
    an idle one stays unsynced after a switchover, and the console rightly says so.
    """
    if lab.tools().pg_version >= NATIVE_SLOT_SYNC:
        lab.sync_failover_slots(timeout=0)


def measure(
    lab: Lab,
    settings: Settings,
    fault: Any,
    *,
    timeout: float = 120.0,
    trouble: bool = False,
) -> float:
    """Seconds from ``fault(lab)`` until the console judges the cluster healthy again.

    ``trouble``: only after it has judged it unhealthy once (a kill it may not have seen yet).
    """
    start = time.monotonic()
    fault(lab)
    deadline = start + timeout
    seen = not trouble
    while time.monotonic() < deadline:
        consume_failover_slots(lab)
        snap = snapshot(settings)
        seen = seen or bool(snap.verdicts)
        if seen and not snap.verdicts and lab.healthy():
            return time.monotonic() - start
    raise AssertionError(f"not healthy {timeout:.0f}s after {fault.__name__}: {snapshot(settings).verdicts}")


def report(lab: Lab) -> tuple[Report, Settings]:
    """Read the lab on its version: panes, fields and verdicts at rest."""
    settings = load_settings(lab.layout.console_config)
    versions = lab.versions()
    # At rest: replicas get their copies of the slots a few seconds after `lab up` returns.
    deadline = time.monotonic() + 90
    before = snapshot(settings)
    snap = snapshot(settings)
    while snap.verdicts and time.monotonic() < deadline:
        before, snap = snap, snapshot(settings)
    count, why = field_states(snap)
    r = Report(
        postgres=versions["postgres"].split(" (")[0],
        patroni=versions["patroni"].split(", ")[0].split(" ", 1)[1],
        panes=pane_states(settings, before, snap),
        fields=why,
        fields_read=count,
        verdicts=[f"{v.rule}: {v.text}" for v in snap.verdicts or ()],
    )
    return r, settings


def write_page(reports: dict[str, Report], path: Path) -> None:
    """docs/compatibility.md from one report per case, in CASES order."""
    ids = [case_id(c) for c in CASES if case_id(c) in reports]
    heads = [f"PG {reports[i].postgres} / Patroni {reports[i].patroni}" for i in ids]
    lines = [
        "# Compatibility",
        "",
        "Supported: PostgreSQL 14 to 18, Patroni 3.3 to 4.1. Another version is read as far as it",
        "goes, with a WARN verdict (`postgres.unsupported`, `patroni.unsupported`).",
        "",
        "Written by `pytest -m matrix` (tests/matrix/), which brings up a lab per version (`pgtop-ha",
        "lab up --postgres N --patroni X.Y`), reads every pane and the snapshot JSON, then times a",
        "switchover and a kill -9 of the primary until the console judges the cluster healthy again.",
        "CI runs the whole suite on Debian's PostgreSQL 15 and this walk on 18.",
        "",
        "## Panes",
        "",
        "| pane | " + " | ".join(heads) + " |",
        "|---|" + "---|" * len(ids),
    ]
    for pane in PANES:
        cells = " | ".join(reports[i].panes.get(pane.title, "?") for i in ids)
        lines.append(f"| {pane.title} | {cells} |")
    lines += [
        "",
        "Row counts are the lab's at rest (Progress is empty on a quiet cluster); pgBouncer and pgpool-II",
        "are not started in this walk, their panes say so in one row.",
        "",
        "## JSON fields",
        "",
        "| | " + " | ".join(heads) + " |",
        "|---|" + "---|" * len(ids),
        "| node fields read | " + " | ".join(str(reports[i].fields_read) for i in ids) + " |",
    ]
    keys = sorted({k for i in ids for k in reports[i].fields if not reports[i].fields[k].startswith("empty")})
    for key in keys:
        lines.append(f"| `{key}` | " + " | ".join(reports[i].fields.get(key, "read") for i in ids) + " |")
    lines += [
        "",
        "A field not read is `null` in the JSON, its reason in the node's `unavailable`.",
        "",
        "## Failure tests",
        "",
        "Seconds from the fault until no verdict is left (one leader, replicas streaming, writer routed).",
        "",
        "| | " + " | ".join(heads) + " |",
        "|---|" + "---|" * len(ids),
        "| switchover | " + " | ".join(_secs(reports[i].switchover_s) for i in ids) + " |",
        "| kill -9 of the primary | " + " | ".join(_secs(reports[i].kill_s) for i in ids) + " |",
        "| verdicts at rest | " + " | ".join(str(len(reports[i].verdicts)) for i in ids) + " |",
        "",
    ]
    path.write_text("\n".join(lines))


def _secs(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} s"
