"""The footer is rebuilt only when the keys it shows change (issue 10: pane switches ≤ 200 ms)."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widget import Widget

from pgtop_ha.ui.widgets.footer import Footer


class Box(Widget, can_focus=True):
    """A focusable widget."""

    def __init__(self, box_id: str) -> None:
        super().__init__(id=box_id)

    def action_noop(self) -> None:
        """Nothing (the key only has to show)."""


class ExtraBox(Box):
    """A Box with one more key of its own."""

    BINDINGS = [Binding("x", "noop", "Extra")]


class FooterApp(App[None]):
    BINDINGS = [Binding("p", "noop", "Pause")]

    def compose(self) -> ComposeResult:
        yield Box("a")
        yield Box("b")
        yield ExtraBox("c")
        yield Footer()

    def action_noop(self) -> None:
        """Nothing."""


def footer_text(app: FooterApp) -> str:
    return " ".join(str(w.render()) for w in app.query_one(Footer).children)


async def test_focus_moving_between_widgets_with_the_same_keys_keeps_the_footer() -> None:
    app = FooterApp()
    async with app.run_test(size=(80, 10)) as pilot:
        footer = app.query_one(Footer)
        app.query_one("#a").focus()
        await pilot.pause()
        before = footer.rebuilds
        for target in ("#b", "#a", "#b"):
            app.query_one(target).focus()
            await pilot.pause()
        assert footer.rebuilds == before  # same keys: no rebuild
        assert "Pause" in footer_text(app) and "Extra" not in footer_text(app)
        app.query_one("#c").focus()  # a key more: rebuilt, and it shows
        await pilot.pause()
        assert footer.rebuilds == before + 1
        assert "Extra" in footer_text(app)
        app.query_one("#a").focus()
        await pilot.pause()
        assert footer.rebuilds == before + 2 and "Extra" not in footer_text(app)
