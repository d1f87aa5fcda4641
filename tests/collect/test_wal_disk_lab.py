"""pg_wal on disk on the lab: read on every node, graded, the slot that keeps most named."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pgtop_ha.lab.cluster import Lab
from pgtop_ha.lab.layout import PERMANENT_SLOT
from pgtop_ha.lab.procs import poll
from tests.support.lab_polls import cli_json


def test_wal_on_disk_names_the_slot_that_keeps_most(lab: Lab, tmp_path: Path) -> None:
    # The lab's permanent slot has no consumer: it keeps WAL. A band it is past already.
    config = tmp_path / "pgtop-ha.toml"
    config.write_text(
        lab.layout.console_config.read_text()
        + "\n[thresholds]\nwal_disk_ratio = { warn = 0.01, crit = 1000 }\n"
    )
    doc = cli_json(config, "snapshot")
    for n in doc["nodes"]:
        w = n["wal_disk"]
        assert w is not None and w["bytes"] > 0 and w["files"] > 0, n["name"]
        assert w["max_wal_size"] == 1024**3 and w["wal_keep_size"] == 128 * 1024**2
    checks: list[dict[str, Any]] = []

    def judged() -> bool:
        checks.append(cli_json(config, "check", "--json"))
        named = f"slot {PERMANENT_SLOT} retains"
        return any(v["rule"] == "wal.disk" and named in v["text"] for v in checks[-1]["verdicts"])

    assert poll(judged, 30, interval=0.5), checks[-1]
    wal = [v for v in checks[-1]["verdicts"] if v["rule"] == "wal.disk"]
    assert all(v["level"] == 1 and v["text"].startswith("pg_wal ") for v in wal)
    assert any(f"slot {PERMANENT_SLOT} retains" in v["text"] for v in wal), wal
