"""The fleet's command line, drill-down targets and lab config: pure checks."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pgtop_ha.cli import main, parse
from pgtop_ha.errors import UserError
from pgtop_ha.fleet_cli import drill_urls, prometheus_url
from pgtop_ha.judge.fleet import FleetRow
from pgtop_ha.lab.fleet import Fleet
from pgtop_ha.settings import Settings


def _row(*instances: str) -> FleetRow:
    return FleetRow("c1", "n1", 3, 3, 2, 2, 0, 1, 0, 0, False, 1.0, 1, instances=instances)


def test_drill_urls_from_instances_and_policy() -> None:
    s = Settings.model_validate({"patroni": {"allowed_hosts": ["127.0.0.0/8"]}})
    assert drill_urls(s, _row("127.0.0.1:8008", "10.0.0.5:8008")) == ["http://127.0.0.1:8008"]
    with pytest.raises(UserError, match=r"\[fleet.clusters.c1\]"):
        drill_urls(s, _row("10.0.0.5:8008"))
    with pytest.raises(UserError):
        drill_urls(Settings(), _row("169.254.169.254:80"))  # never contacted, whatever the policy
    o = Settings.model_validate({"fleet": {"clusters": {"c1": {"patroni": ["https://db1:8008"]}}}})
    assert drill_urls(o, _row()) == ["https://db1:8008"]


def test_prometheus_url_required_and_checked() -> None:
    with pytest.raises(UserError, match="--prometheus URL"):
        prometheus_url(Settings(), None)
    with pytest.raises(UserError, match="http"):
        prometheus_url(Settings(), "ftp://x")
    assert prometheus_url(Settings.model_validate({"fleet": {"prometheus": "http://p:9090"}}), None)


def test_cli_parses_fleet_and_events(capsys: pytest.CaptureFixture[str]) -> None:
    args = parse(["events", "--prometheus", "http://127.0.0.1:1", "--scope", "a", "--since", "30m"])
    assert (args.prometheus, args.scope, args.since, args.file) == ("http://127.0.0.1:1", "a", "30m", None)
    assert parse(["fleet", "--prometheus", "http://x"]).command == "fleet"
    assert main(["events", "--prometheus", "http://127.0.0.1:1", "--scope", "a", "--since", "6x"]) == 2
    assert "--since 6x" in capsys.readouterr().err


def test_lab_fleet_config_and_ranges() -> None:
    fleet = Fleet(26000, 3, Path("/tmp/f"))
    assert [fleet.layout(i).base_port for i in range(3)] == [26000, 26050, 26100]
    assert fleet.prometheus_port not in {p for i in range(3) for p in fleet.layout(i).ports()}
    text = fleet.console_config_text()
    assert 'prometheus = "http://127.0.0.1:26045"' in text and 'config = "/tmp/f/lab3/pgtop-ha.toml"' in text


def test_fleet_command_leaves_lab_and_actions_out() -> None:
    code = (
        "import sys; from pgtop_ha import fleet_cli; import pgtop_ha.ui.fleet.app, pgtop_ha.ui.fleet.drill;"
        "bad = [m for m in sys.modules if m.startswith(('pgtop_ha.lab', 'pgtop_ha.actions'))]; print(bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
