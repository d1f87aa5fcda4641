"""A small confirm-then-run dialog for pause/resume and cancelling a scheduled switchover."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Input

from pgtop_ha.actions.results import ActionResult
from pgtop_ha.ui.format import shown
from pgtop_ha.ui.operator.modal_base import OperatorModal, plain


class ConfirmModal(OperatorModal):
    """Shows exactly what will be sent; typing ``confirm_word`` (or just Enter) runs it."""

    AUTO_FOCUS = "#confirm"

    def __init__(
        self,
        title: str,
        detail: str,
        run: Callable[[], Awaitable[ActionResult]],
        confirm_word: str | None = None,
    ) -> None:
        """``run`` is awaited once confirmed; ``confirm_word`` None means Enter is enough."""
        super().__init__()
        self._title = title
        self._detail = detail
        self._run = run
        self.confirm_word = confirm_word

    def compose(self) -> ComposeResult:
        """Title, what will be sent, the confirmation input and the status."""
        word = shown(self.confirm_word) if self.confirm_word else None
        ask = (
            f"Type {word} and press Enter to confirm; Esc to cancel."
            if word
            else "Press Enter to confirm; Esc to cancel."
        )
        # The detail and the word may quote a server (a scheduled time, the cluster name).
        with Vertical(id="dialog"):
            yield plain(self._title, id="title")
            yield plain(self._detail)
            yield plain(ask, classes="hint")
            yield Input(placeholder=word or "Enter", id="confirm")
            yield plain(id="status")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """Check the word, then run."""
        event.stop()
        if self.running or self.result is not None:
            return
        if self.confirm_word and event.value.strip() != self.confirm_word:
            self.say(f"Type {self.confirm_word} exactly to confirm.", fresh=True)
            return
        event.input.disabled = True
        self.say("sent; waiting for the answer", fresh=True)
        self.launch(self._run())
