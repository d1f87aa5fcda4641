"""A shared HAProxy's stats page of tens of thousands of rows: capped, counted, read in linear time."""

from __future__ import annotations

import time

from pgtop_ha.collect.haproxy import MAX_SERVERS, OTHER_ROWS, read_stats
from pgtop_ha.ui.format import fit_name

HEADER = "# pxname,svname,qcur,qmax,scur,smax,slim,stot,status,weight,lastchg,check_status,check_code,addr,\n"


def _row(proxy: str, server: str, status: str = "UP") -> str:
    return f"{proxy},{server},0,0,1,1,,5,{status},1,30,L7OK,200,10.0.0.1:5432,\n"


def _page(others: int, pool_last: bool = True) -> str:
    pool = _row("pg_writer", "node1") + _row("pg_writer", "node2", "DOWN") + _row("pg_reader", "node2")
    rest = "".join(_row(f"svc{i // 10}", f"s{i}") for i in range(others))
    return HEADER + (rest + pool if pool_last else pool + rest)


def _pooled(proxy: str) -> bool:
    return proxy.startswith("pg_")


def test_a_page_of_fifty_thousand_rows_keeps_the_pools_and_counts_the_rest() -> None:
    text = _page(50_000)
    began = time.process_time()
    page = read_stats(text, _pooled)
    spent = time.process_time() - began
    pools = [(s.proxy, s.server) for s in page.servers if _pooled(s.proxy)]
    # The pools' rows are kept though they come last, behind 50,000 others.
    assert pools == [("pg_writer", "node1"), ("pg_writer", "node2"), ("pg_reader", "node2")]
    assert len(page.servers) == 3 + OTHER_ROWS and page.not_shown == 50_000 - OTHER_ROWS
    assert spent < 2.0, spent  # linear: a fraction of a second here


def test_the_cap_holds_for_pool_rows_too() -> None:
    text = HEADER + "".join(_row("pg_writer", f"n{i}") for i in range(MAX_SERVERS + 10))
    page = read_stats(text, _pooled)
    assert len(page.servers) == MAX_SERVERS and page.not_shown == 10


def test_fitting_twenty_thousand_names_is_not_quadratic() -> None:
    names = tuple(f"postgresql_10.0.{i // 250}.{i % 250}_5432" for i in range(20_000))
    began = time.process_time()
    labels = [fit_name(n, names, 14) for n in names[:2000]]
    spent = time.process_time() - began
    assert all(len(label) <= 14 for label in labels) and len(set(labels)) > 1000
    assert spent < 3.0, spent
