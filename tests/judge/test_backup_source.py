"""pgBackRest nobody asked for never warns about itself; the stanza archive_command uses is named."""

from __future__ import annotations

from pgtop_ha.judge.problems import cluster_problems
from pgtop_ha.models.haproxy import DEFAULT_POOLS
from pgtop_ha.models.pgbackrest import PgBackRestState
from pgtop_ha.models.snapshot import ClusterSnapshot, PatroniConfig
from pgtop_ha.models.thresholds import Level, Thresholds
from pgtop_ha.ui.panes import pgbackrest as pane
from tests.ui import fixtures as fx
from tests.ui.test_rows import ctx

ARCHIVE = "pgbackrest --stanza=main archive-push %p"
NONE = "pgbackrest info lists no stanza (config /etc/pgbackrest.conf); set [pgbackrest] config and stanza"


def _with(asked: bool) -> ClusterSnapshot:
    state = PgBackRestState(enabled=True, asked=asked, config="/etc/pgbackrest.conf", no_stanza=NONE)
    config = PatroniConfig(parameters={"archive_command": ARCHIVE})
    return fx.healthy().model_copy(update={"pgbackrest": state, "patroni_config": config})


def _backup_problems(snap: ClusterSnapshot) -> list[tuple[Level, str]]:
    found = cluster_problems(snap, Thresholds(), DEFAULT_POOLS, snap.taken_at)
    return [(p.level, p.text) for p in found if p.rule == "pgbackrest.no-stanza"]


def test_an_auto_detected_source_that_finds_nothing_is_information() -> None:
    snap = _with(asked=False)
    assert _backup_problems(snap) == []
    (row,) = pane.rows(snap, ctx(thresholds=Thresholds(), pools=DEFAULT_POOLS, now=snap.taken_at))
    assert row.cells["health"].level in (None, Level.OK)
    assert "stanza 'main'" in row.cells["error"].text


def test_an_asked_source_names_the_stanza_archive_command_uses() -> None:
    ((level, text),) = _backup_problems(_with(asked=True))
    assert level == Level.WARN
    assert "archive_command pushes to stanza 'main'" in text and "/etc/pgbackrest.conf" in text
