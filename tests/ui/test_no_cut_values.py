"""No value is ever cut inside itself: every pane at 80x24, 120x40 and 160x48, values at their widest."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from pgtop_ha.models.snapshot import ClusterSnapshot
from pgtop_ha.ui.panes import registry
from pgtop_ha.ui.widgets.keyed_table import KeyedTable
from tests.ui import fixtures as fx
from tests.ui.harness import make_app, settled, view_shown

SIZES = [(80, 24), (120, 40), (160, 48)]
# Long names, lag in the hundreds of MiB, a lock queue, settings that differ, poolers after a failover.
SCENES: dict[str, Callable[[], list[ClusterSnapshot]]] = {
    "busy": lambda: [fx.renamed(fx.healthy()), fx.renamed(fx.lagging(fx.subscriber_copy(fx.healthy())))],
    "locked": lambda: [fx.healthy(), fx.locked()],
    "tuned": lambda: [fx.healthy(), fx.tuned()],
    "pooled": lambda: [fx.pooled(fx.healthy()), fx.pooled(fx.failed_over(), following=False)],
    "kill": lambda: [fx.healthy(), fx.kill_primary()],
}
KEYS = ["0", *(p.key for p in registry.PANES if p.key)]


def cut_cells(table: KeyedTable) -> list[str]:
    """Cells the table shows neither whole, nor blank, nor ending in "…"."""
    widths = table.column_widths()
    scroll_x, scroll_y = table.scroll_offset
    header = table.header_height
    rows = table.visible_texts()
    bad = []
    for y in range(header, table.size.height):
        index = y - header + scroll_y
        if index >= len(rows):
            break
        line = table.render_line(y).text
        start = 0
        for width, full in zip(widths, rows[index], strict=True):
            a, b = max(0, start - scroll_x), min(len(line), start + width - scroll_x)
            start += width
            shown = line[a:b].strip() if b > a else ""
            if shown and shown != full.strip() and not shown.endswith("…"):
                bad.append(f"{full.strip()!r} shown as {shown!r}")
    return bad


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
@pytest.mark.parametrize("scene", list(SCENES))
async def test_no_pane_cuts_a_value(scene: str, size: tuple[int, int]) -> None:
    app, source = make_app(SCENES[scene]())
    async with app.run_test(size=size) as pilot:
        await settled(pilot, app, source)
        found: dict[str, list[str]] = {}
        for key in KEYS:
            await pilot.press(key)
            await view_shown(pilot, app)
            for table in app.screen.query(KeyedTable):
                if table.display and table.region.width and table.row_count:
                    bad = cut_cells(table)
                    if bad:
                        found[f"{key}:{table.id}"] = bad[:3]
        assert not found, found
