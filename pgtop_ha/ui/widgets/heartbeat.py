"""The header line: cluster, mode badge, time of the last snapshot, per-node staleness."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from rich.style import Style
from rich.text import Text
from textual.strip import Strip
from textual.widget import Widget

from pgtop_ha.engines.timeline import CALM_AFTER_S
from pgtop_ha.judge.view import node_freshness, stalled_after
from pgtop_ha.models.derive import age_s, member_names
from pgtop_ha.models.snapshot import ClusterSnapshot
from pgtop_ha.models.thresholds import Level, Thresholds
from pgtop_ha.ui.format import NAME_ROOM, age, fit_name, shown


def heartbeat_text(
    *,
    snapshot: ClusterSnapshot | None,
    now: datetime,
    thresholds: Thresholds,
    read_only: bool,
    paused: bool,
    interval: float,
    node_filter: str,
    note: str,
    styles: Mapping[str, Style],
    mode_why: str = "",
    cadence: float | None = None,
    width: int | None = None,
    changed_at: datetime | None = None,
) -> Text:
    """The header as rich text; ``styles`` maps ok/warn/crit/badge names to theme styles.

    With ``width``, what the line can spare gives way first (``_narrower``: the mode's reason, a
    long cluster name, the brand, members' names, then fresh members counted, not named), and
    the usual cadence ("every 1s") is left out rather than cut when the rest fills it.
    """

    # Polling faster than chosen: something is wrong (engines/timeline.py cadence()). At 80 columns
    # it was cut to "every 0.25s (…"; its shortest form is kept room for, as the nodes are.
    fast_forms = _fast_forms(cadence, interval) if cadence is not None and cadence < interval - 1e-9 else ()
    reserve = len(fast_forms[-1]) if fast_forms else 0
    # No snapshot for longer than a few cycles: the poll itself stopped ("no data for" below).
    late = (age_s(now, snapshot.taken_at) or 0.0) if snapshot is not None else 0.0
    stalled = late > stalled_after(interval, thresholds)
    marks = (
        [(n, *node_freshness(snapshot, n, now, thresholds, stalled=stalled)) for n in member_names(snapshot)]
        if snapshot is not None
        else []
    )
    fresh = sum(level is Level.OK for _, level, _ in marks)
    # The seconds of the last snapshot changed the header, and so drew a frame, every second on
    # a calm screen.
    # While every node is fresh (a ✔ is itself "read within stale_s") and nothing hurries the
    # polls, the minute says as much; the seconds come back with the first stale or failed read,
    # the fast cadence or a pause, the moments a DBA sets the screen against a watch. They stay
    # for CALM_AFTER_S after the last event (``changed_at``): a primary PostgreSQL restarted in
    # place is back in 2 s, and the half minute after it is when the DBA reads the screen closest.
    settling = changed_at is not None and (age_s(now, changed_at) or 0.0) < CALM_AFTER_S
    steady = bool(marks) and fresh == len(marks) and not fast_forms and not paused and not settling

    # Names, the filter and the note (an error's text) come from servers or users: each goes
    # through shown() and is appended as plain text, never parsed as markup.
    def lead(fit: _Fit) -> Text:
        t = Text(no_wrap=True, overflow="ellipsis")
        if fit.brand:
            t.append(" pgtop-ha ", styles.get("title", Style(bold=True)))
        else:
            t.append(" ")
        if snapshot is not None and snapshot.cluster.name:
            t.append(f"{shown(snapshot.cluster.name, fit.cluster)} ")
        why = f"·{mode_why}" if fit.why and mode_why and mode_why != "default" else ""
        if read_only:
            t.append(f" READ-ONLY{why} ", styles.get("read_only"))
        else:
            t.append(f" OPERATOR{why} ", styles.get("operator"))
        if paused:
            t.append(" ")
            t.append(" ⏸ PAUSED ", styles.get("paused"))
        if snapshot is None:
            t.append("  waiting for the first snapshot…")
        else:
            when = snapshot.taken_at.astimezone()  # local time: what the DBA's watch says
            t.append(f"  last {when:%H:%M}" if steady else f"  last {when:%H:%M:%S}")
            if stalled:
                t.append(f" (no data for {age(late)})", styles.get("crit"))
        return t

    t = lead(_Fit())
    if snapshot is not None:
        nodes = _freshness(marks, styles, _Fit())
        if width is not None and t.cell_len + nodes.cell_len + reserve > width:
            # At 80 columns a node frozen in a failure test pushed the last node out ("node3…"),
            # and a cluster's own names ("pg-prod-eu-central-1a-01") every node but the first.
            # Each node's freshness is what the line is for: what it can spare goes first.
            t, nodes = _narrower(
                lambda f: (lead(f), _freshness(marks, styles, f)),
                width - reserve,
                snapshot.cluster.name or "",
                [n for n, _, _ in marks],
                fresh,
            )
        t.append_text(nodes)
    if fast_forms:
        room = None if width is None else width - t.cell_len
        said = next((f for f in fast_forms if room is None or len(f) <= room), fast_forms[-1])
        t.append(said, styles.get("warn"))
    if node_filter:
        t.append(f"  filter: {shown(node_filter, 64)}", styles.get("warn"))
    if note:
        t.append(f"  {shown(note)}")
    # The chosen interval is the least of the header: at 80 columns with three nodes it was
    # cut to "ever…"; an ellipsis would say something goes on that is not worth the room.
    usual = f"  every {interval:g}s"
    if not fast_forms and (width is None or t.cell_len + len(usual) <= width):
        t.append(usual)
    return t


def _fast_forms(cadence: float, interval: float) -> tuple[str, ...]:
    """The fast cadence as said, longest first: what the header's end can hold is written."""
    return (
        f"  every {cadence:g}s (fast; idle {interval:g}s)",
        f"  every {cadence:g}s (fast)",
        f"  {cadence:g}s fast",
    )


# At 80 columns: the cluster's name cut no shorter than this, a member's no shorter than NAME_MIN.
CLUSTER_ROOM = 16
NAME_MIN = 3
# Fresh nodes are counted rather than named shorter than this ("…1a-01" reads; "…e1" does not).
NAME_READABLE = 6


@dataclass(frozen=True)
class _Fit:
    """How much of the header's lead and nodes is written: all of it, or what 80 columns hold."""

    compact: bool = False  # nodes with single spaces and "▲5s"
    why: bool = True  # how the mode was chosen ("READ-ONLY·flag")
    cluster: int = 64  # the cluster's name, in characters
    brand: bool = True  # " pgtop-ha "
    names: int = 64  # each member's name, in characters (format.fit_name)
    counted: bool = False  # fresh nodes as one count ("+4 ✔"), the others by name


def _narrower(
    build: Callable[[_Fit], tuple[Text, Text]], width: int, cluster: str, names: Sequence[str], fresh: int
) -> tuple[Text, Text]:
    """The header's lead and nodes with the least left out that fits ``width``, in that order."""
    fit = _Fit(compact=True)
    lead, nodes = build(fit)
    longest = max((len(shown(n, 64)) for n in names), default=0)

    def cut_names(f: _Fit, over: int, readable: bool = False) -> _Fit:
        named = len(names) - fresh if f.counted else len(names)
        room = min(f.names, longest) - -(-over // max(1, named))
        if readable and room < NAME_READABLE:
            return f  # not cut to unreadable while fresh nodes can be counted instead
        return replace(f, names=_name_room(room))

    steps: tuple[Callable[[_Fit, int], _Fit], ...] = (
        lambda f, over: replace(f, why=False),
        lambda f, over: replace(f, cluster=max(CLUSTER_ROOM, len(shown(cluster, f.cluster)) - over)),
        lambda f, over: replace(f, brand=False),
        lambda f, over: cut_names(f, over, readable=True),
        # Five or seven members (two data centres and a witness) did not fit 80 columns even so:
        # the last nodes and the fast cadence were cut off in the very minute they matter. A node
        # that is fresh needs no name here (the overview lists it); one that is not keeps its own.
        lambda f, over: replace(f, counted=True, names=64) if fresh else f,
        cut_names,
    )
    for step in steps:
        over = lead.cell_len + nodes.cell_len - width
        if over <= 0:
            break
        fit = step(fit, over)
        lead, nodes = build(fit)
    return lead, nodes


def _name_room(room: int) -> int:
    # Names cut below NAME_MIN cannot be told apart, and the line is cut at its end anyway (every
    # node stale: "✖20s" each): then they are cut only as far as the overview cuts them.
    return room if room >= NAME_MIN else NAME_ROOM


def _freshness(
    marks: Sequence[tuple[str, Level, float | None]], styles: Mapping[str, Style], fit: _Fit
) -> Text:
    gap, space = (" ", "") if fit.compact else ("  ", " ")
    t = Text()
    names = [name for name, _, _ in marks]
    fresh = 0
    for name, level, since in marks:
        if fit.counted and level is Level.OK:
            fresh += 1
            continue
        label = fit_name(name, names, fit.names)
        t.append(gap)
        if level is Level.OK:
            t.append(f"{label} ✔", styles.get("ok"))
        else:
            t.append(
                f"{label} {level.symbol}{space}{age(since) if since is not None else 'never'}",
                styles.get(level.name.lower()),
            )
    if fresh:
        t.append(gap)
        t.append(f"{'all ' if fresh == len(names) else '+'}{fresh} ✔", styles.get("ok"))
    return t


class OneLine(Widget):
    """A one-row line of text; repainted only when its text changes, never re-laid out."""

    def __init__(self, *, id: str) -> None:
        super().__init__(id=id)
        self._text = Text()
        self.repaints = 0
        self._strip: tuple[int, Strip] | None = None  # (width, the line drawn at that width)

    def render(self) -> Text:
        """The current line."""
        return self._text

    def render_line(self, y: int) -> Strip:
        """The line drawn straight from the text's own segments, kept until the text changes."""
        # Through render(), Textual turns the Text into its Content and lays it out again on
        # every repaint: 0.6 ms of the 1.5 ms frame the header's clock costs each second at
        # 160 columns. One line of styled spans needs only cutting to the width.
        width = self.size.width
        text = self._text
        if "\n" in text.plain:
            return super().render_line(y)  # not one line (the banner's two): Textual's way
        if y != 0:
            return Strip.blank(width, self.rich_style)
        if self._strip is None or self._strip[0] != width:
            if text.cell_len > width:
                # Cut with an ellipsis, as the text asks: the reader sees the line goes on.
                text = text.copy()
                text.truncate(width, overflow="ellipsis")
            # Textual pads the rest of the width itself, in the widget's own style.
            self._strip = (width, Strip(text.render(self.app.console)).apply_style(self.rich_style))
        return self._strip[1]

    def notify_style_update(self) -> None:
        """A new theme or style: draw the line again with it."""
        self._strip = None
        super().notify_style_update()

    def show(self, text: Text) -> bool:
        """Show ``text`` unless it is what is shown already; True when it repainted."""
        if text == self._text:
            return False
        self._text = text
        self._strip = None
        self.repaints += 1
        # Fixed size (one row, full width): a plain repaint, not Static.update's layout pass.
        self.refresh()
        return True


class Heartbeat(OneLine):
    """The header line at the top of every screen."""

    def __init__(self) -> None:
        super().__init__(id="heartbeat")
