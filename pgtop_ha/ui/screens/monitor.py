"""The monitor screen: every pane, the layouts (overview, single pane, dashboard) and the keys."""

from __future__ import annotations

import time
import types
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Self, cast

from rich.style import Style
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Grid
from textual.reactive import reactive
from textual.screen import Screen

from pgtop_ha.engines.stopwatch import past_outages
from pgtop_ha.judge.view import banner_notes
from pgtop_ha.models.derive import member_names
from pgtop_ha.models.needs import Needs
from pgtop_ha.models.source import NeedsToggle
from pgtop_ha.ui.compositor import BandCompositor
from pgtop_ha.ui.panes import registry
from pgtop_ha.ui.panes.base import Context, PaneSpec
from pgtop_ha.ui.screens.filter import FilterScreen
from pgtop_ha.ui.screens.help import HelpScreen
from pgtop_ha.ui.screens.marker import MarkerScreen
from pgtop_ha.ui.themes import level_styles, resolve
from pgtop_ha.ui.widgets.banner import Banner, banner_text
from pgtop_ha.ui.widgets.footer import Footer
from pgtop_ha.ui.widgets.heartbeat import Heartbeat, heartbeat_text
from pgtop_ha.ui.widgets.keyed_table import KeyedTable
from pgtop_ha.ui.widgets.pane import Pane

if TYPE_CHECKING:
    from pgtop_ha.ui.app import PgtopApp

WIDE = (160, 48)  # at least this many columns and rows: the dashboard
DASHBOARD_COLUMNS = 2
HEADER_TICK_S = 1.0  # the header redraws at least this often, snapshots or not


def is_wide(width: int, height: int) -> bool:
    """Whether a terminal this size shows the dashboard (at least WIDE)."""
    return width >= WIDE[0] and height >= WIDE[1]


_VIEW = Binding.Group("Panes", compact=True)
_OVERVIEW = Binding("0", "view('overview')", "Overview", group=_VIEW)


def pane_bindings(panes: Sequence[PaneSpec]) -> list[Binding]:
    """The view keys: 0 for the overview, then each keyed pane's own key in key order."""
    keyed = sorted(((p.key, p) for p in panes if p.key), key=lambda kp: kp[0])
    seen: dict[str, str] = {"0": "the overview"}
    for key, pane in keyed:
        if key in seen:
            raise ValueError(f"pane {pane.id!r}: key {key!r} is {seen[key]}'s already; pick another")
        seen[key] = pane.id
    return [
        _OVERVIEW,
        *(Binding(key, f"view('{p.id}')", p.title, group=_VIEW, show=p.place.dashboard) for key, p in keyed),
    ]


@dataclass(frozen=True)
class GridPlan:
    """How #body lays out one view: its grid, the panes shown, their spans and capped heights."""

    columns: int
    rows: str
    shown: tuple[str, ...]
    spans: tuple[tuple[str, int], ...] = ()
    capped: tuple[tuple[str, int], ...] = ()  # (pane, max height): as tall as its rows, up to it


def grid_plan(panes: Sequence[PaneSpec], view: str, wide: bool) -> GridPlan:
    """The layout of ``view`` from the panes' placement hints (one pane: the whole body)."""
    if view != "overview":
        return GridPlan(1, "1fr", (view,))
    columns = DASHBOARD_COLUMNS if wide else 1
    placed = [p for p in panes if (p.place.dashboard if wide else p.place.overview)]
    rows: list[bool] = []  # per grid row: every pane in it is as tall as its rows
    used = columns
    spans = []
    for pane in placed:
        span = max(1, min(pane.place.span, columns))
        if used + span > columns:
            rows.append(True)
            used = 0
        used += span
        rows[-1] = rows[-1] and pane.place.max_height is not None
        if span > 1:
            spans.append((pane.id, span))
    return GridPlan(
        columns,
        " ".join("auto" if auto else "1fr" for auto in rows) or "1fr",
        tuple(p.id for p in placed),
        tuple(spans),
        tuple((p.id, p.place.max_height) for p in placed if p.place.max_height is not None),
    )


SCREEN_KEYS = [
    Binding("escape", "back", "Back", show=False),
    Binding("p", "pause", "Pause"),
    Binding("plus", "slower", "Slower", key_display="+"),
    Binding("minus", "faster", "Faster", key_display="-"),
    Binding("slash", "filter", "Filter", key_display="/"),
    Binding("o", "sort", "Sort"),
    Binding("O", "reverse_sort", "Reverse", show=False),
    Binding("M", "mark", "Mark", show=False),  # in the help (the footer is full at 80 columns)
    Binding("question_mark", "help", "Help", key_display="?"),
]


def declared_bindings(cls: type) -> list[Binding]:
    """The Bindings a class and its bases declare, bases first, as Textual merges them."""
    return [
        b
        for klass in reversed(cls.__mro__)
        for b in vars(klass).get("BINDINGS", ())
        if isinstance(b, Binding)
    ]


def screen_bindings(panes: Sequence[PaneSpec], own: Sequence[Binding] = SCREEN_KEYS) -> list[Binding]:
    """The view keys (0 and each pane's), then the screen's own; a pane key they share is refused."""
    views = pane_bindings(panes)
    keys = {b.key for b in own}
    clash = [b.key for b in views if b.key in keys]
    if clash:
        raise ValueError(f"pane keys {clash} are also screen keys; give the panes other keys")
    return [*views, *own]


class MonitorScreen(Screen[None]):
    """All panes and the read-only keys; OperatorScreen adds the write keys on top."""

    # The view keys come from the registry when the screen is made: see keyed().
    BINDINGS: ClassVar[list[BindingType]] = list(SCREEN_KEYS)

    view: reactive[str] = reactive("overview", init=False, repaint=False)

    @classmethod
    def keyed(cls) -> type[Self]:
        """This screen class with the registry's view keys first, then its own keys."""
        keys = screen_bindings(registry.PANES, declared_bindings(cls))
        return types.new_class(
            cls.__name__,
            (cls,),
            {"inherit_bindings": False},
            lambda ns: ns.update(BINDINGS=keys, __module__=cls.__module__),
        )

    def __init__(self) -> None:
        super().__init__()
        self._compositor = BandCompositor()  # a frame draws only the rows that changed
        self.registry: tuple[PaneSpec, ...] = tuple(registry.PANES)
        self.panes: dict[str, Pane] = {}
        self.note = ""
        self.wide = False
        self.dashboard = False  # the overview at ≥ WIDE: every dashboard pane at once
        self._plan: GridPlan | None = None
        self._styles_gen = 0
        self._header_styles: dict[str, Style] = {}
        self._needs: Needs | None = None
        self._header_at = 0.0  # time.monotonic() of the last header refresh

    @property
    def papp(self) -> PgtopApp:
        """The app, typed."""
        return cast("PgtopApp", self.app)

    def compose(self) -> ComposeResult:
        """Header, the grid of panes, footer."""
        yield Heartbeat()
        yield Banner()  # disagreements and the failover stopwatch; hidden when there are none
        first = grid_plan(self.registry, self.view, is_wide(*self.app.size))
        with Grid(id="body"):
            for spec in self.registry:
                pane = Pane(spec, built=spec.id in first.shown)  # the rest when first shown
                self.panes[spec.id] = pane
                yield pane
        yield Footer(show_command_palette=False)  # the footer is full at 80 columns; Ctrl+P is in ?

    def on_mount(self) -> None:
        """Follow the app's state; tick the header so staleness shows even without snapshots."""
        app = self.papp
        self.watch(app, "snapshot", self._data_changed, init=False)
        self.watch(app, "node_filter", self._data_changed, init=False)
        self.watch(app, "event_count", self._data_changed, init=False)
        self.watch(app, "paused", lambda _: self.refresh_header(), init=False)
        self.watch(app, "interval", lambda _: self.refresh_header(), init=False)
        self.watch(app, "source_error", lambda _: self.refresh_header(), init=False)
        self.watch(app, "theme", lambda _: self.restyle(), init=True)
        self.set_interval(HEADER_TICK_S, self._tick_header)
        self._layout(self.size.width, self.size.height)
        self.refresh_view()

    def _data_changed(self, _: object) -> None:
        self.refresh_view()

    def on_pane_built(self, message: Pane.Built) -> None:
        """A pane shown for the first time has its tables: fill them, and focus if it is the view's."""
        message.stop()
        self.refresh_view()
        if message.pane_id == self.main_pane():
            self._focus_main()  # the focus asked for at the switch found no mounted table

    # -- layout -----------------------------------------------------------------------------

    def on_resize(self, event: events.Resize) -> None:
        """Switch between the overview and the dashboard as the terminal changes size."""
        self._layout(event.size.width, event.size.height)

    def _layout(self, width: int, height: int) -> None:
        wide = is_wide(width, height)
        changed = wide != self.wide
        self.wide = wide
        self.dashboard = wide and self.view == "overview"
        self._apply(grid_plan(self.registry, self.view, wide))
        if changed:
            self.refresh_view()
            # The overview and the dashboard show different panes: keep the focus on screen.
            focused = self.focused
            if focused is None or not focused.parent or not focused.parent.display:
                self._focus_main()

    def _apply(self, plan: GridPlan) -> None:
        # Inline styles, not classes: a class change restyles every widget under its node;
        # these touch only the panes and the grid.
        if plan == self._plan:
            return
        self._plan = plan
        body = self.query_one("#body", Grid)
        body.styles.grid_size_columns = plan.columns
        body.styles.grid_columns = " ".join(["1fr"] * plan.columns)
        body.styles.grid_rows = plan.rows
        spans, capped = dict(plan.spans), dict(plan.capped)
        for pane_id, pane in self.panes.items():
            pane.display = pane_id in plan.shown
            if pane.display:
                pane.build()
            pane.styles.column_span = spans.get(pane_id, 1)
            pane.styles.height = "auto" if pane_id in capped else None  # None: the CSS's 1fr
            pane.styles.max_height = capped.get(pane_id)
        self._follow_needs(plan.shown)

    def visible_panes(self) -> list[str]:
        """The panes on screen now: only these do any work."""
        return list(grid_plan(self.registry, self.view, self.wide).shown)

    def watch_view(self, view: str) -> None:
        """Show the chosen pane (or the overview) and focus its first table."""
        self._layout(self.size.width, self.size.height)
        self.refresh_view()
        self._focus_main()

    def _focus_main(self) -> None:
        table = self._browsable(self.main_pane())
        if table is not None:
            table.focus()

    def main_pane(self) -> str:
        """The pane the view is about: the chosen one, or the first on screen (overview, dashboard)."""
        if self.view != "overview":
            return self.view
        return next(iter(self.visible_panes()), self.registry[0].id)

    # -- data -------------------------------------------------------------------------------

    def context(self) -> Context:
        """What rows() needs besides the snapshot."""
        app = self.papp
        snap = app.snapshot
        # Identity, never ==: pydantic equality would compare whole snapshots.
        history = list(app.history)
        at = next((i for i, h in enumerate(history) if h is snap), None)
        if at is not None:
            history = history[:at]  # paused: only what came before the shown snapshot
        return Context(
            thresholds=app.session.thresholds,
            pools=app.session.pools,
            now=app.clock(),
            interval=app.interval,
            history=tuple(history),
            events=tuple(app.events),
            checks=tuple(app.timeline.checks()),
            outages=past_outages(app.timeline.failovers()),
            judgement=None if snap is None else app.session.judged(snap),
        )

    def refresh_view(self) -> int:
        """Update the visible panes from the app's snapshot; hidden panes are left alone."""
        self.refresh_header()
        snap = self.papp.snapshot
        if snap is None or not self.is_attached:
            return 0
        ctx = self.context()
        version = (self.papp.event_count, self.papp.node_filter, self._styles_gen)
        written = 0
        for pane_id in self.visible_panes():
            written += self.panes[pane_id].show(snap, ctx, self.papp.node_filter, version)
        return written

    def _follow_needs(self, shown: Sequence[str]) -> None:
        # Optional reads (process memory: ~1 ms CPU per smaps_rollup, about half the poller's
        # CPU) serve one pane each: ask for them only while such a pane is on screen. Called when
        # the panes on screen change (a new grid plan), not on every snapshot.
        source = self.papp.source
        wanted: Needs = frozenset().union(*(p.needs for p in self.registry if p.id in shown))
        if len(shown) == 1:
            wanted |= next((p.focus_needs for p in self.registry if p.id == shown[0]), frozenset())
        if wanted != self._needs and isinstance(source, NeedsToggle):
            self._needs = wanted
            source.set_needs(wanted)

    def _tick_header(self) -> None:
        # Each snapshot redraws the header already; the tick is for when they stop coming (or
        # come slower than it), so staleness still shows. Not both each second.
        if time.monotonic() - self._header_at >= HEADER_TICK_S:
            self.refresh_header()

    def refresh_header(self) -> None:
        """Recompute the header line; it repaints only when its text changed."""
        if not self.is_attached:
            return
        self._header_at = time.monotonic()
        app = self.papp
        note = self.header_note()
        now = app.clock()
        lead = self.header_lead()
        text = heartbeat_text(
            snapshot=app.snapshot,
            now=now,
            thresholds=app.session.thresholds,
            read_only=app.read_only,
            paused=app.paused,
            interval=app.interval,
            node_filter=app.node_filter,
            note=note,
            styles=self._header_styles,
            mode_why=app.mode_why,
            cadence=app.cadence(),
            width=self.size.width - lead.cell_len,
            changed_at=app.timeline.changed_at,
        )
        self.query_one(Heartbeat).show(lead + text)
        timeline = app.timeline
        failovers = timeline.failovers()
        silence = timeline.leader_silence()
        timed = bool(failovers) or silence is not None
        banner = banner_text(
            timeline.checks(),
            failovers[-1] if failovers else None,
            now,
            self._header_styles,
            names=member_names(app.snapshot) if timed and app.snapshot is not None else (),
            width=self.size.width,
            silence=silence,
            notes=banner_notes(app.snapshot) if app.snapshot is not None else (),
        )
        self.query_one(Banner).show(banner)

    def header_lead(self) -> Text:
        """What the header starts with (nothing live; the replay's state and recorded time)."""
        return Text()

    def header_note(self) -> str:
        """What the header says after the nodes (a poller error, a sort; the replay's position)."""
        return self.papp.source_error or self.note

    def restyle(self) -> None:
        """Resolve the theme's state and badge styles and redraw every table with them."""
        app = self.papp
        variables = dict(app.theme_variables)
        ct = app.console_theme
        levels = level_styles(ct, variables)
        self._header_styles = {
            **{lv.name.lower(): style for lv, style in levels.items()},
            "title": resolve("bold $accent", variables),
            **{k: resolve(v, variables) for k, v in ct.badges.items()},
        }
        self._styles_gen += 1
        for pane in self.panes.values():
            pane.use_level_styles(levels)
        self.refresh_view()

    # -- actions ----------------------------------------------------------------------------

    def action_view(self, view: str) -> None:
        """Show one pane (or the overview)."""
        self.view = view

    def action_back(self) -> None:
        """Back to the overview; a second Esc clears the node filter."""
        if self.view != "overview":
            self.view = "overview"
        elif self.papp.node_filter:
            self.papp.node_filter = ""

    def action_pause(self) -> None:
        """Freeze or unfreeze the display."""
        self.papp.paused = not self.papp.paused

    def action_slower(self) -> None:
        """Poll less often."""
        self.papp.step_interval(+1)

    def action_faster(self) -> None:
        """Poll more often."""
        self.papp.step_interval(-1)

    def action_filter(self) -> None:
        """Ask for a node filter."""

        def done(value: str | None) -> None:
            if value is not None:
                self.papp.node_filter = value

        self.app.push_screen(FilterScreen(self.papp.node_filter), done)

    def action_mark(self) -> None:
        """Ask for a marker and stamp it on the timeline (and in the recording, if any)."""

        def done(text: str | None) -> None:
            if text:
                self.papp.mark(text, "key M")

        self.app.push_screen(MarkerScreen(), done)

    def action_help(self) -> None:
        """Show the keys."""
        self.app.push_screen(HelpScreen(self.registry, self.help_extra(), self.papp.mode_reason))

    def help_extra(self) -> str:
        """More help lines (the operator screen lists its keys here)."""
        return ""

    def _table(self) -> KeyedTable | None:
        focused = self.focused
        if isinstance(focused, KeyedTable):
            return focused
        return self._browsable(self.main_pane())

    def _browsable(self, pane_id: str) -> KeyedTable | None:
        """The pane's first table with a row cursor (the overview's first is its problems)."""
        pane = self.panes.get(pane_id)
        tables = list(pane.tables.values()) if pane else []
        return next((t for t in tables if t.show_cursor), tables[0] if tables else None)

    def action_sort(self) -> None:
        """Sort the focused table by its next column."""
        table = self._table()
        if table is not None:
            self.note = table.cycle_sort()
            self.refresh_header()

    def action_reverse_sort(self) -> None:
        """Reverse the focused table's sort."""
        table = self._table()
        if table is not None:
            self.note = table.reverse_sort()
            self.refresh_header()

    def all_tables(self) -> Iterable[KeyedTable]:
        """Every keyed table of the screen (tests, benchmarks)."""
        for pane in self.panes.values():
            yield from pane.tables.values()
