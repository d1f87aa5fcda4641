"""What every operator modal shares: a dialog, a status area, no closing while an action runs."""

from __future__ import annotations

from collections.abc import Awaitable

from textual.binding import Binding
from textual.screen import ModalScreen
from textual.widgets import Static

from pgtop_ha.actions.results import ActionResult
from pgtop_ha.models.text import clean
from pgtop_ha.ui.format import shown

LINE = 1000  # characters of one status line: Patroni's reasons are short, a hostile one is not


def plain(text: str = "", *, id: str | None = None, classes: str | None = None) -> Static:
    """A Static for text that may hold server strings: cleaned, lines kept, never markup."""
    return Static(clean(text, keep_newlines=True), id=id, classes=classes, markup=False)


def result_lines(result: ActionResult) -> list[str]:
    """The lines a finished action shows: verdict, duration, then one line per node."""
    verdict = "OK" if result.ok else "FAILED"
    lines = [f"{verdict} ({_took(result.duration_s)}): {result.message}"]
    if len(result.nodes) == 1 and result.nodes[0].message == result.message:
        return lines  # a one-node action: its node's line would say the verdict's again
    for node in result.nodes:
        mark = "ok  " if node.ok else "FAIL"
        lines.append(f"  {mark} {node.message} ({_took(node.duration_s)})")
    return lines


def _took(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.1f} s"


class OperatorModal(ModalScreen[ActionResult | None]):
    """A dialog that runs one action and shows its progress and result until closed."""

    CSS_PATH = "operator.tcss"
    BINDINGS = [Binding("escape", "close", "Close", priority=True)]

    def __init__(self) -> None:
        """Start idle: nothing running, no result yet."""
        super().__init__()
        self.running = False
        self.result: ActionResult | None = None
        self._lines: list[str] = []

    def status(self) -> Static:
        """The status area (progress steps, then the result)."""
        return self.query_one("#status", Static)

    def say(self, line: str, *, fresh: bool = False) -> None:
        """Add a line to the status area (``fresh`` clears it first)."""
        if fresh:
            self._lines = []
        # Lines carry names, Patroni's answers and exception texts: one clean line each.
        self._lines.append(shown(line, LINE))
        # Keep the latest lines visible in a small terminal.
        self.status().update("\n".join(self._lines[-10:]))
        # In a small terminal the dialog scrolls: keep the newest line in view.
        self.call_after_refresh(self.query_one("#dialog").scroll_end, animate=False)

    def finished(self, result: ActionResult) -> None:
        """Show ``result`` and allow closing."""
        self.running = False
        self.result = result
        for line in result_lines(result):
            self.say(line)
        self.say("Esc: close")
        self.status().set_class(result.ok, "ok")
        self.status().set_class(not result.ok, "failed")

    def launch(self, action: Awaitable[ActionResult]) -> None:
        """Run ``action`` in a worker; an unexpected error becomes a line, never a traceback."""
        self.running = True

        async def perform() -> None:
            try:
                result = await action
            except Exception as exc:  # the console must keep running, whatever broke
                self.running = False
                first = (str(exc).splitlines() or [type(exc).__name__])[0]
                self.say(f"FAILED: {type(exc).__name__}: {first}; Esc: close")
                self.status().set_class(True, "failed")
                return
            self.finished(result)

        self.run_worker(perform(), exclusive=True, group="operator-action")

    def action_close(self) -> None:
        """Close, unless an action is still running (closing would cancel it half-way)."""
        if self.running:
            self.notify("an action is running; its result will show here", severity="warning", markup=False)
            return
        self.dismiss(self.result)
