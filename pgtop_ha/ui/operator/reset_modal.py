"""The stats reset dialog: scopes with their exact function, the node(s), confirm, per node."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from pgtop_ha.actions.reset_scopes import ResetChoice, ResetScope, ResetTarget
from pgtop_ha.actions.results import ActionResult
from pgtop_ha.ui.format import shown
from pgtop_ha.ui.operator.modal_base import OperatorModal, plain

RunReset = Callable[[ResetScope, Sequence[ResetTarget]], Awaitable[ActionResult]]


def target_options(choice: ResetChoice) -> list[tuple[str, tuple[ResetTarget, ...]]]:
    """The node sets offered for ``choice``: the default, all, then each node alone."""
    nodes = choice.nodes
    default = tuple(t for t in nodes if t.name in choice.default_nodes)
    out: list[tuple[str, tuple[ResetTarget, ...]]] = [("default: " + _names(default), default)]
    if len(nodes) > 1 and default != nodes:
        out.append(("all: " + _names(nodes), nodes))
    out.extend((f"only {_names((t,))}", (t,)) for t in nodes if (t,) != default)
    return out


def _names(targets: Sequence[ResetTarget]) -> str:
    # Node names come from Patroni: cleaned here, and the option lists never parse markup.
    return shown(", ".join(t.name for t in targets))


class ResetModal(OperatorModal):
    """Choose a scope, then the node(s); Enter twice on the node(s) runs the function shown."""

    AUTO_FOCUS = "#scopes"

    def __init__(self, choices: Sequence[ResetChoice], run: RunReset, role: str | None) -> None:
        """List ``choices``; confirming runs ``run(scope, nodes)`` as ``role``."""
        super().__init__()
        self.choices = tuple(choices)
        self._run = run
        self.role = role or "the configured role"
        self._targets: list[tuple[str, tuple[ResetTarget, ...]]] = []
        self._armed: int | None = None

    def compose(self) -> ComposeResult:
        """Title, scopes, node sets, the statement preview and the status."""
        with Vertical(id="dialog"):
            yield Static("Reset statistics", id="title")
            yield Static("Scope (Enter to choose):", classes="hint")
            yield OptionList(
                *(
                    Option(f"{c.scope.label:<29} {c.scope.call}", id=str(i))
                    for i, c in enumerate(self.choices)
                ),
                id="scopes",
                markup=False,
            )
            yield Static("Run on (Enter, then Enter again to confirm):", classes="hint")
            yield OptionList(id="targets", markup=False)
            yield plain(id="preview")
            yield plain(id="status")

    def on_mount(self) -> None:
        """Show the first scope's node sets."""
        if not self.choices:
            self.say("Nothing to reset: no node's PostgreSQL address is known yet.")
            return
        self.query_one("#scopes", OptionList).highlighted = 0
        self._fill_targets(0)

    @property
    def scope_index(self) -> int:
        """The highlighted scope."""
        return self.query_one("#scopes", OptionList).highlighted or 0

    def _fill_targets(self, index: int) -> None:
        self._targets = target_options(self.choices[index])
        targets = self.query_one("#targets", OptionList)
        targets.clear_options()
        targets.add_options([Option(label, id=str(i)) for i, (label, _) in enumerate(self._targets)])
        targets.highlighted = 0
        self._armed = None
        self._preview()

    def _preview(self) -> None:
        index = self.query_one("#targets", OptionList).highlighted
        if not self._targets or index is None:
            return
        scope = self.choices[self.scope_index].scope
        names = _names(self._targets[index][1])
        text = f"Will run: SELECT {scope.call}  on {names}  as {self.role}"
        if self._armed == index:
            text += "\nPress Enter again to run it; Esc to cancel."
        self.query_one("#preview", Static).update(text)

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        """Keep the node sets and the preview in step with the highlighted rows."""
        event.stop()
        if self.running or self.result is not None:
            return
        if event.option_list.id == "scopes" and event.option_index is not None:
            self._fill_targets(event.option_index)
        else:
            self._armed = None
            self._preview()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        """Enter on a scope moves to its nodes; Enter twice on a node set runs the reset."""
        event.stop()
        if self.running or self.result is not None:
            return
        if event.option_list.id == "scopes":
            self.query_one("#targets", OptionList).focus()
            return
        index = event.option_index
        if self._armed != index:
            self._armed = index
            self._preview()
            return
        scope = self.choices[self.scope_index].scope
        nodes = self._targets[index][1]
        for widget in self.query(OptionList):
            widget.disabled = True
        self.query_one("#preview", Static).update(f"SELECT {scope.call}  on {_names(nodes)}  as {self.role}")
        self.say(f"running {scope.call} on {_names(nodes)}", fresh=True)
        self.launch(self._run(scope, nodes))
