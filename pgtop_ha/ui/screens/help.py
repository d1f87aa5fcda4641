"""The `?` help: every key of the screen, with what it does."""

from __future__ import annotations

from collections.abc import Sequence

from rich.markup import escape
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from pgtop_ha.ui.panes.base import PaneSpec

TITLE = "[b]pgtop-ha[/b] — keys (no mouse needed)\n\n"

KEYS = """\
  Esc      back to the overview; clears the node filter
  p        pause / resume the display (polling goes on; events are kept)
  + / -    poll slower / faster
  /        filter every pane by node name (empty: all nodes)
  o / O    sort the table by the next column / reverse the sort
  M        stamp a marker on the timeline (also `pgtop-ha mark TEXT` from any shell)
  Ctrl+P   command palette: every key of this screen by name (actions in operator mode only)
  Tab      move between the tables of the dashboard
  ↑ ↓      move the cursor; it stays on its row across refreshes
  q        quit

States are words and symbols as well as colours: ✔ OK, ▲ WARN, ✖ CRIT.
Header: a node is ✔ when its last reads answered, ▲ while one is slow, ✖ once
one failed; with no snapshot for the stale threshold (5 s) "(no data for …)".
While every node is ✔ and the polls are calm, "last" gives the minute
(last 03:04); the seconds come back with a stale or failed read, a pause
or the fast cadence (last 03:04:19), and stay 30 s after the last event.
"PG DOWN, still routed" = Patroni says leader and HAProxy sends writes there,
but PostgreSQL does not answer.
Banner: "⏱ leader node1 silent 9s · key lapses ≤11s" while the leader's Patroni
does not answer and Patroni still names it (its ttl bounds the election);
then the failover's stopwatch: election, write outage, lag, replicas.
"""


def pane_help(panes: Sequence[PaneSpec]) -> str:
    """The help's pane section: the overview's key, then one line per keyed pane, by key."""
    overview = " + ".join(escape(p.title) for p in panes if p.place.overview)
    lines = [f"  0        overview: {overview} (a dashboard when ≥160×48)"]
    for pane in sorted((p for p in panes if p.key), key=lambda p: str(p.key)):
        lines.append(f"  {escape(str(pane.key)):<8} {escape(pane.title):<12} {escape(pane.help)}")
    return "\n".join(lines) + "\n"


def help_text(panes: Sequence[PaneSpec]) -> str:
    """The whole help (markup): title, the pane keys from the registry, the other keys."""
    return TITLE + pane_help(panes) + KEYS


class HelpScreen(ModalScreen[None]):
    """Modal list of keys; any of Esc, q, ? closes it."""

    BINDINGS = [
        Binding("escape", "dismiss", "Close"),
        Binding("question_mark", "dismiss", "Close", show=False),
        Binding("q", "dismiss", "Close", show=False),
    ]

    def __init__(self, panes: Sequence[PaneSpec], extra: str = "", mode: str = "") -> None:
        super().__init__()
        self.panes = tuple(panes)
        self.extra = extra
        self.mode = mode

    def compose(self) -> ComposeResult:
        """The help text in a box that scrolls (↑ ↓) when the terminal is short."""
        with VerticalScroll(id="help-box"):
            yield Static(help_text(self.panes) + self.extra, id="help-text", markup=True)
            if self.mode:
                yield Static(f"Mode: {self.mode}", id="help-mode", markup=False)

    async def action_dismiss(self, result: None = None) -> None:
        """Close the help."""
        self.dismiss(result)
