"""The audit log: one JSON line per action, listeners, and one-line errors."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from pgtop_ha.actions.audit import AuditLog
from pgtop_ha.actions.results import ActionResult, AuditEntry
from pgtop_ha.errors import ConfigError

T0 = datetime(2025, 1, 1, 12, tzinfo=UTC)


def test_appends_json_lines_and_notifies(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "audit.log"
    log = AuditLog(path, cluster="pgtop-lab")
    seen: list[AuditEntry] = []
    log.subscribe(seen.append)
    for ok in (True, False):
        log.record(
            ActionResult(
                action="switchover",
                target="node2",
                ok=ok,
                status=200,
                message="done",
                started_at=T0,
                duration_s=4.25,
            )
        )
    lines = path.read_text().splitlines()
    assert len(lines) == 2
    first = json.loads(lines[0])
    assert first["action"] == "switchover"
    assert first["target"] == "node2"
    assert first["cluster"] == "pgtop-lab"
    assert first["ok"] is True
    assert first["duration_s"] == 4.25
    assert first["user"]
    assert first["at"].startswith("2025-01-01T12:00:00")
    assert [e.ok for e in seen] == [True, False]
    assert log.entries() == tuple(seen)


def test_unwritable_path_is_a_one_line_config_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(ConfigError, match=r"audit log .*set audit_log to a writable file"):
        AuditLog(blocker / "audit.log")
