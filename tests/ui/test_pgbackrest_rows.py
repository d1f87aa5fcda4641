"""rows() of the pgBackRest pane: off, failing, and a stanza joined with the primary's archiver."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from pgtop_ha.collect.pgbackrest import parse_info
from pgtop_ha.models.haproxy import Pools
from pgtop_ha.models.pgbackrest import WAL_SEGMENT_BYTES, PgBackRestState, SpoolState
from pgtop_ha.models.snapshot import Archiver
from pgtop_ha.models.thresholds import Level
from pgtop_ha.ui.panes import pgbackrest
from pgtop_ha.ui.panes.base import Context, Row
from tests.ui import fixtures as fx

S = fx.settings()
NOW = fx.T0 + timedelta(seconds=21)
INFO = (Path(__file__).parents[1] / "collect" / "fixtures" / "pgbackrest_info_lab.json").read_text()


def _ctx() -> Context:
    return Context(thresholds=S.thresholds, pools=Pools(("pg_writer",), ("pg_reader",)), now=NOW)


def _with(state: PgBackRestState | None, ready: int = 0) -> list[Row]:
    snap = fx.healthy()
    nodes = tuple(
        n.model_copy(update={"archiver": Archiver(ready_count=ready, segments_behind=ready)})
        if n.in_recovery is False
        else n
        for n in snap.nodes
    )
    return pgbackrest.rows(snap.model_copy(update={"nodes": nodes, "pgbackrest": state}), _ctx())


def test_off_says_how_to_turn_it_on() -> None:
    (row,) = _with(None)
    assert row.cells["error"].text == pgbackrest.NOT_CONFIGURED


def test_unreachable_source_is_critical_with_its_reason() -> None:
    (row,) = _with(PgBackRestState(enabled=True, error="pgbackrest info exited 55: ERROR: [055]"))
    assert row.cells["health"].level is Level.CRIT and "exited 55" in row.cells["error"].text


def test_stanza_joined_with_the_primary_archiver_and_queue() -> None:
    stanzas = parse_info(INFO, fx.T0)
    spool = SpoolState(stanza="lab", path="/s", ok_count=4, error_count=1, newest_error="[103] unable")
    state = PgBackRestState(
        enabled=True, stanzas=stanzas, spools=(spool,), queue_max_bytes=10 * WAL_SEGMENT_BYTES
    )
    (row,) = _with(state, ready=9)
    cells = {k: c.text for k, c in row.cells.items()}
    assert cells["stanza"] == "lab" and cells["status"] == "ok"
    assert cells["ready"] == "9" and cells["behind"] == "9"
    assert cells["queue"] == "144 MiB/160 MiB" and row.cells["queue"].level is Level.CRIT
    assert cells["spool"] == "4/1" and cells["error"] == "[103] unable"
    assert cells["diff"] == "-" and cells["wal_max"] == "000000010000000000000008"
    assert row.cells["health"].level is Level.CRIT
    (calm,) = _with(state.model_copy(update={"spools": ()}), ready=1)
    assert calm.cells["queue"].level is None and calm.cells["error"].text == ""
