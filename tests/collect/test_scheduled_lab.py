"""A restart scheduled through Patroni on the lab: on the banner's list and in check until cancelled."""

from __future__ import annotations

from typing import Any

from pgtop_ha.lab import faults
from pgtop_ha.lab.cluster import Lab
from pgtop_ha.lab.procs import poll
from tests.support.lab_polls import cli_json, quiet


def test_a_scheduled_restart_is_shown_until_cancelled(lab: Lab) -> None:
    node = lab.layout.names[-1]
    faults.schedule_restart(quiet(lab), node, minutes=30)
    seen: list[dict[str, Any]] = []
    try:

        def scheduled() -> bool:
            seen.append(cli_json(lab.layout.console_config, "check", "--json"))
            return any(
                v["rule"] == "patroni.scheduled" and v["subject"] == node for v in seen[-1]["verdicts"]
            )

        assert poll(scheduled, 30, interval=0.5), seen[-1]
        verdict = next(v for v in seen[-1]["verdicts"] if v["rule"] == "patroni.scheduled")
        assert verdict["text"].startswith("restart scheduled at ") and verdict["level"] == 1
    finally:
        faults.schedule_restart(quiet(lab), node, cancel=True)
    assert poll(
        lambda: (
            not any(
                v["rule"] == "patroni.scheduled"
                for v in cli_json(lab.layout.console_config, "check", "--json")["verdicts"]
            )
        ),
        30,
    )
