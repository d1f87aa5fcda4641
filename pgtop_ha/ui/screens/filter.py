"""The `/` prompt: a node name (or part of one) to filter every pane by."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label


class FilterScreen(ModalScreen[str | None]):
    """Ask for a node filter; Enter returns it (empty clears), Esc returns None (no change)."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, current: str) -> None:
        super().__init__()
        self.current = current

    def compose(self) -> ComposeResult:
        """A label and an input."""
        with Vertical(id="filter-box"):
            yield Label("Filter by node, or a session's application or user (empty: all); Enter, Esc")
            yield Input(value=self.current, placeholder="node name", id="filter-input")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """Return the filter text."""
        self.dismiss(event.value.strip())

    def action_cancel(self) -> None:
        """Leave the filter as it was."""
        self.dismiss(None)
