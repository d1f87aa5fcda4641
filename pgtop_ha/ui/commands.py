"""The command palette (Ctrl+P): every key of the screen it opened over, found by name.

Commands come from the screen's own bindings, so they are exactly the keys that work there:
pane views on the monitor screen and, only on the operator screen, the operator's actions. A
read-only console has no operator screen, hence no action command (nothing to hide or filter).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from textual.binding import Binding
from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.dom import DOMNode

Command = tuple[str, str, Callable[[], object]]

# App-level keys the palette need not repeat (quit stays a key: q).
_SKIP = {"quit", "command_palette"}


def _label(binding: Binding) -> str:
    key = binding.key_display or binding.key
    return f"{binding.description or binding.action} ({key})"


class ScreenCommands(Provider):
    """Commands for the bindings of the screen under the palette (views, pause, sort, actions)."""

    def _commands(self) -> list[Command]:
        out: list[Command] = []
        seen: set[str] = set()
        for key, active in self.screen.active_bindings.items():
            binding, node = active.binding, active.node
            if binding.action in _SKIP or binding.action in seen or not active.enabled:
                continue
            seen.add(binding.action)
            group = binding.group.description if binding.group else ""
            out.append((_label(binding), group or f"key {key}", partial(self._run, binding.action, node)))
        return sorted(out, key=lambda c: c[0])

    async def _run(self, action: str, node: DOMNode) -> None:
        await self.app.run_action(action, node)

    async def discover(self) -> Hits:
        """Every command, before anything is typed."""
        for title, help_text, callback in self._commands():
            yield DiscoveryHit(title, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        """Commands whose name matches ``query`` (fuzzy), best first."""
        matcher = self.matcher(query)
        for title, help_text, callback in self._commands():
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), callback, help=help_text)
