"""`pgtop-ha snapshot`: one poll of the whole cluster printed as JSON (or its JSON Schema)."""

from __future__ import annotations

import asyncio
import json
import sys

from pgtop_ha.clock import Clock, system_clock
from pgtop_ha.collect.poller import Poller
from pgtop_ha.errors import ConfigError
from pgtop_ha.models.snapshot import ClusterSnapshot
from pgtop_ha.models.urls import redact
from pgtop_ha.settings import Settings


async def take_snapshot(settings: Settings, clock: Clock = system_clock) -> ClusterSnapshot:
    """One full cycle (every source up to its own time limit), then close everything."""
    poller = Poller.from_settings(settings, clock)
    try:
        return await poller.cycle()
    finally:
        await poller.aclose()


def nothing_reachable(snapshot: ClusterSnapshot) -> bool:
    """True when no member, node or HAProxy answered at all."""
    return (
        not any(m.reachable for m in snapshot.members)
        and not any(n.reachable for n in snapshot.nodes)
        and snapshot.haproxy.last_ok_at is None
    )


def first_problem(snapshot: ClusterSnapshot) -> str:
    """The first reason nothing answered, preferring a source that was asked over one not configured."""
    found = [
        *snapshot.errors,
        *(n.error for n in snapshot.nodes if n.error),
        *([snapshot.haproxy.error] if snapshot.haproxy.error else []),
    ]
    asked = [e for e in found if "not configured" not in e]
    return redact((asked or found or ["no answer"])[0])


def run_snapshot(settings: Settings, schema: bool) -> int:
    """Print one ClusterSnapshot as JSON (or its JSON Schema with ``schema``); the exit code.

    Every documented name is present (unknown values are null). Exit 0 when anything answered,
    even with errors on some nodes (they are in the JSON); exit 1, after still printing the
    snapshot, when nothing at all was reachable, with a one-line message on stderr. Nothing to
    poll (no Patroni URL, no [[nodes]], no HAProxy) is a ConfigError (exit 2).
    """
    if schema:
        print(json.dumps(ClusterSnapshot.model_json_schema(), indent=2))
        return 0
    if (
        not settings.patroni.urls
        and not settings.nodes
        and not (settings.haproxy.url or settings.haproxy.socket)
    ):
        raise ConfigError("nothing to poll: give --patroni URL (or [[nodes]] / --haproxy in the config)")
    snapshot = asyncio.run(take_snapshot(settings))
    print(snapshot.model_dump_json(indent=2))
    if nothing_reachable(snapshot):
        hint = "check the URLs and that the cluster runs"
        print(f"pgtop-ha: nothing was reachable ({first_problem(snapshot)}); {hint}", file=sys.stderr)
        return 1
    return 0
