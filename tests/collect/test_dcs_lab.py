"""etcd stopped under the lab: Patroni's failsafe mode and its DCS silence, then back to healthy."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from pgtop_ha.lab import faults
from pgtop_ha.lab.cluster import Lab
from pgtop_ha.lab.procs import poll
from tests.support.lab_polls import quiet, running

PGTOP = [sys.executable, "-m", "pgtop_ha"]


def _check(lab: Lab) -> dict[str, Any]:
    argv = [*PGTOP, "--config", str(lab.layout.console_config), "check", "--json"]
    doc: dict[str, Any] = json.loads(subprocess.run(argv, capture_output=True, text=True, timeout=60).stdout)
    return doc


def test_etcd_stopped_is_failsafe_then_healthy(lab: Lab) -> None:
    seen: list[dict[str, Any]] = []
    with running(lambda: faults.stop_etcd(quiet(lab), seconds=25), 60):

        def failsafe() -> bool:
            seen.append(_check(lab))
            return any(v["rule"] == "patroni.failsafe" for v in seen[-1]["verdicts"])

        assert poll(failsafe, 25, interval=0.5), seen[-1]
    rules = {v["rule"] for v in seen[-1]["verdicts"]}
    # The leader stays: no failover while every member answers it.
    assert not rules & {"leader.none", "routing.no-writer"}, seen[-1]
    assert poll(lambda: _check(lab)["exit_code"] == 0, 90, interval=1.0)
