"""`pgtop-ha snapshot` on the lab: every optional part read by default, null only when not read."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from typing import Any

from pgtop_ha.lab import faults
from pgtop_ha.lab.cluster import Lab
from pgtop_ha.lab.procs import poll
from tests.support.lab_polls import end_sessions, running

PGTOP = [sys.executable, "-m", "pgtop_ha"]


def _snapshot(lab: Lab, *args: str) -> dict[str, Any]:
    argv = [*PGTOP, "--config", str(lab.layout.console_config), "snapshot", *args]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=True)
    doc: dict[str, Any] = json.loads(out.stdout)
    return doc


def _leader(doc: dict[str, Any]) -> dict[str, Any]:
    return next(n for n in doc["nodes"] if n["name"] == doc["cluster"]["leader"])


def test_a_lock_queue_is_in_the_json_without_a_pane(lab: Lab) -> None:
    quiet = Lab(lab.layout, out=io.StringIO())
    docs: list[dict[str, Any]] = []
    with running(lambda: faults.lock(quiet, seconds=20, waiters=2), 90):

        def queued() -> bool:
            docs.append(_snapshot(lab))
            locks = _leader(docs[-1])["locks"]
            return locks is not None and sum(1 for p in locks if p["waiting_mode"]) >= 2

        assert poll(queued, 30, interval=0.5), _leader(docs[-1])["locks"]
        end_sessions(lab, faults.LOCK_HOLDER_APP)  # the waiters then finish
    doc = docs[-1]
    assert all(n["parameters"] is not None and n["cache"] is not None for n in doc["nodes"])
    if lab.tools().pgbackrest_archives:  # else the lab's console config leaves pgBackRest out
        assert doc["pgbackrest"]["config"] == str(lab.layout.state_dir / "pgbackrest.conf")
    assert doc["verdicts"] is not None
    # Left out on request: null, with the reason, never an empty list.
    narrow = _snapshot(lab, "--without", "locks", "--without", "parameters")
    for n in narrow["nodes"]:
        assert (
            n["locks"] is None
            and n["parameters"] is None
            and n["unavailable"]["locks"].startswith("not read")
        )


def test_a_pending_restart_is_in_the_json(lab: Lab) -> None:
    quiet = Lab(lab.layout, out=io.StringIO())
    faults.pending_restart(quiet)
    docs: list[dict[str, Any]] = []

    def pending() -> bool:
        # Each member's Patroni applies the change in its own loop: polled, not slept on.
        docs.append(_snapshot(lab, "--only", "parameters"))
        names = {s["name"] for n in docs[-1]["nodes"] for s in n["parameters"] or ()}
        return "max_connections" in names

    try:
        assert poll(pending, 60, interval=1.0), docs[-1]["nodes"][0]["parameters"]
        doc = docs[-1]
        assert all(n["locks"] is None for n in doc["nodes"])
        assert any(v["rule"] == "patroni.pending-restart" for v in doc["verdicts"])
    finally:
        faults.pending_restart(quiet, undo=True)
