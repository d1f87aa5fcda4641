"""The console app: one long-lived poll task posts snapshots; screens show them."""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, cast

from textual.binding import Binding
from textual.reactive import reactive
from textual.worker import Worker, WorkerState

from pgtop_ha.clock import Clock, system_clock
from pgtop_ha.crash import write_report
from pgtop_ha.engines.session import Session
from pgtop_ha.engines.timeline import Timeline
from pgtop_ha.models.event import Event
from pgtop_ha.models.sections import ConsoleSections, Mode
from pgtop_ha.models.snapshot import ClusterSnapshot
from pgtop_ha.models.source import Hurried, SnapshotSource
from pgtop_ha.ui.commands import ScreenCommands
from pgtop_ha.ui.driver import CalmApp
from pgtop_ha.ui.messages import SnapshotReady
from pgtop_ha.ui.themes import ConsoleTheme, load_theme

if TYPE_CHECKING:
    from textual.screen import Screen

    from pgtop_ha.actions import Actions
    from pgtop_ha.record.markers import MarkerInbox
    from pgtop_ha.record.recorder import Recorder

HISTORY = 30  # snapshots kept for sparklines, trends and rates
SETTLE_AFTER_S = 0.5  # from the first snapshot's frame to runtime.settle_heap (the collector back on)
SETTLE_LATEST_S = 10.0  # from mount: settled by then even without a snapshot
EVENTS = 500  # events kept for the Events pane
INTERVALS = (0.2, 0.5, 1.0, 2.0, 3.0, 5.0, 10.0, 15.0, 30.0, 60.0)


def import_main_screen(operator: bool) -> None:
    """Import the modules PgtopApp's main screen comes from (the console does it in a thread)."""
    # The same two modules _main_screen imports when the app mounts: ahead of it, they load while
    # the first cycle waits on the servers (console.run_console).
    if operator:
        import pgtop_ha.ui.operator.screen
    else:
        import pgtop_ha.ui.screens.monitor  # noqa: F401


class PgtopApp(CalmApp[None]):
    """pgtop-ha's console: Monitor screen when read-only, Operator screen when actions exist."""

    TITLE = "pgtop-ha"
    CSS_PATH = "app.tcss"
    # Ctrl+P: the screen's own keys by name (ui/commands.py), not Textual's system commands.
    COMMANDS = {ScreenCommands}
    BINDINGS = [Binding("q", "quit", "Quit", priority=False)]

    # repaint=False everywhere: widgets repaint what changed; an app-wide repaint costs a
    # full-screen render each second. always_update: skip pydantic's deep equality check.
    snapshot: reactive[ClusterSnapshot | None] = reactive(None, init=False, always_update=True, repaint=False)
    event_count: reactive[int] = reactive(0, init=False, repaint=False)  # events recorded so far
    paused: reactive[bool] = reactive(False, init=False, repaint=False)
    interval: reactive[float] = reactive(1.0, init=False, repaint=False)
    node_filter: reactive[str] = reactive("", init=False, repaint=False)
    source_error: reactive[str | None] = reactive(None, init=False, repaint=False)

    def __init__(
        self,
        sections: ConsoleSections,
        source: SnapshotSource,
        actions: object | None = None,
        clock: Clock = system_clock,
        mode: Mode | None = None,
        recorder: Recorder | None = None,
        markers: MarkerInbox | None = None,
        settle: Callable[[], None] | None = None,
    ) -> None:
        # NO_COLOR: Textual strips colour itself; the mono theme adds bold/reverse for states.
        name = "mono" if "NO_COLOR" in os.environ else sections.theme
        self.console_theme: ConsoleTheme = load_theme(name)  # ConfigError before any drawing
        super().__init__()
        self.sections = sections
        self.source = source
        self.actions = actions
        # Read-only is structural: no actions object, no operator screen. The badge follows it.
        self.read_only = actions is None
        default = "read-only" if self.read_only else "operator"
        self.mode_reason = mode.reason if mode is not None else default
        self.mode_why = mode.short if mode is not None else ""
        # Say why only when it is a surprise: an SSH session (or an env var) decided it.
        self.notice = self.mode_reason if mode is not None and "SSH" in mode.reason else None
        self.crash: BaseException | None = None
        self.crash_report: Path | None = None
        self.history: deque[ClusterSnapshot] = deque(maxlen=HISTORY)
        # One timeline for every event: snapshots' changes, checks, the stopwatch, markers, actions;
        # with --record FILE every cycle and event goes to the recording too.
        self.session = Session(
            clock=clock,
            judging=sections.judging,
            keep=EVENTS,
            recording=recorder,
            on_recording_failed=self._recording_failed,
        )
        self.received = 0  # snapshots received, shown or not (pause)
        self._poll: Worker[None] | None = None
        self.markers = markers  # the socket `pgtop-ha mark` stamps this console's timeline through
        # Called once the first snapshot is on screen: the console is built (runtime.settle_heap).
        self._settle = settle
        self.register_theme(self.console_theme.theme)
        self.theme = self.console_theme.theme.name
        self.set_reactive(PgtopApp.interval, sections.judging.interval)
        self._cadence_told = sections.judging.interval  # the cadence the source last heard of (hurry)

    def _settle_once(self) -> None:
        settle, self._settle = self._settle, None
        if settle is not None:
            settle()

    def _handle_exception(self, error: Exception) -> None:
        # Textual prints a full traceback and, from App.run(), the caller saw exit 0: keep the
        # traceback in a 0600 report file and let the command line print one line and exit 1.
        if self.crash is None:
            self.crash = error
            self.crash_report = write_report(error)
        super()._handle_exception(error)
        self._exit_renderables.clear()

    def on_mount(self) -> None:
        """Push the right screen and start the one long-lived poll task."""
        self.push_screen(self._main_screen())
        if self.notice:
            self.notify(self.notice, timeout=15, markup=False)
        self._poll = self.run_worker(self._poll_loop(), name="poll", group="poll", exit_on_error=False)
        # Settled anyway if no snapshot ever comes (a poll task that failed): the cyclic
        # collector, off since start-up (pgtop_ha/entry.py), must not stay off for hours.
        self.set_timer(SETTLE_LATEST_S, self._settle_once)
        if self.markers is not None:
            self.run_worker(self._listen_markers(self.markers), name="markers", exit_on_error=False)

    async def _listen_markers(self, inbox: MarkerInbox) -> None:
        try:
            await inbox.serve(self.mark)
        except Exception as exc:  # markers are extra: the console goes on without them
            self.notify(f"markers are off: {exc}", severity="warning", timeout=10, markup=False)

    def _main_screen(self) -> Screen[None]:
        if self.actions is None:
            from pgtop_ha.ui.screens.monitor import MonitorScreen

            return MonitorScreen.keyed()()
        # The operator screen (and with it the write path) is imported only when actions exist.
        from pgtop_ha.ui.operator.screen import OperatorScreen

        screen: Screen[None] = OperatorScreen.keyed()(cast("Actions", self.actions))
        return screen

    @property
    def clock(self) -> Clock:
        """What stamps events and paces the poll (the session's)."""
        return self.session.clock

    @clock.setter
    def clock(self, clock: Clock) -> None:
        self.session.clock = clock

    @property
    def timeline(self) -> Timeline:
        """The session's timeline: every event, the checks past their grace, the stopwatch."""
        return self.session.timeline

    @property
    def events(self) -> list[Event]:
        """The timeline's events (the newest EVENTS), in the order observed."""
        return self.session.events()

    def cadence(self) -> float:
        """The poll interval now: the chosen one when calm, faster while something is wrong."""
        return self.session.cadence()

    def _follow_cadence(self) -> None:
        # The cadence changes only here (a snapshot folded in) and with the interval key: the
        # poller sleeps its whole pause unless told, instead of asking cadence() ten times a second.
        now = self.cadence()
        if now < self._cadence_told - 1e-9 and isinstance(self.source, Hurried):
            self.source.hurry()
        self._cadence_told = now

    async def _poll_loop(self) -> None:
        await self.source.run(self._deliver, self.cadence)

    def _deliver(self, snapshot: ClusterSnapshot) -> None:
        # Called from the poll task: hand over by message, never touch widgets here.
        self.post_message(SnapshotReady(snapshot))

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """A poll task that fails is shown in the header, not as a traceback."""
        if event.worker is self._poll and event.state is WorkerState.ERROR:
            err = event.worker.error
            self.source_error = f"poller stopped: {type(err).__name__}: {err}"

    def on_snapshot_ready(self, message: SnapshotReady) -> None:
        """Record events and history; show the snapshot unless paused."""
        snap = message.snapshot
        new = self.session.observe(snap)  # added or updated (a flip back gets its duration)
        self._follow_cadence()
        self.history.append(snap)
        self.received += 1
        # Counted quietly: the snapshot below announces both, so the screen redraws once.
        self.set_reactive(PgtopApp.event_count, self.event_count + len(new))
        if not self.paused:
            self.snapshot = snap
        if self.received == 1:
            # A moment after the first full frame, not right after it: the collector's one pass
            # (~0.1 s holding the GIL) would hold up the frame's write and the layouts after it.
            self.call_after_refresh(self.set_timer, SETTLE_AFTER_S, self._settle_once)

    def _recording_failed(self, error: str) -> None:
        # Disk full, file removed: said once in the header; the console keeps watching.
        self.source_error = f"recording stopped: {error}"

    def mark(self, text: str, source: str = "marker") -> Event:
        """Stamp a marker (key M, `pgtop-ha mark`) on the timeline and in the recording."""
        event = self.session.mark(text, source)
        self.event_count += 1
        return event

    def record_event(self, event: Event) -> None:
        """Add an event from outside the poll (an operator action's result), stamped on arrival."""
        if event.kind == "action":
            # The result's own time is when the action started: "done" is now, when it arrives.
            self.session.action(event.text, "done", ok=event.severity == 0, node=event.node)
        else:
            self.session.add(event)
        self.event_count += 1  # the screen watches this and redraws the Events pane

    def record_action(self, text: str, node: str | None = None) -> Event:
        """An operator action being sent: an event stamped now (its result comes as "done")."""
        event = self.session.action(text, "sent", node=node)
        self.event_count += 1
        return event

    def watch_interval(self, interval: float) -> None:
        """A shorter interval chosen by key starts the next cycle now, not after the old pause."""
        self.session.interval = interval
        self._follow_cadence()

    def watch_paused(self, paused: bool) -> None:
        """When resumed, jump to the newest snapshot."""
        if not paused and self.history and self.snapshot is not self.history[-1]:
            self.snapshot = self.history[-1]

    def step_interval(self, direction: int) -> float:
        """Move the poll interval one step up (+1) or down (-1) the ladder; returns it."""
        current = self.interval
        if direction > 0:
            bigger = [i for i in INTERVALS if i > current + 1e-9]
            self.interval = bigger[0] if bigger else INTERVALS[-1]
        else:
            smaller = [i for i in INTERVALS if i < current - 1e-9]
            self.interval = smaller[-1] if smaller else INTERVALS[0]
        return self.interval

    async def on_unmount(self) -> None:
        """Stop polling and close the source's connections."""
        if self._poll is not None:
            self._poll.cancel()
        await self.source.aclose()
