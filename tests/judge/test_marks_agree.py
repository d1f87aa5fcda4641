"""A pane's mark and `check` agree: each fault that colours a cell is a verdict with its rule and level."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from pgtop_ha.check_cli import status_line
from pgtop_ha.collect.pgbackrest import parse_info
from pgtop_ha.judge.judgement import judgement
from pgtop_ha.judge.verdicts import worst
from pgtop_ha.models.pgbackrest import PgBackRestState
from pgtop_ha.models.snapshot import (
    ClusterSnapshot,
    HugePages,
    OpenTransaction,
    Process,
    Replication,
    WalReceiver,
)
from pgtop_ha.models.thresholds import Level
from pgtop_ha.ui.panes import memory, pgbackrest, replication, sessions
from pgtop_ha.ui.panes.base import Context, Row
from tests.models.builders import healthy, node
from tests.ui import fixtures as fx

SETTINGS = fx.settings()
POOLS = SETTINGS.haproxy.pools()
INFO = (Path(__file__).parents[1] / "collect" / "fixtures" / "pgbackrest_info_lab.json").read_text()
DAY = 86400.0


def _walsender(snap: ClusterSnapshot, standby: str, **kw: object) -> ClusterSnapshot:
    primary = next(n for n in snap.nodes if n.in_recovery is False)
    senders: tuple[Replication, ...] = tuple(
        r.model_copy(update=kw) if r.application_name == standby else r for r in primary.replication
    )
    return node(snap, primary.name, replication=senders)


def _silent() -> ClusterSnapshot:
    snap = healthy()
    return _walsender(snap, "node3", reply_time=snap.taken_at - timedelta(seconds=45))


def _catchup() -> ClusterSnapshot:
    return _walsender(healthy(), "node2", state="catchup")


def _receiver_down() -> ClusterSnapshot:
    snap = node(healthy(), "node1", replication=())  # no upstream lists the standbys
    snap = node(snap, "node2", wal_receiver=WalReceiver(status="waiting"))
    return node(snap, "node3", wal_receiver=WalReceiver(status="streaming"))


def _backups(full_age_days: float | None) -> ClusterSnapshot:
    snap = healthy()
    (stanza,) = parse_info(INFO, fx.T0)
    stanza = stanza.model_copy(update={"status_code": 0, "status_message": "ok", "repo_errors": ()})
    if full_age_days is None:
        stanza = stanza.model_copy(update={"full": None})
    else:
        assert stanza.full is not None
        full = stanza.full.model_copy(update={"age_s": full_age_days * DAY, "error": False})
        stanza = stanza.model_copy(update={"full": full})
    return snap.model_copy(update={"pgbackrest": PgBackRestState(enabled=True, stanzas=(stanza,))})


def _hugepages_fallback() -> ClusterSnapshot:
    h = HugePages(total=512, free=512, reserved=0, size_bytes=2 * 1024 * 1024, setting="try", status="off")
    return node(healthy(), "node2", hugepages=h)


def _session(state: str, xact_s: float, state_s: float) -> ClusterSnapshot:
    """A client on node1 in a transaction, as the Sessions pane and the every-cycle read both see it."""
    common = {"pid": 4242, "usename": "app", "application_name": "batch", "state": state}
    process = Process(backend_type="client backend", xact_s=xact_s, state_s=state_s, xmin_age=7, **common)
    open_xact = OpenTransaction(xact_s=xact_s, state_s=state_s, holds_xmin=True, **common)
    return node(healthy(), "node1", processes=(process,), open_transactions=(open_xact,))


CASES = {
    "silent standby": (_silent, replication, "replication.silent", Level.WARN),
    "walsender in catchup": (_catchup, replication, "replication.not-streaming", Level.WARN),
    "receiver not streaming": (_receiver_down, replication, "replication.receiver", Level.WARN),
    "stale full backup": (lambda: _backups(9), pgbackrest, "pgbackrest.full-age", Level.WARN),
    "no full backup": (lambda: _backups(None), pgbackrest, "pgbackrest.full-age", Level.WARN),
    "huge pages not used": (_hugepages_fallback, memory, "memory.hugepages", Level.WARN),
    "long transaction": (
        lambda: _session("active", 700, 700),
        sessions,
        "sessions.long-transaction",
        Level.WARN,
    ),
    "idle in transaction": (
        lambda: _session("idle in transaction", 90, 80),
        sessions,
        "sessions.idle-in-transaction",
        Level.WARN,
    ),
}


def _marks(rows: list[Row]) -> set[Level]:
    return {c.level for r in rows for c in r.cells.values() if c.level is not None and c.level > Level.OK}


def _rows(pane: object, snap: ClusterSnapshot) -> list[Row]:
    ctx = Context(thresholds=SETTINGS.thresholds, pools=POOLS, now=snap.taken_at)
    rows = pane.rows(snap, ctx)  # type: ignore[attr-defined]
    assert isinstance(rows, list)
    return rows


@pytest.mark.parametrize("case", list(CASES))
def test_a_marked_cell_is_a_verdict_and_check_warns(case: str) -> None:
    build, pane, rule, level = CASES[case]
    snap = build()
    assert _marks(_rows(pane, healthy())) == set(), "the healthy cluster marks nothing in this pane"
    assert max(_marks(_rows(pane, snap))) == level
    verdicts = judgement(snap, SETTINGS.thresholds, POOLS, ()).verdicts
    assert [v.level for v in verdicts if v.rule == rule] == [level], verdicts
    assert worst(verdicts) == level
    assert status_line(int(worst(verdicts)), verdicts, None, ()).startswith("PGTOP-HA WARNING")


def test_the_healthy_cluster_is_ok() -> None:
    snap = _backups(1)
    assert worst(judgement(snap, SETTINGS.thresholds, POOLS, ()).verdicts) == Level.OK
