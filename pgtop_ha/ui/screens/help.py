"""The `?` help: every key of the screen, with what it does."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static

HELP = """\
[b]pgtop-ha[/b] — keys (no mouse needed)

  0        overview: cluster + worst problems (a dashboard when ≥160×48)
  1 … 8    Cluster, HAProxy, Replication, Slots, Copy, Archiver, Memory, Events
  Esc      back to the overview; clears the node filter
  p        pause / resume the display (polling goes on; events are kept)
  + / -    poll slower / faster
  /        filter every pane by node name (empty: all nodes)
  o / O    sort the table by the next column / reverse the sort
  M        stamp a marker on the timeline (also `pgtop-ha mark TEXT` from any shell)
  Tab      move between the tables of the dashboard
  ↑ ↓      move the cursor; it stays on its row across refreshes
  q        quit

States are words and symbols as well as colours: ✔ OK, ▲ WARN, ✖ CRIT.
"PG DOWN, still routed" = Patroni says leader and HAProxy sends writes there,
but PostgreSQL does not answer.
"""


class HelpScreen(ModalScreen[None]):
    """Modal list of keys; any of Esc, q, ? closes it."""

    BINDINGS = [
        Binding("escape", "dismiss", "Close"),
        Binding("question_mark", "dismiss", "Close", show=False),
        Binding("q", "dismiss", "Close", show=False),
    ]

    def __init__(self, extra: str = "", mode: str = "") -> None:
        super().__init__()
        self.extra = extra
        self.mode = mode

    def compose(self) -> ComposeResult:
        """The help text in a box."""
        with Vertical(id="help-box"):
            yield Static(HELP + self.extra, id="help-text", markup=True)
            if self.mode:
                yield Static(f"Mode: {self.mode}", id="help-mode", markup=False)

    async def action_dismiss(self, result: None = None) -> None:
        """Close the help."""
        self.dismiss(result)
