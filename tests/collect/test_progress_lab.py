"""Maintenance progress on the lab: a VACUUM and a CREATE INDEX CONCURRENTLY, seen with % done."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from pgtop_ha.lab import faults
from pgtop_ha.lab.cluster import Lab
from pgtop_ha.lab.procs import poll
from tests.support.lab_polls import cli_json, quiet, running


@pytest.mark.parametrize(
    ("fault", "command"),
    [(faults.vacuum, "VACUUM"), (faults.create_index, "CREATE INDEX CONCURRENTLY")],
    ids=["vacuum", "create-index"],
)
def test_maintenance_shows_its_phase_and_progress(
    lab: Lab, fault: Callable[[Lab, int], str], command: str
) -> None:
    seen: list[dict[str, Any]] = []
    with running(lambda: fault(quiet(lab), 6), 120):

        def progressing() -> bool:
            doc = cli_json(lab.layout.console_config, "snapshot", "--only", "locks")
            leader = next(n for n in doc["nodes"] if n["name"] == doc["cluster"]["leader"])
            seen.extend(
                m for m in leader["maintenance"] if m["command"] == command and m["relation"] == "sync_big"
            )
            return any(m["total"] and m["done"] and m["phase"] for m in seen)

        assert poll(progressing, 40, interval=0.3), seen
    m = next(m for m in seen if m["total"] and m["done"])
    assert 0 < m["done"] <= m["total"] and m["unit"] in ("blocks", "tuples")
