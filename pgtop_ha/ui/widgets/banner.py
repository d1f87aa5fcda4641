"""The contradiction banner: one line above the panes, shown only while sources disagree or a
failover is being timed (hidden otherwise, so a calm screen is unchanged)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from rich.style import Style
from rich.text import Text

from pgtop_ha.models.health import human_bytes
from pgtop_ha.models.stopwatch import FailoverReport
from pgtop_ha.models.timeline import ActiveCheck
from pgtop_ha.ui.format import age, shown
from pgtop_ha.ui.widgets.heartbeat import OneLine

SHOW_DONE_S = 60.0  # a finished failover's figures stay on the banner this long


def _since(start: datetime | None, now: datetime) -> float:
    return 0.0 if start is None else max(0.0, (now - start).total_seconds())


def stopwatch_text(r: FailoverReport, now: datetime) -> str:
    """A failover's figures as they stand at ``now``: final ones, or running ones counting up."""
    running = not r.done
    old = shown(r.old_leader or "?", 32)
    new = shown(r.new_leader, 32) if r.new_leader else "…"
    parts = [f"⏱ failover {old} → {new}"]
    if r.election_s is not None:
        if r.down_to_elected_s is not None:
            # What a DBA times: from the leader going silent, not from Patroni releasing its key.
            parts.append(f"elected {r.down_to_elected_s:.1f}s after it went silent (key {r.election_s:.1f}s)")
        else:
            parts.append(f"elected {r.election_s:.1f}s")
    elif running:
        parts.append(f"no leader {_since(r.leader_down_at or r.lost_at, now):.0f}s")
    if r.write_outage_s is not None:
        parts.append(f"writes down {r.write_outage_s:.1f}s")
    elif r.write_outage_from is not None and running:
        parts.append(f"writes down {_since(r.write_outage_from, now):.0f}s…")
    # The write probe's own outage: what an application saw, beside HAProxy's routing.
    if r.client_write_outage_s is not None:
        parts.append(f"client writes down {r.client_write_outage_s:.1f} s")
    elif r.client_write_outage_from is not None:
        parts.append(f"client writes down {_since(r.client_write_outage_from, now):.0f} s…")
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


def banner_text(
    checks: Sequence[ActiveCheck],
    failover: FailoverReport | None,
    now: datetime,
    styles: Mapping[str, Style],
) -> Text:
    """The banner line; empty when there is nothing to say."""
    t = Text(no_wrap=True, overflow="ellipsis")
    if failover is not None and (
        not failover.done or (failover.ended_at is not None and _since(failover.ended_at, now) < SHOW_DONE_S)
    ):
        t.append(f" {stopwatch_text(failover, now)} ", styles.get("warn" if failover.done else "crit"))
    for active in checks:
        c = active.check
        t.append(" ")
        style = styles.get("crit" if c.severity >= 2 else "warn")
        t.append(f"⚠ {shown(c.text, 120)} ({age(active.lasted_s(now))})", style)
    return t


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
        return super().show(text)
