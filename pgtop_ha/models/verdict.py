"""A verdict: what the judge concluded about one subject, the same value for every output."""

from __future__ import annotations

from datetime import datetime

from pgtop_ha.models.base import Frozen


class Verdict(Frozen):
    """One rule's finding on one subject: its level, since when, its grace and its words."""

    rule: str  # an id of judge.rules.RULES
    level: int  # 0 OK, 1 WARN, 2 CRIT (thresholds.Level)
    subject: str | None = None  # the member, node, slot, pool or probe; None for the cluster
    text: str
    since: datetime | None = None  # first seen (a disagreement's start); None when not tracked
    grace_s: float = 0.0  # how long it may last before it counts
    counts: bool = True  # past its grace: it sets the cluster's level
