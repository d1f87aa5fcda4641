"""The header's one-line widget draws its text's own segments: same cells as Textual, cut with '…'."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import datetime, timedelta

from rich.style import Style
from rich.text import Text
from textual.app import App, ComposeResult
from textual.pilot import Pilot
from textual.strip import Strip
from textual.widget import Widget

from pgtop_ha.engines.timeline import CALM_AFTER_S
from pgtop_ha.judge.sources import node_freshness
from pgtop_ha.models.snapshot import ClusterSnapshot
from pgtop_ha.models.thresholds import Level, Thresholds
from pgtop_ha.ui.widgets.heartbeat import OneLine, heartbeat_text
from tests.ui import fixtures as fx

Cell = tuple[str, Style | None]


class OneLineApp(App[None]):
    """One header line on a screen of its own."""

    CSS = "#line { height: 1; background: $panel; color: $foreground; }"

    def compose(self) -> ComposeResult:
        yield OneLine(id="line")


def cells(line: OneLine, draw: Callable[[OneLine, int], Strip] = OneLine.render_line) -> list[Cell]:
    """The line as (character, style) pairs, whatever the segments' boundaries."""
    # Textual adds mouse offsets (meta) to its styles; what the terminal shows is the rest.
    return [
        (ch, seg.style.clear_meta_and_links() if seg.style else None)
        for seg in draw(line, 0)
        for ch in seg.text
    ]


def header_text() -> Text:
    text = Text(no_wrap=True, overflow="ellipsis")
    text.append(" pgtop-ha ", Style(bold=True))
    text.append(" READ-ONLY ", Style(reverse=True))
    text.append("  last 07:15:17  node1 ✔", Style(color="#5faf5f"))
    return text


def drawn(line: OneLine) -> str:
    """The line's characters."""
    return "".join(ch for ch, _ in cells(line))


@asynccontextmanager
async def showing(width: int) -> AsyncIterator[tuple[OneLineApp, Pilot[None], OneLine]]:
    """An app ``width`` columns wide whose line shows header_text()."""
    app = OneLineApp()
    async with app.run_test(size=(width, 3)) as pilot:
        line = app.query_one(OneLine)
        assert line.show(header_text())  # new text: repainted
        await pilot.pause()
        yield app, pilot, line


async def test_a_line_that_fits_is_drawn_as_textual_draws_it() -> None:
    async with showing(60) as (_, _, line):
        assert cells(line) == cells(line, Widget.render_line)
        assert drawn(line) == header_text().plain


async def test_a_line_wider_than_the_screen_ends_in_an_ellipsis() -> None:
    async with showing(20) as (_, _, line):
        assert drawn(line) == header_text().plain[:19] + "…"


async def test_new_text_and_a_new_theme_are_drawn_again() -> None:
    async with showing(60) as (app, pilot, line):
        before = cells(line)
        assert not line.show(header_text())  # the same text: no repaint
        line.show(Text("  last 07:15:18"))
        await pilot.pause()
        assert drawn(line) == "  last 07:15:18"
        shown = cells(line)
        app.theme = "textual-light" if app.theme != "textual-light" else "nord"
        await pilot.pause()
        assert cells(line) != shown  # the widget's colours came with the theme
        assert [ch for ch, _ in cells(line)] == [ch for ch, _ in shown]
        assert before != shown


def _header(
    snapshot: ClusterSnapshot,
    now: datetime,
    width: int | None,
    cadence: float = 1.0,
    paused: bool = False,
    changed_at: datetime | None = None,
) -> str:
    """The read-only header's text at ``width``, polling every second."""
    return heartbeat_text(
        snapshot=snapshot,
        now=now,
        thresholds=fx.settings().thresholds,
        read_only=True,
        paused=paused,
        interval=1.0,
        node_filter="",
        note="",
        styles={},
        mode_why="flag",
        cadence=cadence,
        width=width,
        changed_at=changed_at,
    ).plain


def test_the_header_gives_the_minute_while_calm_and_the_seconds_once_anything_is_not() -> None:
    # The seconds changed the header, and so drew a frame, every second on a calm screen: an
    # eighth of the quiet console's CPU. Every node fresh and the usual cadence: the minute.
    healthy = fx.healthy()
    stamp = f"last {healthy.taken_at.astimezone():%H:%M}"
    calm = _header(healthy, healthy.taken_at, 80)
    assert f"{stamp}  node1 ✔" in calm, calm
    assert _header(healthy, healthy.taken_at + timedelta(seconds=4), 80) == calm  # ✔ is "read within 5 s"
    # The moments a DBA sets the screen against a watch have the seconds back.
    seconds = f"{stamp}:{healthy.taken_at.astimezone():%S}"
    assert seconds in _header(healthy, healthy.taken_at + timedelta(seconds=6), 80)  # stale: ▲
    assert seconds in _header(healthy, healthy.taken_at, 80, cadence=0.25)  # polls hurried
    assert seconds in _header(healthy, healthy.taken_at, 80, paused=True)  # a frozen screen
    killed = fx.kill_primary()
    assert f"last {killed.taken_at.astimezone():%H:%M:%S}" in _header(
        killed, killed.taken_at, 80
    )  # a failed read
    # A primary PostgreSQL restarted in place is back and fresh within 2 s: the seconds stay for
    # CALM_AFTER_S after the last event, when the DBA reads the screen closest.
    after = healthy.taken_at - timedelta(seconds=CALM_AFTER_S - 1)
    assert seconds in _header(healthy, healthy.taken_at, 80, changed_at=after)
    long_after = healthy.taken_at - timedelta(seconds=CALM_AFTER_S)
    assert _header(healthy, healthy.taken_at, 80, changed_at=long_after) == calm


def test_the_header_leaves_out_the_usual_interval_rather_than_cut_it() -> None:
    def header(width: int | None, cadence: float = 1.0) -> str:
        return _header(fx.healthy(), fx.T0, width, cadence)

    # 80 columns, three nodes: it was cut to "ever…"; now the nodes end the line.
    assert header(80).endswith("node3 ✔") and len(header(80)) <= 80
    assert header(120).endswith("every 1s") and header(None).endswith("every 1s")
    # Polling faster than chosen is a warning: kept whole, in the longest form the width holds.
    assert header(120, cadence=0.5).endswith("node3 ✔  every 0.5s (fast; idle 1s)")
    assert header(None, cadence=0.5).endswith("every 0.5s (fast; idle 1s)")
    # At 80 it was cut at the screen's edge; the brand and the mode's reason give way to it.
    at80 = header(80, cadence=0.25)
    assert at80.endswith("node1 ✔ node2 ✔ node3 ✔  0.25s fast") and len(at80) <= 80, at80
    assert header(100, cadence=0.25).endswith("node3 ✔  every 0.25s (fast)")


def test_a_fast_cadence_is_never_cut_at_80_columns_with_a_clusters_own_names() -> None:
    # Members named as hosts, during an incident: the header read "…1c-03 ✔  every 0.25s (…".
    snap = fx.renamed(fx.healthy())
    line = _header(snap, snap.taken_at, 80, cadence=0.25)
    assert line.endswith(" …1a-01 ✔ …1b-02 ✔ …1c-03 ✔  0.25s fast") and len(line) <= 80, line
    # Every node stale as well: the nodes and the cadence still end the line, names kept readable.
    late = _header(snap, snap.taken_at + timedelta(seconds=21), 80, cadence=0.25)
    assert late.endswith("✖20s  0.25s fast"), late


def test_a_node_whose_read_is_slow_is_never_fresh_in_the_header() -> None:
    # Two seconds into `lab fault freeze node1` the row read "▲ REST+PG slow 2s" and the
    # header "node1 ✔": its last answer was within stale_s, but a read was being waited for.
    snap = fx.frozen(node="node1")
    at = snap.taken_at - timedelta(seconds=2)  # its last answer 2 s old, the read still out
    line = _header(snap, at, None)
    assert "  node1 ▲ 2s  node2 ✔  node3 ✔" in line, line
    assert f"last {snap.taken_at.astimezone():%H:%M:%S}" in line  # not calm: the seconds


def test_the_header_keeps_every_nodes_freshness_at_80_columns_when_one_is_stale() -> None:
    # A replica frozen in a failure test: "node1 ▲ 5s" pushed the last node out ("node3…").
    snap = fx.frozen(node="node1")
    ago = snap.taken_at - timedelta(seconds=10)
    frozen = snap.model_copy(
        update={
            "members": tuple(
                m.model_copy(update={"last_ok_at": ago}) if m.name == "node1" else m for m in snap.members
            ),
            "nodes": tuple(
                n.model_copy(update={"last_ok_at": ago}) if n.name == "node1" else n for n in snap.nodes
            ),
        }
    )

    def header(width: int | None) -> str:
        return _header(frozen, frozen.taken_at, width)

    wide = header(None)
    assert "  node1 ▲ 10s  node2 ✔  node3 ✔" in wide  # room enough: the usual spacing
    assert header(200) == wide
    narrow = header(80)
    assert narrow.endswith(" node1 ▲10s node2 ✔ node3 ✔") and len(narrow) <= 80, narrow


def test_the_header_gives_way_in_order_for_a_clusters_own_long_names() -> None:
    # A cluster named as teams name them, members named as hosts are: at 80 columns the header
    # showed "payments-prod-eu-central-1-main" and "pg-prod-eu-central-1a-01 ✔ pg-pr…", the
    # other nodes cut off. What goes, in order: the mode's reason, the cluster's name past 16,
    # the brand, then the members' names down to what tells them apart.
    def named(cluster: str, snap: ClusterSnapshot) -> ClusterSnapshot:
        return snap.model_copy(update={"cluster": snap.cluster.model_copy(update={"name": cluster})})

    frozen = fx.renamed(fx.frozen())
    at = frozen.taken_at + timedelta(seconds=1)  # node3 silent for 5 s
    assert _header(frozen, at, None).startswith(" pgtop-ha pgtop-lab  READ-ONLY·flag ")
    narrow = _header(frozen, at, 80)
    assert narrow.startswith(" pgtop-lab  READ-ONLY   last ") and len(narrow) <= 80, narrow
    assert " …1a-01 ✔ …1b-02 ✔ …1c-03 ▲5s" in narrow
    team = _header(named("payments-prod-eu-central-1-main", fx.frozen()), at, 80)
    assert team.startswith(" pgtop-ha payments-prod-eu…  READ-ONLY ") and len(team) <= 80, team
    assert team.endswith(" node1 ✔ node2 ✔ node3 ▲5s")
    both = _header(named("payments-prod-eu-central-1-main", frozen), at, 80)
    assert both.startswith(" payments-prod-e…  READ-ONLY ") and both.endswith(" …1c-03 ▲5s"), both
    # Every node stale: the line cannot hold them all, and names stay readable, not "…e1".
    stale = _header(fx.healthy(), fx.T0 + timedelta(seconds=21), 80)
    assert "(no data for 20s) node1 ✖20s node2 ✖20s" in stale


def test_the_header_counts_fresh_nodes_when_five_or_seven_do_not_fit_80_columns() -> None:
    # Two data centres and a witness: with seven members the header cut off the last nodes and
    # the fast cadence ("node5 …") in the very minute a failure test makes them matter.
    five = fx.grown(fx.healthy(), 5)
    assert _header(five, five.taken_at, 80).endswith(" node1 ✔ node2 ✔ node3 ✔ node4 ✔ node5 ✔")
    seven = fx.grown(fx.healthy(), 7)
    calm = _header(seven, seven.taken_at, 80)
    assert calm.endswith(" last 03:04 all 7 ✔  every 1s") and "…" not in calm, calm
    # A killed primary's PostgreSQL read fails: CRIT at once, as its row; a frozen one is slow.
    for snap, stale in ((fx.kill_primary(), "node1 ✖10s"), (fx.frozen(), "node3 ▲5s")):
        for size, fresh in ((5, 4), (7, 6)):
            big = fx.grown(snap, size, like="node2")
            line = _header(big, big.taken_at + timedelta(seconds=1), 80, cadence=0.25)
            assert line.endswith(f" {stale} +{fresh} ✔  every 0.25s (fast)") and len(line) <= 80, line
    # Wide enough, every node is named as before.
    wide = _header(fx.grown(fx.kill_primary(), 7), fx.kill_primary().taken_at, 200, cadence=0.25)
    assert "node7 ✔" in wide and "+6" not in wide
    # Three of five stale (a data centre cut off): those are named, cut as far as the line needs.
    cut = _header(fx.grown(fx.frozen(), 5), fx.frozen().taken_at + timedelta(seconds=1), 80, cadence=0.25)
    assert cut.endswith(" ▲5s +2 ✔  0.25s fast") and cut.count("▲5s") == 3 and len(cut) <= 80, cut
    # Long names: the fresh ones are counted before any name is cut to unreadable ("…e1").
    long7 = fx.renamed(fx.grown(fx.frozen(), 7, like="node2"))
    line = _header(long7, long7.taken_at + timedelta(seconds=1), 80, cadence=0.25)
    assert "1c-03 ▲5s +6 ✔  " in line and line.endswith(" fast") and len(line) <= 80, line


def test_a_node_that_stopped_answering_is_aged_from_what_stopped() -> None:
    # One second after `lab fault kill-primary` the header read "node1 ✖5s", then "✖3s": the age
    # of its /patroni read (every 5 s while calm), not of the PostgreSQL that had just gone.
    snap = fx.healthy()
    read_at = snap.taken_at - timedelta(seconds=5)
    gone_at = snap.taken_at - timedelta(seconds=1)
    members = tuple(
        m.model_copy(update={"last_ok_at": read_at}) if m.name == "node1" else m for m in snap.members
    )
    nodes = tuple(
        n.model_copy(update={"reachable": False, "error": "connection refused", "last_ok_at": gone_at})
        if n.name == "node1"
        else n
        for n in snap.nodes
    )
    down = snap.model_copy(update={"members": members, "nodes": nodes})
    assert node_freshness(down, "node1", snap.taken_at, Thresholds()) == (Level.CRIT, 1.0)
    assert "node1 ✖ 1s" in _header(down, snap.taken_at, None)


def _calm_reads(snap: ClusterSnapshot, rest_age_s: float, slow: str | None = None) -> ClusterSnapshot:
    """Each /patroni read ``rest_age_s`` before the snapshot (calm cadence); ``slow``'s PG waited on."""
    read_at = snap.taken_at - timedelta(seconds=rest_age_s)
    members = tuple(m.model_copy(update={"last_ok_at": read_at}) for m in snap.members)
    nodes = tuple(
        n.model_copy(update={"slow_s": 1.5, "last_ok_at": snap.taken_at - timedelta(seconds=1.5)})
        if n.name == slow
        else n
        for n in snap.nodes
    )
    return snap.model_copy(update={"members": members, "nodes": nodes})


def test_healthy_nodes_stay_fresh_while_a_cycle_waits_for_a_frozen_one() -> None:
    # Two seconds into `lab fault freeze node1` the header read "node1 ▲5s node2 ▲5s node3 ▲5s":
    # the cycle waited its budget for node1, and the others' /patroni, read every 5 s while calm,
    # had passed stale_s.warn (5 s) by the time the header ticked.
    snap = _calm_reads(fx.healthy(), 4.5, slow="node1")
    now = snap.taken_at + timedelta(seconds=1.5)
    assert node_freshness(snap, "node2", now, Thresholds()) == (Level.OK, 6.0)
    text = _header(snap, now, 200)
    assert "node2 ✔" in text and "node3 ✔" in text and "node1 ▲" in text
    assert "no data" not in text


def test_every_node_ages_once_the_snapshots_stop() -> None:
    # The poll itself stopped (no snapshot for three cycles and stale_s.warn): what is shown
    # grows old, node by node, and the header says for how long.
    snap = _calm_reads(fx.healthy(), 1.0)
    now = snap.taken_at + timedelta(seconds=7)
    text = _header(snap, now, 200)
    assert "(no data for 7s)" in text
    assert "node2 ▲ 8s" in text, text
    assert node_freshness(snap, "node2", now, Thresholds(), stalled=True) == (Level.WARN, 8.0)
    later = snap.taken_at + timedelta(seconds=20)
    assert "node2 ✖ 20s" in _header(snap, later, 200)  # CRIT past stale_s.crit (ages in coarse steps)
