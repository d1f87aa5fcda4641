"""BandCompositor: each partial update sends the terminal what Textual's own would, drawing less."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import timedelta

import pytest
from textual._compositor import ChopsUpdate, Compositor
from textual.geometry import Region
from textual.strip import Strip

from pgtop_ha.ui.compositor import BandCompositor
from tests.ui import fixtures as fx
from tests.ui.harness import make_app, screen, settled, still, until


def _sent(update: ChopsUpdate | None, console: object) -> str:
    return "" if update is None else update.render_segments(console)  # type: ignore[arg-type]


@pytest.mark.parametrize("size", [(160, 48), (80, 24)])
async def test_every_partial_update_sends_what_textual_s_compositor_would(
    size: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    later = fx.T0 + timedelta(seconds=1)
    # Lag, a primary killed, a failover: rows change, come and go in several panes at once.
    steps = [fx.lagging(fx.healthy(later)), fx.kill_primary(), fx.failed_over(), fx.healthy(fx.T0)]
    app, source = make_app([fx.healthy()])
    async with app.run_test(size=size) as pilot:
        await settled(pilot, app, source)
        comp = screen(app)._compositor
        assert isinstance(comp, BandCompositor)
        sent: list[tuple[str, str]] = []  # (ours, Textual's) for each partial update
        drawn: list[tuple[int, int]] = []  # widgets drawn: (ours, Textual's)
        counts: list[int] = []  # widgets drawn in the update under way (none for full updates)
        counting = [False]
        real_update, real_renders = comp.render_partial_update, comp._get_renders

        def counted(crop: Region | None = None) -> Iterator[tuple[Region, Region, list[Strip]]]:
            renders: Iterable[tuple[Region, Region, list[Strip]]] = real_renders(crop)
            for render in renders:
                if counting[0]:
                    counts[-1] += 1
                yield render

        def both() -> ChopsUpdate | None:
            changed = set(comp._dirty_regions)
            counting[0] = True
            counts.append(0)
            ours = real_update()
            comp._dirty_regions.update(changed)
            counts.append(0)
            theirs = Compositor.render_partial_update(comp)  # the base class: every widget drawn whole
            counting[0] = False
            sent.append((_sent(ours, app.console), _sent(theirs, app.console)))
            drawn.append((counts[-2], counts[-1]))
            return ours

        monkeypatch.setattr(comp, "render_partial_update", both)
        monkeypatch.setattr(comp, "_get_renders", counted)
        for step in steps:
            source.push(step)
            await until(pilot, lambda: app.snapshot is app.history[-1] and app.received == source.sent)
            await still(pilot, app)
        assert len(sent) >= len(steps)
        for ours, theirs in sent:
            assert ours == theirs
        assert any(ours for ours, _ in sent)  # the updates did send something
        # Fewer widgets drawn overall, and never more than Textual's own.
        assert all(o <= t for o, t in drawn)
        assert sum(o for o, _ in drawn) < sum(t for _, t in drawn)
