"""The live console opened from the fleet: the same app, with Esc on its overview going back."""

from __future__ import annotations

from pathlib import Path

from textual.binding import Binding

from pgtop_ha.ui import app as console_app
from pgtop_ha.ui.app import PgtopApp
from pgtop_ha.ui.screens.monitor import declared_bindings


class DrillApp(PgtopApp):
    """PgtopApp for one cluster of the fleet; Esc where it has nothing left to close returns."""

    # Textual resolves a relative CSS_PATH from the subclass's module: point at the console's own.
    CSS_PATH = str(Path(console_app.__file__).with_name("app.tcss"))
    BINDINGS = [
        *PgtopApp.BINDINGS,
        Binding("escape", "fleet_back", "Fleet", priority=True),
    ]

    async def action_fleet_back(self) -> None:
        """Esc: what the screen does with it, or back to the fleet when on the bare overview."""
        screen = self.screen
        if getattr(screen, "view", None) == "overview" and not self.node_filter:
            self.exit()
            return
        # A priority binding sees Esc first: hand it to the screen's own Esc (close, cancel, back).
        action = escape_action(screen)
        if action is not None:
            await screen.run_action(action)
            return
        self.exit()


def escape_action(screen: object) -> str | None:
    """The action a screen's own Esc key runs (its class's, or a base's), if it has one."""
    escapes = [b for b in declared_bindings(type(screen)) if "escape" in b.key.split(",")]
    return escapes[-1].action if escapes else None
