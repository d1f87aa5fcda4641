"""A real HAProxy whose servers are named as in Patroni's example config, in front of the lab.

The lab's own HAProxy names its servers as the members (node1…), which hid this: on a cluster
configured from Patroni's example (`server postgresql_10.0.0.11_5432 …`) the console said
"HAProxy writer pool routes to postgresql_…, not the leader" on a healthy cluster.
"""

from __future__ import annotations

import contextlib
import re
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pgtop_ha.collect.poller import Poller
from pgtop_ha.judge.checks import disagreements, writes_ok
from pgtop_ha.judge.problems import cluster_problems
from pgtop_ha.lab import configs, procs
from pgtop_ha.lab.cluster import Lab
from pgtop_ha.lab.layout import NODE_NAMES
from pgtop_ha.lab.tools import find_tools
from pgtop_ha.models.haproxy import routes
from pgtop_ha.models.snapshot import ClusterSnapshot
from pgtop_ha.settings import Settings
from tests.support.lab_polls import until_seen

pytestmark = pytest.mark.lab


# The login of the second HAProxy's third stats page (`stats auth`, as production pages often are).
STATS_USER, STATS_PASSWORD = "stats-reader", "Str0ng-stats-pw"


def _second_haproxy_cfg(lab: Lab, socket: Path) -> tuple[str, str, str, str]:
    """The lab's HAProxy config, servers named as Patroni's example names them, on other ports.

    Returns the config and three stats URLs: one with `stats show-legends` (addresses shown), one
    without (HAProxy's default: no addresses), one behind a login (`stats auth`) with legends.
    """
    layout = lab.layout
    text = configs.haproxy_cfg(layout)
    text = re.sub(r"server (node\d) 127\.0\.0\.1:(\d+)", r"server postgresql_127.0.0.1_\2 127.0.0.1:\2", text)
    text = re.sub(r"stats socket \S+ ", f"stats socket {socket} ", text)
    text = text.replace(f"127.0.0.1:{layout.writer_port}\n", f"127.0.0.1:{layout.base_port + 36}\n")
    text = text.replace(f"127.0.0.1:{layout.reader_port}\n", f"127.0.0.1:{layout.base_port + 37}\n")
    legends, plain = layout.base_port + 38, layout.base_port + 39
    text = text.replace(
        f"    bind 127.0.0.1:{layout.stats_port}\n",
        f"    bind 127.0.0.1:{legends}\n    stats show-legends\n",
    )
    plain_stats = ("listen plain_stats", "    mode http", f"    bind 127.0.0.1:{plain}", "    stats enable")
    text += "\n" + "\n".join((*plain_stats, "    stats uri /stats", ""))
    login = layout.base_port + 8  # unused by the lab (layout.py)
    text += "\n" + "\n".join(
        (
            "listen login_stats",
            "    mode http",
            f"    bind 127.0.0.1:{login}",
            "    stats enable",
            "    stats uri /stats",
            "    stats show-legends",
            f"    stats auth {STATS_USER}:{STATS_PASSWORD}",
            "",
        )
    )
    assert "server node" not in text and "show-legends" in text
    return (
        text,
        f"http://127.0.0.1:{legends}/stats",
        f"http://127.0.0.1:{plain}/stats",
        f"http://127.0.0.1:{login}/stats",
    )


@pytest.fixture
def example_haproxy(lab: Lab, tmp_path: Path) -> Iterator[tuple[str, str, str]]:
    """A second, real HAProxy in front of the lab's nodes; its three stats URLs. Ended by PID."""
    cfg_text, legends, plain, login = _second_haproxy_cfg(lab, tmp_path / "haproxy.sock")
    cfg = tmp_path / "haproxy.cfg"
    cfg.write_text(cfg_text)
    haproxy = str(find_tools().haproxy)
    check = subprocess.run([haproxy, "-c", "-f", str(cfg)], capture_output=True, text=True, check=False)
    assert check.returncode == 0, check.stdout + check.stderr
    log = (tmp_path / "haproxy.log").open("wb")
    proc = subprocess.Popen([haproxy, "-db", "-f", str(cfg)], stdout=log, stderr=subprocess.STDOUT)
    try:
        yield legends, plain, login
    finally:
        procs.terminate([proc.pid], grace=5)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=5)
        log.close()


def _settings(base: Settings, url: str, members: dict[str, str] | None = None) -> Settings:
    update: dict[str, object] = {"url": url, "socket": None}
    if members is not None:
        update["members"] = members
    haproxy = base.haproxy.model_copy(update=update)
    return base.model_copy(update={"haproxy": haproxy})


def _writers_up(snap: ClusterSnapshot) -> list[str]:
    return [
        s.server for s in snap.haproxy.servers if s.proxy == "pg_writer" and (s.status or "").startswith("UP")
    ]


def _writer_up(snap: ClusterSnapshot) -> bool:
    return bool(_writers_up(snap))


async def _seen(settings: Settings, check: Callable[[ClusterSnapshot], bool], what: str) -> ClusterSnapshot:
    """The first snapshot of a new poller on ``settings`` that passes ``check``."""
    poller = Poller.from_settings(settings)
    try:
        return await until_seen(poller, check, 30, what)
    finally:
        await poller.aclose()


def _led(snap: ClusterSnapshot) -> bool:
    # A HAProxy just started has every server UP until its checks fail `fall` times: the writer
    # pool read node1 and node3 UP in CI. Settled is one writer UP, whatever it is joined to.
    return len(_writers_up(snap)) == 1 and snap.cluster.leader is not None


def _all_reachable(snap: ClusterSnapshot) -> bool:
    return all(n.reachable for n in snap.nodes)


async def test_servers_joined_by_the_addresses_haproxy_shows(
    lab_settings: Settings, example_haproxy: tuple[str, str, str]
) -> None:
    legends, _, _ = example_haproxy
    settings = _settings(lab_settings, legends)
    pools = settings.haproxy.pools()
    snap = await _seen(settings, _led, "one writer UP")
    assert all(s.server.startswith("postgresql_127.0.0.1_") for s in snap.haproxy.servers)
    assert {s.member for s in snap.haproxy.servers} == set(NODE_NAMES)
    up = [name for name, srv in routes(snap, pools, "writer").items() if (srv.status or "").startswith("UP")]
    assert up == [snap.cluster.leader]
    assert writes_ok(snap, pools) is True
    assert [c.key for c in disagreements(snap, pools) if c.key.startswith("writer")] == []
    keys = [p.key for p in cluster_problems(snap, settings.thresholds, pools, snap.taken_at)]
    assert "haproxy unjoined" not in keys


async def test_servers_without_addresses_are_said_then_mapped(
    lab_settings: Settings, example_haproxy: tuple[str, str, str]
) -> None:
    _, plain, _ = example_haproxy
    settings = _settings(lab_settings, plain)
    pools = settings.haproxy.pools()
    snap = await _seen(settings, lambda s: _writer_up(s) and bool(s.members), "a writer UP")
    assert all(s.addr is None and s.member is None for s in snap.haproxy.servers)
    problems = cluster_problems(snap, settings.thresholds, pools, snap.taken_at)
    unjoined = [p.text for p in problems if p.key == "haproxy unjoined"]
    assert len(unjoined) == 1 and "[haproxy] members" in unjoined[0]
    # No false alarm: the writer is not said to be wrong, and writes are not said to be down.
    assert [c.key for c in disagreements(snap, pools) if c.key.startswith("writer")] == []
    assert writes_ok(snap, pools) is None

    ports = {m.name: m.port for m in snap.members}
    mapped = {f"postgresql_127.0.0.1_{port}": name for name, port in ports.items()}
    snap = await _seen(_settings(lab_settings, plain, mapped), _led, "one writer UP")
    assert writes_ok(snap, pools) is True
    assert {s.member for s in snap.haproxy.servers} == set(NODE_NAMES)


async def test_a_stats_page_behind_a_login(
    lab_settings: Settings, example_haproxy: tuple[str, str, str], tmp_path: Path
) -> None:
    # `stats auth` on the page, as production pages often have: the console said "HTTP 401" and
    # had no way to give a login (a user:password in the URL is stripped, by design).
    _, _, login = example_haproxy
    right, wrong = tmp_path / "right", tmp_path / "wrong"
    right.write_text(STATS_PASSWORD + "\n")
    wrong.write_text("not-the-password\n")

    def with_login(url: str, password_file: Path | None) -> Settings:
        s = _settings(lab_settings, url)
        user = None if password_file is None else STATS_USER
        return s.model_copy(
            update={"haproxy": s.haproxy.model_copy(update={"user": user, "password_file": password_file})}
        )

    def failed(snap: ClusterSnapshot) -> bool:
        return "HTTP 401" in (snap.haproxy.error or "")  # the new HAProxy may not listen yet at first

    in_url = login.replace("http://", f"http://{STATS_USER}:{STATS_PASSWORD}@")
    for url, password_file, said in (
        (login, None, "HTTP 401, the page asks for a login; set [haproxy] user and password_file"),
        (in_url, None, "HTTP 401, the page asks for a login; set [haproxy] user and password_file"),
        (login, wrong, "HTTP 401, login refused; check [haproxy] user and password_file"),
    ):
        snap = await _seen(with_login(url, password_file), failed, "the stats page refused")
        assert snap.haproxy.error is not None and snap.haproxy.error.endswith(said), snap.haproxy.error
        assert STATS_PASSWORD not in snap.model_dump_json()
    settings = with_login(login, right)
    pools = settings.haproxy.pools()
    snap = await _seen(settings, _led, "one writer UP behind the login")
    assert snap.haproxy.error is None
    assert {s.member for s in snap.haproxy.servers} == set(NODE_NAMES)  # legends: joined by address
    assert writes_ok(snap, pools) is True
    assert STATS_PASSWORD not in snap.model_dump_json()


async def test_each_node_knows_the_address_its_server_answered_on(lab_settings: Settings) -> None:
    # What joins a member named by a host name (pg1.example.com) to the address HAProxy or a
    # pooler shows (10.0.0.11): the server's own inet_server_addr(), read once per connection.
    poller = Poller.from_settings(lab_settings)
    try:
        snap = await until_seen(poller, _all_reachable, 30, "every node reachable")
        readers = [poller.membership.members[name].node for name in NODE_NAMES]
        assert [r.server_addr if r is not None else None for r in readers] == ["127.0.0.1"] * len(NODE_NAMES)
        for m in snap.members:
            assert poller.membership.locate("127.0.0.1", m.port) == m.name
    finally:
        await poller.aclose()
