"""The fleet screen's reads in PromQL: two rounds per refresh, whatever the number of clusters."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import quote

from pgtop_ha.judge.fleet import (
    BY_LEVEL,
    LIVE,
    RANKED,
    RULES_VERSION,
    SEVERITY,
    VERSION,
    WORST,
    FleetSeries,
    Q,
    Sample,
    level_expr,
    promql_string,
)

DETAIL = RANKED  # clusters read in full each refresh: the worst, then healthy ones
URL_QUERY = 7000  # characters of one encoded detail query: within a proxy's 8 KiB request line

_RE2_META = frozenset("\\.+*?()|[]{}^$")


def _literal(text: str) -> str:
    """``text`` as an RE2 pattern matching it alone."""
    # Only RE2's metacharacters are escaped: an alternation of plain literals is what Prometheus
    # looks up by value instead of running the regex over every value of the label.
    return "".join(f"\\{c}" if c in _RE2_META else c for c in text)


def name_matcher(label: str, text: str) -> str:
    """A matcher for ``label`` containing ``text`` (case-insensitive, every character literal)."""
    return f"{label}=~{promql_string(f'(?i).*{_literal(text)}.*')}"


@dataclass(frozen=True)
class FleetQueries(FleetSeries):
    """The PromQL of one refresh in two rounds.

    Prometheus ranks and counts every cluster (the judge's RULES, ``by (scope)``) and answers in
    detail only for the ``limit`` worst: a refresh's answers stay bounded however large the fleet.
    """

    limit: int = DETAIL
    recorded_match_ok: bool = True  # False: `match` holds matchers beyond the screen's name filter
    # The recorded rules' last evaluation, where their series are read (None: rank live).
    evaluated_at: float | None = None

    def matching(self, text: str) -> FleetQueries:
        """These queries narrowed to clusters whose name contains ``text`` (none: unchanged)."""
        if not text:
            return self
        extra = name_matcher(self.scope_label, text)
        return dataclasses.replace(self, match=",".join(p for p in (self.match, extra) if p))

    def first(self) -> dict[str, str]:
        """The first round: every cluster counted by level (one pass), and the ``limit`` worst."""
        at = self.evaluated_at
        if at is None:
            severity = self.severity()
        elif not self.match and self.limit <= RANKED:
            # The page and the counts as recorded: a few hundred series, whatever the fleet.
            return {"counts": _fresh(BY_LEVEL, at), "worst": f"topk({self.limit}, {_fresh(WORST, at)})"}
        else:
            # Only the scope filter applies: the recorded series carry no other label. The level
            # is taken from the same severity the ranking reads, never from an older evaluation.
            severity = f"{SEVERITY}{{{self.match}}}" if self.match else SEVERITY
        return {
            "counts": f'count_values("level", {level_expr(severity)})',
            "worst": f"topk({self.limit}, {severity})",
        }

    def detail(self, scopes: Sequence[str]) -> list[str]:
        """The second round: the rows of ``scopes``, their series alone read (a few queries when many)."""
        out: list[str] = []
        chunk: list[str] = []
        # In name order: the same clusters ask the same queries whatever order the ranking named
        # them in, so an engine's per-query caches (VictoriaMetrics' series lookups) answer them.
        for scope in sorted(scopes):
            if chunk and len(quote(self._detail([*chunk, scope]))) > URL_QUERY:
                out.append(self._detail(chunk))
                chunk = []
            chunk.append(scope)
        if chunk:
            out.append(self._detail(chunk))
        return out

    def _detail(self, scopes: Sequence[str]) -> str:
        one_of = "|".join(_literal(s) for s in scopes)
        # Chosen in the first round under --match: by name alone now, so HAProxy's series match too.
        only = dataclasses.replace(self, match="", only=f"{self.scope_label}=~{promql_string(one_of)}")
        return " or ".join(only.tag(k, v) for k, v in only.parts().items())

    def members_of(self, scope: str) -> str:
        """One cluster's members with their instance (for a drill down into any cluster)."""
        one = f"{self.scope_label}={promql_string(scope)}"
        return dataclasses.replace(self, match=",".join(p for p in (self.match, one) if p)).seen("instance")


def _fresh(series: str, at: float) -> str:
    """``series`` as the evaluation at ``at`` wrote it: a series it no longer wrote is left out."""
    # Without its staleness marker (a ruler writing through remote write sends it late, or not
    # at all) a level no cluster is on any more is still answered within the lookback.
    return f"({series} and timestamp({series}) >= {at - 0.001:.3f})"


WRITTEN = (RULES_VERSION, BY_LEVEL, WORST)  # what a recorded refresh reads


def written(queries: FleetSeries) -> str:
    """One query for the last instant each of WRITTEN was written at, tagged with its name."""
    return " or ".join(queries.tag(series, f"max(timestamp({series}))") for series in WRITTEN)


def rules_state(
    versions: Sequence[Sample],
    stamps: Sequence[Sample],
    queries: FleetQueries,
    now: float,
    stale_s: float,
) -> tuple[float | None, str]:
    """The instant to read the recorded rules at (None: read live), and the screen's words for it."""
    if queries.match and not queries.recorded_match_ok:
        return None, f"{LIVE} (--match asks labels the recorded series do not carry)"
    if not versions:
        return None, LIVE
    found = versions[0]
    if int(found.value) != VERSION:
        return None, (f"{LIVE}: the rule file records rules v{found.value:g}, this pgtop-ha's are "
                      f"v{VERSION}; write it again with `pgtop-ha fleet rules`")  # fmt: skip
    differ = [k for k, v in queries.rules_identity().items() if found.labels.get(k, "") != v]
    if differ:
        return None, f"{LIVE}: the rule file was written for another {differ[0]}; write it again"
    at_of = {s.labels.get(Q): s.value for s in stamps}
    if any(series not in at_of for series in WRITTEN):
        return None, f"{LIVE}: the recorded rules have not ranked the fleet yet"
    # The last instant every series was written at: an engine may show one before another.
    at = min(at_of[series] for series in WRITTEN)
    age = now - at
    if age > stale_s:
        return None, f"{LIVE}: the recorded rules are not being evaluated (last {age:.0f} s ago)"
    return at, f"recorded rules, evaluated {max(0.0, age):.0f} s ago"
