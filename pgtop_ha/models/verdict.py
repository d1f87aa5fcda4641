"""A verdict: what the judge concluded about one subject, the same value for every output; a mark:
the same rule as a pane's row shows it."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from pgtop_ha.models.base import Frozen
from pgtop_ha.models.thresholds import Level


class Verdict(Frozen):
    """One rule's finding on one subject: its level, since when, its grace and its words."""

    rule: str  # an id of judge.rules.RULES
    level: Level  # 0 OK, 1 WARN, 2 CRIT
    subject: str | None = None  # the member, node, slot, pool or probe; None for the cluster
    text: str
    short: str = ""  # a few words for narrow cells; text when empty
    key: str = ""  # what it is without its figure ("replica lag"); text when empty
    since: datetime | None = None  # first seen (a disagreement's start); None when not tracked
    grace_s: float = 0.0  # how long it may last before it counts
    counts: bool = True  # past its grace: it sets the cluster's level

    @property
    def ident(self) -> str:
        """The same while the verdict lasts, whatever its figure says (a table row's key)."""
        return f"{self.subject}|{self.key or self.text}"


@dataclass(frozen=True, slots=True)
class Mark:
    """A rule that holds for one row of a pane: its level, its words, and the cell it colours."""

    rule: str  # an id of judge.rules.RULES
    level: Level
    text: str
    part: str = ""  # the column it colours beside the row's health; "" for the health alone


def worst(marks: Iterable[Mark], part: str | None = None) -> Level:
    """The worst level among ``marks`` (those of ``part`` alone when given); OK when none."""
    return max((m.level for m in marks if part is None or m.part == part), default=Level.OK)


def cell_level(marks: Iterable[Mark], part: str) -> Level | None:
    """The level a cell shows for ``part``: None (not coloured) when no mark holds for it."""
    level = worst(marks, part)
    return level if level > Level.OK else None
