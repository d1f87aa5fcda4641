"""Textual's compositor, drawing a partial update from only the widgets and rows it changes.

Textual redraws every widget overlapping the bounding box of all changed regions; with changes at
the top and the bottom of a dashboard that is the whole screen. Here a widget is drawn only over
the rows its changed regions span, at its full width. Full updates stay Textual's own.
"""

from __future__ import annotations

from collections.abc import Iterable

from textual._compositor import ChopsUpdate, Compositor
from textual.geometry import Region
from textual.strip import Strip


class BandCompositor(Compositor):
    """A Compositor whose partial updates draw only the rows of the widgets that changed regions cover."""

    def __init__(self) -> None:
        super().__init__()
        self._changed: list[Region] | None = None  # the regions of the partial update being drawn

    def render_partial_update(self) -> ChopsUpdate | None:
        """Textual's partial update, its widgets drawn over the changed rows only."""
        self._changed = list(self._dirty_regions)  # the base class clears them as it starts
        try:
            return super().render_partial_update()
        finally:
            self._changed = None

    def _get_renders(self, crop: Region | None = None) -> Iterable[tuple[Region, Region, list[Strip]]]:
        changed = self._changed
        if changed is None or crop is None:
            yield from super()._get_renders(crop)
            return
        # Each changed region once, as corners: this loop runs for every visible widget and
        # every changed region of a frame (under load at 160x48: 58 widgets by a median of 8
        # regions, 23 at most).
        corners = list(dict.fromkeys(r.corners for r in changed))
        for widget, (region, clip) in self.visible_widgets.items():
            visible = region.intersection(clip)
            if not visible.area:
                continue
            x, y, x2, y2 = visible.corners
            top, bottom = y2, y
            for ox, oy, ox2, oy2 in corners:
                # Region.overlaps(visible, changed), written out: a method call per pair was a
                # few per cent of a frame.
                if ((x2 > ox >= x) or (x2 > ox2 > x) or (ox < x and ox2 >= x2)) and (
                    (y2 > oy >= y) or (y2 > oy2 > y) or (oy < y and oy2 >= y2)
                ):
                    top = min(top, oy)
                    bottom = max(bottom, oy2)
            if top >= bottom:
                continue  # nothing changed where it shows: its lines would all be thrown away
            top, bottom = max(y, top), min(y2, bottom)
            band = Region(x, top, visible.width, bottom - top)
            crop_in_widget = Region(band.x - region.x, band.y - region.y, band.width, band.height)
            yield region, band, widget.render_lines(crop_in_widget)
