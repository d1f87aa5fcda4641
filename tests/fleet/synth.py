"""Synthetic Prometheus answers for the fleet (N clusters by M members), shaped like FleetQueries'.

`FakeFleet.answer(query)` plays Prometheus for the fleet's own queries: counts by level, the
worst clusters, and the rows of the clusters a detail query names. Real PromQL over a synthetic
fleet is tested against a real Prometheus (pgtop_ha/lab/synthetic_fleet.py).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from pgtop_ha.judge.fleet import Q, Sample, build_rows, level_of


def vector(result: list[dict[str, Any]], **envelope: Any) -> bytes:
    """An /api/v1/query answer body (``envelope``: warnings, isPartial and the like)."""
    return json.dumps(
        {"status": "success", "data": {"resultType": "vector", "result": result}, **envelope}
    ).encode()


def _s(labels: dict[str, str], value: float, at: float) -> dict[str, Any]:
    return {"metric": labels, "value": [at, repr(float(value))]}


def cluster_aggregates(
    scope: str, members: int, now: float, *, tl_changes: int = 0, up: int | None = None
) -> list[dict[str, Any]]:
    """What a detail query answers for one cluster (node1 leads)."""
    up = members if up is None else up
    values = {
        "total": members,
        "up": up,
        "streaming": max(0, up - 1),
        "timeline": 3,
        "timeline_changes": tl_changes,
        "pending_restart": 0,
        "paused": 0,
        "dcs_last_seen": now - 2,
        "lag": 10_000,
        "writer": 1,
    }
    out = [_s({"scope": scope, "name": "node1", Q: "leader"}, 1, now)]
    out += [_s({"scope": scope, Q: k}, v, now) for k, v in values.items()]
    return out


class FakeFleet:
    """N clusters; cluster i has tl_changes when i % 10 == 0 and a member down when i % 97 == 5."""

    def __init__(self, clusters: int, members: int = 3, *, now: float = 1_700_000_000.0) -> None:
        self.now = now
        self.aggregates: dict[str, list[dict[str, Any]]] = {}
        for c in range(clusters):
            scope = f"cluster-{c:05d}"
            down = 1 if c % 97 == 5 else 0
            tl = 1 if c % 10 == 0 else 0
            self.aggregates[scope] = cluster_aggregates(scope, members, now, tl_changes=tl, up=members - down)
        samples = [
            Sample(item["metric"], float(item["value"][1]))
            for rows in self.aggregates.values()
            for item in rows
        ]
        self.rows = build_rows({"fleet": samples}, now=now)

    def answer(self, query: str, **envelope: Any) -> bytes:
        """The body Prometheus would send for one of the fleet's queries."""
        if "pgtop_ha:" in query:
            return vector([], **envelope)  # no pgtop-ha rules recorded: the fleet asks live
        if query.startswith("count_values("):
            levels: dict[int, int] = {}
            for r in self.rows:
                levels[level_of(r.severity)] = levels.get(level_of(r.severity), 0) + 1
            return vector([_s({"level": str(k)}, v, self.now) for k, v in levels.items()], **envelope)
        if query.startswith("topk("):
            limit = int(query[5 : query.index(",")])
            worst = self.rows[:limit]
            return vector([_s({"scope": r.scope}, r.severity, self.now) for r in worst], **envelope)
        found = re.search(r'scope=~"((?:[^"\\]|\\.)*)"', query)
        assert found is not None, query[:200]
        names = [re.sub(r"\\\\(.)", r"\1", n) for n in found.group(1).split("|")]
        result = [item for n in names for item in self.aggregates.get(n, [])]
        return vector(result, **envelope)


def query_of(target: str) -> str:
    """The PromQL of a request target."""
    from urllib.parse import parse_qs, urlsplit

    return parse_qs(urlsplit(target).query)["query"][0]


def rows_samples(bodies: Mapping[str, bytes]) -> dict[str, tuple[Sample, ...]]:
    """Bodies parsed as the reader does (for pure tests)."""
    from pgtop_ha.collect.prometheus import parse_vector

    return {k: parse_vector(v) for k, v in bodies.items()}
