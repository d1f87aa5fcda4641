"""`pgtop-ha snapshot`: one poll of the whole cluster printed as JSON (or its JSON Schema)."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Sequence

from pgtop_ha.clock import Clock, system_clock
from pgtop_ha.collect.poller import Poller
from pgtop_ha.engines.session import Session
from pgtop_ha.errors import ConfigError
from pgtop_ha.models.needs import Need, Needs
from pgtop_ha.models.snapshot import ClusterSnapshot
from pgtop_ha.models.urls import redact
from pgtop_ha.settings import Settings

# Every optional read a pane can ask for: `snapshot` reads them all unless told otherwise.
READS: tuple[Need, ...] = ("locks", "cache", "parameters", "memory", "pgbackrest", "sessions", "statements")


def reads(only: Sequence[str] = (), without: Sequence[str] = ()) -> Needs:
    """The optional reads to make: all of READS, or ``only`` those, less ``without``."""
    unknown = sorted((set(only) | set(without)) - set(READS))
    if unknown:
        raise ConfigError(f"unknown read {', '.join(unknown)}; choose from {', '.join(READS)}")
    chosen = [r for r in READS if (not only or r in only) and r not in without]
    return frozenset(chosen)


async def take_snapshot(
    settings: Settings, clock: Clock = system_clock, needs: Needs = frozenset(READS)
) -> ClusterSnapshot:
    """One full cycle with ``needs`` read (every source up to its own time limit), judged, then closed."""
    poller = Poller.from_settings(settings, clock)
    poller.set_needs(needs)
    try:
        snap = await poller.cycle()
    finally:
        await poller.aclose()
    session = Session(clock=clock, judging=settings.judging())
    session.observe(snap)
    judged = session.judged(snap)
    return snap.model_copy(update={"verdicts": judged.verdicts, "forecast": judged.forecast})


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


def run_snapshot(
    settings: Settings, schema: bool, only: Sequence[str] = (), without: Sequence[str] = ()
) -> int:
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
    needs = reads(only, without)
    snapshot = asyncio.run(take_snapshot(settings, needs=needs))
    print(json.dumps(snapshot.model_dump(mode="json"), indent=2, ensure_ascii=True))
    if nothing_reachable(snapshot):
        hint = "check the URLs and that the cluster runs"
        print(f"pgtop-ha: nothing was reachable ({first_problem(snapshot)}); {hint}", file=sys.stderr)
        return 1
    return 0
