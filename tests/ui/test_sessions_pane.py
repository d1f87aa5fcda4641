"""Sessions and Statements panes: the longest first, "not read" said, rows keyed by pid or rank."""

from __future__ import annotations

from pgtop_ha.collect.postgres import NOT_ASKED
from pgtop_ha.models.statements import BETWEEN_READS
from pgtop_ha.ui.panes import locks, sessions, statements
from pgtop_ha.ui.panes.base import Context
from pgtop_ha.ui.widgets.pane import matches
from tests.models.builders import node
from tests.ui import fixtures as fx

SETTINGS = fx.settings()


def _ctx() -> Context:
    return Context(thresholds=SETTINGS.thresholds, pools=SETTINGS.haproxy.pools(), now=fx.T0)


def test_longest_running_first_then_the_idle_counted() -> None:
    rows = [r for r in sessions.rows(fx.sessioned(), _ctx()) if r.node == "node1"]
    assert [r.key for r in rows] == ["node1|4100", "node1|5001", "node1|5002", "node1|5003", "node1|idle"]
    assert rows[-1].cells["state"].text == "2 idle"
    # The runaway report's query time, the idle-in-transaction session's transaction (not its query).
    assert (rows[0].cells["time"].text, rows[1].cells["time"].text, rows[1].cells["xact"].text) == (
        "30m",
        "-",
        "12m",
    )
    assert rows[1].cells["wait"].text == "Client:ClientRead" and rows[0].cells["client"].text == "10.0.0.31"


def test_idle_sessions_counted_by_the_server_join_the_idle_row() -> None:
    snap = node(fx.sessioned(), "node1", idle_sessions=198)
    rows = [r for r in sessions.rows(snap, _ctx()) if r.node == "node1"]
    assert rows[-1].key == "node1|idle" and rows[-1].cells["state"].text == "200 idle"
    total = len(snap.node("node1").processes) + 198  # type: ignore[union-attr]
    capped = node(snap, "node1", processes_total=total + 5)
    more = [r.cells["pid"].text for r in sessions.rows(capped, _ctx()) if r.key == "node1|more"]
    assert more == ["+5 processes"]


def test_the_rules_mark_the_cells_they_are_about() -> None:
    rows = {r.key: r for r in sessions.rows(fx.sessioned(), _ctx())}
    assert rows["node1|4100"].cells["xact"].level is not None  # open 30 minutes
    assert rows["node1|5001"].cells["state"].level is not None  # idle in transaction 12 minutes
    assert rows["node1|5003"].cells["xact"].level is None


def test_a_node_whose_sessions_were_not_read_says_so() -> None:
    snap = node(fx.sessioned(), "node2", unavailable={"sessions": NOT_ASKED})
    (row,) = [r for r in sessions.rows(snap, _ctx()) if r.node == "node2"]
    assert row.key == "node2|why" and row.cells["query"].text == NOT_ASKED


def test_k_and_k_find_the_backend_of_a_row() -> None:
    assert sessions.backend_of("pg|prod|1|4100") == ("pg|prod|1", 4100)
    assert sessions.backend_of("node1|idle") is None
    assert locks.root_blocker_of("node1|5001|5003|2") == ("node1", 5001)
    assert locks.root_blocker_of("node1|why") is None


def test_statements_between_two_reads_are_the_last_reads() -> None:
    read = fx.stated()
    between = node(read, "node1", statements=None, unavailable={"statements": BETWEEN_READS})
    ctx = Context(thresholds=SETTINGS.thresholds, pools=SETTINGS.haproxy.pools(), now=fx.T0, history=(read,))
    got = [r.cells["query"].text for r in statements.rows(between, ctx) if r.node == "node1"]
    assert got[0].startswith("select customer_id") and len(got) == 2
    alone = [r.cells["query"].text for r in statements.rows(between, _ctx()) if r.node == "node1"]
    assert alone == ["not read yet"]  # no read in the history: said, not shown as none


def test_the_filter_finds_a_sessions_application() -> None:
    rows = sessions.rows(fx.sessioned(), _ctx())
    assert [r.key for r in rows if matches(r, "nightly")] == ["node1|4100"]
    assert {r.key for r in rows if matches(r, "node1")} >= {"node1|4100", "node1|idle"}


def test_an_indented_statement_reads_on_one_line() -> None:
    snap = fx.sessioned()
    procs = snap.nodes[0].processes
    runaway = next(p for p in procs if p.pid == 4100).model_copy(
        update={"query": "select customer_id,\n\t       sum(total)\n  from orders\n group by 1"}
    )
    others = tuple(p for p in procs if p.pid != 4100)
    rows = sessions.rows(node(snap, "node1", processes=(runaway, *others)), _ctx())
    said = next(r for r in rows if r.key == "node1|4100").cells["query"].text
    assert said == "select customer_id, sum(total) from orders group by 1"
