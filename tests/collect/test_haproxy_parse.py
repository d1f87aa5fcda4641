"""HAProxy stats CSV parsing: real HTTP and socket answers, cut-short answers, fuzzing."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pgtop_ha.collect.errors import ParseError
from pgtop_ha.collect.haproxy import csv_url, parse_stat_csv
from pgtop_ha.models.snapshot import HAProxyServer

FIXTURES = Path(__file__).parent / "fixtures"
HTTP_CSV = (FIXTURES / "haproxy_stats.csv").read_text()
SOCKET_CSV = (FIXTURES / "haproxy_socket.csv").read_text()


@pytest.mark.parametrize("text", [HTTP_CSV, SOCKET_CSV])
def test_servers_only_by_header_name(text: str) -> None:
    servers = parse_stat_csv(text)
    proxies = {s.proxy for s in servers}
    assert {"pg_writer", "pg_reader"} <= proxies
    assert not {s.server for s in servers} & {"FRONTEND", "BACKEND"}
    writers = [s for s in servers if s.proxy == "pg_writer"]
    assert {s.server for s in writers} == {"node1", "node2", "node3"}
    assert sum(1 for s in writers if s.status == "UP") == 1  # only the leader answers /primary
    assert all(s.check_status for s in writers)
    assert all(isinstance(s.last_change_s, int) for s in writers)


def test_columns_in_another_order() -> None:
    text = "# svname,pxname,status,scur,check_status,lastchg,\nn1,be,UP 1/3,4,L7OK,12,\n"
    (server,) = parse_stat_csv(text)
    assert (server.proxy, server.server, server.status, server.sessions) == ("be", "n1", "UP 1/3", 4)
    assert server.check_code is None  # absent column is unknown, not an error


@pytest.mark.parametrize(
    "text",
    [
        "",
        "\n\n",
        "pxname,svname\n",  # no '# ' header
        HTTP_CSV[: len(HTTP_CSV) // 2],  # cut mid-line
        HTTP_CSV.splitlines(keepends=True)[0] + "be,srv,1\n",  # row shorter than header
        "# foo,bar,\nx,y,\n",  # header without the needed names
    ],
)
def test_no_data_this_cycle(text: str) -> None:
    with pytest.raises(ParseError, match="haproxy stats"):
        parse_stat_csv(text)


def test_csv_url() -> None:
    assert csv_url("http://h:1/stats") == "http://h:1/stats;csv"
    assert csv_url("http://h:1/stats;csv") == "http://h:1/stats;csv"


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_fuzz_any_text(text: str) -> None:
    try:
        servers = parse_stat_csv(text)
    except ParseError:
        return
    assert all(isinstance(s, HAProxyServer) for s in servers)


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=0, max_value=len(HTTP_CSV)), st.text(max_size=20))
def test_fuzz_truncated_and_garbled(cut: int, junk: str) -> None:
    try:
        servers = parse_stat_csv(HTTP_CSV[:cut] + junk)
    except ParseError:
        return
    # Whatever survives a cut is a server line of the original answer's proxies.
    assert all(isinstance(s, HAProxyServer) for s in servers)


def test_server_address_when_haproxy_shows_it() -> None:
    # `stats show-legends` (or a socket at level operator) fills `addr`; otherwise it is empty.
    text = "# pxname,svname,status,addr,\nbe,postgresql_10.0.0.11_5432,UP,10.0.0.11:5432,\nbe,b,DOWN,,\n"
    shown, hidden = parse_stat_csv(text)
    assert shown.addr == "10.0.0.11:5432"
    assert hidden.addr is None
