"""The snapshot's verdicts: its problems and its disagreements, as one list of values."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from pgtop_ha.models.thresholds import Level
from pgtop_ha.models.verdict import Verdict


def from_check(c: Verdict, since: datetime, now: datetime) -> Verdict:
    """A disagreement (checks.disagreements) seen since ``since``: it counts once past its grace."""
    lasted = max(0.0, (now - since).total_seconds())
    return c.model_copy(update={"since": since, "counts": lasted >= c.grace_s})


def verdicts_of(
    problems: Sequence[Verdict], seen: Sequence[tuple[Verdict, datetime]], now: datetime
) -> tuple[Verdict, ...]:
    """The problems and the disagreements ``seen`` (with starts) as verdicts, counted first, worst first."""
    out = list(problems)
    found = {(v.rule, v.subject) for v in out}
    # A disagreement that is also a problem (the same rule on the same subject) is one verdict.
    out += [from_check(c, since, now) for c, since in seen if (c.rule, c.subject) not in found]
    return tuple(sorted(out, key=lambda v: (not v.counts, -v.level)))


def worst(verdicts: Sequence[Verdict], *, settled: bool = False) -> Level:
    """The cluster's level: the worst verdict that counts (OK when none).

    ``settled``: the cluster must be calm too (`check --wait-healthy`), so a disagreement still
    within its grace period makes it at least WARN: not recovered yet.
    """
    level = Level(max((v.level for v in verdicts if v.counts), default=Level.OK))
    if settled and not healthy(verdicts):
        return max(level, Level.WARN)
    return level


def healthy(verdicts: Sequence[Verdict]) -> bool:
    """Nothing wrong at all: no verdict above OK, within its grace or past it."""
    return all(v.level == Level.OK for v in verdicts)
