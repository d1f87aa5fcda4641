"""etcd stopped under the lab: Patroni's failsafe mode and its DCS silence, then back to healthy."""

from __future__ import annotations

from typing import Any

from pgtop_ha.lab import faults
from pgtop_ha.lab.cluster import Lab
from pgtop_ha.lab.procs import poll
from tests.support.lab_polls import cli_json, quiet, running


def test_etcd_stopped_is_failsafe_then_healthy(lab: Lab) -> None:
    seen: list[dict[str, Any]] = []
    with running(lambda: faults.stop_etcd(quiet(lab), seconds=20), 65):

        def failsafe() -> bool:
            seen.append(cli_json(lab.layout.console_config, "check", "--json"))
            return any(v["rule"] == "patroni.failsafe" for v in seen[-1]["verdicts"])

        assert poll(failsafe, 18, interval=0.5), seen[-1]
    rules = {v["rule"] for v in seen[-1]["verdicts"]}
    # The leader stays: no failover while every member answers it.
    assert not rules & {"leader.none", "routing.no-writer"}, seen[-1]
    assert poll(
        lambda: cli_json(lab.layout.console_config, "check", "--json")["exit_code"] == 0, 90, interval=1.0
    )
