"""build_actions: credentials only here, audit path, and the read path never loading actions."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import SecretStr

from pgtop_ha.actions import build_actions
from pgtop_ha.errors import ConfigError
from pgtop_ha.settings import Settings


async def test_build_uses_rest_credentials_and_audit_path(tmp_path: Path) -> None:
    secret = tmp_path / "rest"
    secret.write_text("pw-from-file\n")
    settings = Settings.model_validate(
        {
            "cluster_name": "pgtop-lab",
            "audit_log": str(tmp_path / "a" / "audit.log"),
            "patroni": {"urls": ["http://127.0.0.1:1"], "user": "patroni", "password_file": str(secret)},
            "postgres": {"user": "pgtop_monitor", "operator_user": "pgtop_operator"},
        }
    )
    actions = build_actions(settings)
    try:
        assert actions.writer.urls == ("http://127.0.0.1:1",)
        assert actions.resetter.user == "pgtop_operator"
        assert actions.audit.path == tmp_path / "a" / "audit.log"
        assert actions.audit.path.exists()
        auth = actions.writer._client.auth
        assert auth is not None
        request = next(auth.auth_flow(__import__("httpx").Request("GET", "http://x")))
        assert request.headers["authorization"].startswith("Basic ")
    finally:
        await actions.aclose()


async def test_env_password_wins_and_reset_role_defaults_to_user(tmp_path: Path) -> None:
    settings = Settings(
        audit_log=tmp_path / "audit.log",
        patroni_password=SecretStr("from-env"),
        postgres={"user": "postgres"},
    )
    actions = build_actions(settings)
    try:
        assert actions.resetter.user == "postgres"
    finally:
        await actions.aclose()


def test_unreadable_password_file_is_one_line(tmp_path: Path) -> None:
    settings = Settings.model_validate(
        {
            "audit_log": str(tmp_path / "audit.log"),
            "patroni": {"user": "patroni", "password_file": str(tmp_path / "missing")},
        }
    )
    with pytest.raises(ConfigError, match=r"patroni\.password_file"):
        build_actions(settings)


def test_read_path_does_not_load_actions() -> None:
    code = (
        "import sys\n"
        "import pgtop_ha.collect.poller\n"
        "assert 'textual' not in sys.modules, 'collect loaded textual'\n"
        "import pgtop_ha.ui.app, pgtop_ha.ui.screens.monitor, pgtop_ha.cli\n"
        "bad = sorted(m for m in sys.modules if m.startswith('pgtop_ha.actions')\n"
        "             or m.startswith('pgtop_ha.ui.operator'))\n"
        "assert not bad, bad\n"
        "print('ok')\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
