"""SVG snapshots of every pane at 80x24 and 160x48 in the dark and mono themes (fixed clock/data)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from textual.pilot import Pilot

from pgtop_ha.models.snapshot import ClusterSnapshot
from tests.ui import fixtures as fx
from tests.ui.harness import make_app, settled


def _kill() -> list[ClusterSnapshot]:
    return [fx.healthy(), fx.kill_primary()]


def _busy() -> list[ClusterSnapshot]:
    later = fx.T0 + timedelta(seconds=20)
    return [fx.healthy(), fx.subscriber_copy(fx.lagging(fx.healthy(later)))]


VIEWS: dict[str, tuple[str, Callable[[], list[ClusterSnapshot]]]] = {
    "overview": ("0", _kill),
    "cluster": ("1", _kill),
    "haproxy": ("2", _kill),
    "replication": ("3", _busy),
    "slots": ("4", _busy),
    "copy": ("5", _busy),
    "archiver": ("6", _busy),
    "memory": ("7", _busy),
    "events": ("8", _kill),
}


@pytest.mark.parametrize("theme", ["dark", "mono"])
@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
@pytest.mark.parametrize("view", list(VIEWS))
def test_pane_snapshot(snap_compare: Any, view: str, size: tuple[int, int], theme: str) -> None:
    key, scenario = VIEWS[view]
    app, source = make_app(scenario(), settings=fx.settings(theme=theme))

    async def ready(pilot: Pilot[None]) -> None:
        await settled(pilot, app, source)
        await pilot.press(key)
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=ready)
