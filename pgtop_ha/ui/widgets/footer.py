"""The key footer: Textual's own, rebuilt only when the keys it shows change."""

from __future__ import annotations

from textual.screen import Screen
from textual.widgets import Footer as TextualFooter


def keys_shown(screen: Screen[object]) -> tuple[object, ...]:
    """What the footer would show for ``screen``: each shown binding and whether it is enabled."""
    return tuple(
        (b.key, b.action, b.description, b.key_display, b.group, enabled, tooltip)
        for _, b, enabled, tooltip in screen.active_bindings.values()
        if b.show
    )


class Footer(TextualFooter):
    """Textual's Footer, recomposed only when the shown keys differ from the last ones."""

    # Textual rebuilds every key widget (and restyles them) on each focus change; a pane switch
    # moves the focus to another table with the same keys, and that rebuild was most of a
    # switch's time.

    def __init__(self, *, show_command_palette: bool = True) -> None:
        super().__init__(show_command_palette=show_command_palette)
        self._shown: tuple[object, ...] | None = None
        self.rebuilds = 0  # tests and benchmarks read it

    def bindings_changed(self, screen: Screen[object]) -> None:
        """Rebuild when the keys changed (and the first time); otherwise leave the keys as they are."""
        if screen.app.app_focus and self.is_attached and screen is self.screen:
            shown = keys_shown(screen)
            if shown == self._shown:
                return
            self._shown = shown
        self.rebuilds += 1
        super().bindings_changed(screen)
