"""Synthetic Prometheus answers for the fleet (N clusters by M members), shaped like FleetQueries'."""

from __future__ import annotations

import json
from typing import Any

from pgtop_ha.judge.fleet import FleetQueries, Q


def vector(result: list[dict[str, Any]]) -> bytes:
    """An /api/v1/query answer body."""
    return json.dumps({"status": "success", "data": {"resultType": "vector", "result": result}}).encode()


def _s(labels: dict[str, str], value: float, at: float) -> dict[str, Any]:
    return {"metric": labels, "value": [at, repr(float(value))]}


def cluster_aggregates(scope: str, members: int, now: float, *, tl_changes: int = 0) -> list[dict[str, Any]]:
    """What the "fleet" query answers for one healthy cluster (node1 leads)."""
    values = {
        "up": members,
        "streaming": members - 1,
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


def synthetic_bodies(clusters: int, members: int = 3, *, now: float = 1_700_000_000.0) -> dict[str, bytes]:
    """Query name → answer body, for every fleet query."""
    fleet: list[dict[str, Any]] = []
    seen: list[dict[str, Any]] = []
    for c in range(clusters):
        scope = f"cluster-{c:04d}"
        fleet += cluster_aggregates(scope, members, now, tl_changes=1 if c % 10 == 0 else 0)
        for m in range(members):
            labels = {"scope": scope, "name": f"node{m + 1}", "instance": f"127.0.0.1:{8000 + m}"}
            seen.append(_s(labels, 1, now))
    return {"fleet": vector(fleet), "members": vector(seen)}


def route_bodies(bodies: dict[str, bytes], queries: FleetQueries | None = None) -> dict[str, bytes]:
    """PromQL text → body (for a fake Prometheus that answers by query)."""
    q = (queries or FleetQueries()).all()
    return {q[name]: body for name, body in bodies.items()}
