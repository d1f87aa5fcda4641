"""The xmin horizon on the lab: a session idle in transaction holds it, the judge says so."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pgtop_ha.lab import faults
from pgtop_ha.lab.cluster import Lab
from pgtop_ha.lab.procs import poll
from tests.support.lab_polls import cli_json, quiet, running


def test_a_session_idle_in_transaction_holds_the_horizon(lab: Lab, tmp_path: Path) -> None:
    # A band the fault reaches within the test: WARN once it has held the horizon for 2 s.
    config = tmp_path / "pgtop-ha.toml"
    config.write_text(
        lab.layout.console_config.read_text() + "\n[thresholds]\nhorizon_s = { warn = 2, crit = 3600 }\n"
    )
    docs: list[dict[str, Any]] = []
    checks: list[dict[str, Any]] = []
    with running(lambda: faults.long_xact(quiet(lab), seconds=12), 90):

        def held() -> bool:
            docs.append(cli_json(config, "snapshot"))
            leader = next(n for n in docs[-1]["nodes"] if n["name"] == docs[-1]["cluster"]["leader"])
            return any(
                h["kind"] == "backend"
                and h["application_name"] == "lab-fault-long-xact"
                and h["state"] == "idle in transaction"
                and h["xact_age"] is not None
                and (h["age_s"] or 0) >= 2
                for h in leader["horizon"]
            )

        assert poll(held, 30, interval=0.5), docs[-1]["nodes"]

        def judged() -> bool:
            checks.append(cli_json(config, "check", "--json"))
            return any(v["rule"] == "horizon.held" for v in checks[-1]["verdicts"])

        assert poll(judged, 30, interval=0.5), checks[-1]
    verdict = next(v for v in checks[-1]["verdicts"] if v["rule"] == "horizon.held")
    assert verdict["level"] == 1 and "lab-fault-long-xact, idle in transaction" in verdict["text"]
    assert verdict["subject"] == docs[-1]["cluster"]["leader"]
