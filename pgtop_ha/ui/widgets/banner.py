"""The contradiction banner: one line above the panes, shown only while sources disagree, the
leader has stopped answering or a failover is being timed (hidden otherwise, so a calm screen is
unchanged)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime

from rich.style import Style
from rich.text import Text

from pgtop_ha.engines.stopwatch import FailoverReport, LeaderSilence
from pgtop_ha.engines.timeline import ActiveCheck
from pgtop_ha.ui.format import NAME_ROOM, age, fit_name, human_bytes, shown
from pgtop_ha.ui.widgets.heartbeat import OneLine

SHOW_DONE_S = 60.0  # a finished failover's figures stay on the banner this long


def _since(start: datetime | None, now: datetime) -> float:
    return 0.0 if start is None else max(0.0, (now - start).total_seconds())


def stopwatch_text(
    r: FailoverReport, now: datetime, *, names: Sequence[str] = (), compact: bool = False
) -> str:
    """A failover's figures as they stand at ``now``: final ones, or running ones counting up.

    ``compact``: the same figures in the words an 80-column line has room for.
    """
    running = not r.done
    room = NAME_ROOM if compact else 32
    old = fit_name(r.old_leader or "?", names, room)
    new = fit_name(r.new_leader, names, room) if r.new_leader else "…"
    parts = [f"⏱ {old} → {new}" if compact else f"⏱ failover {old} → {new}"]
    if r.leader_kept:
        parts = [f"⏱ {old} kept the leader" if compact else f"⏱ no failover: {old} kept the leader"]
    if r.election_s is not None:
        if r.down_to_elected_s is not None:
            # What a DBA times: from the leader going silent, not from Patroni releasing its key.
            parts.append(
                f"elected {r.down_to_elected_s:.1f}s"
                if compact
                else f"elected {r.down_to_elected_s:.1f}s after it went silent (key {r.election_s:.1f}s)"
            )
        else:
            parts.append(f"elected {r.election_s:.1f}s")
    elif running:
        parts.append(f"no leader {_since(r.leader_down_at or r.lost_at, now):.0f}s")
    if r.write_outage_s is not None:
        parts.append(f"writes down {r.write_outage_s:.1f}s")
    elif r.write_outage_from is not None and running:
        parts.append(f"writes down {_since(r.write_outage_from, now):.0f}s…")
    # The write probe's own outage: what an application saw, beside HAProxy's routing.
    client = "clients" if compact else "client writes"
    if r.client_write_outage_s is not None:
        parts.append(f"{client} down {r.client_write_outage_s:.1f} s")
    elif r.client_write_outage_from is not None:
        parts.append(f"{client} down {_since(r.client_write_outage_from, now):.0f} s…")
    if r.lag_at_promotion_bytes is not None:
        parts.append(f"lag {human_bytes(r.lag_at_promotion_bytes)}")
    if r.replicas_streaming_s is not None:
        parts.append(f"replicas {r.replicas_streaming_s:.1f}s")
    elif running and r.new_leader is not None:
        parts.append("replicas catching up…")
    if r.permanent_slots_ok is False:
        parts.append("slots MISSING " + ", ".join(shown(s, 32) for s in r.missing_slots))
    elif r.permanent_slots_ok:
        parts.append("slots ok")
    return " · ".join(parts)


def silence_text(s: LeaderSilence, now: datetime, *, names: Sequence[str] = (), compact: bool = False) -> str:
    """The stopwatch before Patroni names another leader: how long the leader has been silent.

    Patroni's ttl bounds when its key lapses (the last renewal came before its REST stopped
    answering), so the DBA reads how long the election can still take; past it, something else
    keeps the leader (a partition between this console and it, or no replica allowed to take over).
    """
    room = NAME_ROOM if compact else 32
    who = fit_name(s.leader, names, room)
    silent = int(_since(s.since, now))
    if s.pg_down:
        parts = [
            f"⏱ leader {who} silent {silent}s" + ("" if compact else ": Patroni and PostgreSQL unreachable")
        ]
    else:
        parts = [f"⏱ leader {who} REST down {silent}s" + ("" if compact else " (its PostgreSQL answers)")]
    if s.paused:
        parts.append("paused: no failover" if compact else "cluster paused: Patroni fails nothing over")
    elif s.ttl_s is not None:
        left = s.ttl_s - int(_since(s.rest_since, now))
        if left > 0:
            parts.append(
                f"key lapses ≤{left}s"
                if compact
                else f"its leader key lapses within {left}s (ttl {s.ttl_s}s)"
            )
        else:
            # Past the ttl and Patroni still names it: its Patroni renews the key unseen from here
            # (a partition), or no replica may take over (nofailover, maximum_lag_on_failover).
            parts.append(
                f"{-left}s past ttl {s.ttl_s}s"
                if compact
                else f"{-left}s past ttl {s.ttl_s}s, Patroni still names it"
            )
    if s.writes_down_since is not None:
        parts.append(f"writes down {_since(s.writes_down_since, now):.0f}s…")
    return " · ".join(parts)


def banner_text(
    checks: Sequence[ActiveCheck],
    failover: FailoverReport | None,
    now: datetime,
    styles: Mapping[str, Style],
    *,
    names: Sequence[str] = (),
    width: int | None = None,
    silence: LeaderSilence | None = None,
    notes: Sequence[str] = (),
) -> Text:
    """The banner line; empty when there is nothing to say.

    ``notes``: what lasts until the operator ends it (maintenance mode, a schedule, failsafe).

    ``silence``: the leader has stopped answering and no failover is timed yet; its stopwatch
    takes the place of the last failover's figures.

    With ``width``, a stopwatch that would not fit is written compact, so that at 80 columns the
    outage figures are read, not cut.
    """
    t = Text(no_wrap=True, overflow="ellipsis")
    # Each second for the first minute, as the stopwatch beside it counts (a coarse "(10s)"
    # read for ten seconds beside "writes down 14s…").
    said = [f"⚠ {shown(a.check.text, 120)} ({age(a.lasted_s(now), exact=60)})" for a in checks]
    beside = sum(len(c) + 1 for c in said)
    if silence is not None:
        quiet = silence  # bound for the lambda: mypy's narrowing does not reach into it
        text = _fit(
            silence_text(quiet, now, names=names),
            beside,
            width,
            lambda: silence_text(quiet, now, names=names, compact=True),
        )
        t.append(_padded(text), styles.get("crit"))
    elif failover is not None and (
        not failover.done or (failover.ended_at is not None and _since(failover.ended_at, now) < SHOW_DONE_S)
    ):
        report = failover  # bound for the lambda, as above
        text = _fit(
            stopwatch_text(report, now, names=names),
            beside,
            width,
            lambda: stopwatch_text(report, now, names=names, compact=True),
        )
        t.append(_padded(text), styles.get("warn" if failover.done else "crit"))
    for active, words in zip(checks, said, strict=True):
        t.append(" ")
        t.append(words, styles.get(active.check.level.name.lower()))
    for note in notes:
        t.append(" ")
        t.append(f"⏲ {shown(note, 120)}", styles.get("warn"))
    return t


def _fit(full: str, beside: int, width: int | None, compact: Callable[[], str]) -> str:
    """A stopwatch's words for ``width`` with ``beside`` columns of problems after it."""
    # At 80 columns the figures a failover test is run for were cut ("· lag…"), and the
    # problems after them ("⚠ HAProxy writer pool…"): the compact words, then a second line,
    # for the stopwatch's own figures or for the problems after it.
    if width is None or len(full) + 2 + beside <= width:
        return full
    short = compact()
    if len(short) + 2 > width:
        return _two_lines(short, width - 2)
    if beside and len(short) + 2 + beside > width:
        return short + "\n"
    return short


def _padded(text: str) -> str:
    """The stopwatch's lines, a space either side; a line left to the problems starts bare."""
    if text.endswith("\n"):
        return " " + text[:-1] + " \n"  # the problems add their own space
    return " " + text.replace("\n", " \n ") + " "


def _two_lines(text: str, width: int) -> str:
    """``text`` broken once at a " · " so its first line fits ``width``; as is when it fits."""
    if len(text) <= width:
        return text
    parts = text.split(" · ")
    first = parts[0]
    for i, part in enumerate(parts[1:], start=1):
        if len(first) + 3 + len(part) > width:
            return first + "\n" + " · ".join(parts[i:])
        first += " · " + part
    return first


class Banner(OneLine):
    """One line of disagreements and the live failover stopwatch; hidden when it has none."""

    def __init__(self) -> None:
        super().__init__(id="banner")
        self.display = False

    def show(self, text: Text) -> bool:
        """Show ``text`` (hide the banner when empty); True when it changed."""
        if text == self._text:
            return False
        self.display = bool(text.plain.strip())
        lines = text.plain.count("\n") + 1
        if self.styles.height is None or self.styles.height.value != lines:
            self.styles.height = lines  # two while a failover's figures need them (a layout, rarely)
        return super().show(text)
