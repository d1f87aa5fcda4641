"""The `M` prompt: a few words stamped on the timeline (and in the recording) as a marker."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label

from pgtop_ha.record.markers import MAX_TEXT, clean_marker


class MarkerScreen(ModalScreen[str | None]):
    """Ask for a marker's text; Enter returns it (cleaned), Esc or an empty text returns None."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]
    DEFAULT_CSS = """
    MarkerScreen { align: center middle; }
    #marker-box {
        width: 84; max-width: 100%; height: auto;
        border: round $accent; background: $surface; padding: 0 1;
    }
    """

    def compose(self) -> ComposeResult:
        """A label and an input."""
        with Vertical(id="marker-box"):
            yield Label("Marker for the timeline (e.g. killed primary), Enter to stamp, Esc to cancel")
            yield Input(placeholder="what just happened", max_length=MAX_TEXT, id="marker-input")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """Return the marker text, or None when it is empty."""
        self.dismiss(clean_marker(event.value) or None)

    def action_cancel(self) -> None:
        """No marker."""
        self.dismiss(None)
