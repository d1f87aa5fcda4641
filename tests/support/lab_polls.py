"""Lab-test helpers: the lab without its progress output, a fault that blocks for its duration run
beside the test, and polling a real Poller until its snapshot shows something (a deadline, never a
fixed number of cycles)."""

from __future__ import annotations

import asyncio
import io
import json
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pgtop_ha.collect.poller import Poller
from pgtop_ha.lab.cluster import Lab
from pgtop_ha.models.snapshot import ClusterSnapshot

PACE_S = 0.3  # between polls, as the console paces its cycles; not synchronisation


def quiet(lab: Lab) -> Lab:
    """The same lab with its progress output swallowed."""
    return Lab(lab.layout, out=io.StringIO())


def end_sessions(lab: Lab, application: str) -> None:
    """End a lab fault early: its sessions' backends on the leader are terminated, so it returns."""
    # A fault's session may wait in the server (pg_sleep): ending its client would not end it.
    lab.psql(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
        f"WHERE application_name = '{application}'",
        lab.leader_index(),
    )


@contextmanager
def running(fault: Callable[[], str], limit: float) -> Iterator[None]:
    """Run a fault that blocks for its duration in a thread beside the test; it must end by ``limit``."""
    failures: list[BaseException] = []

    def run() -> None:
        try:
            fault()
        except BaseException as exc:  # reported to the test below
            failures.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield
    finally:
        # Even when the test failed: a fault left running would be the next test's.
        thread.join(limit)
    assert not thread.is_alive(), f"the fault did not end within {limit}s"
    assert not failures, failures


async def until_seen(
    poller: Poller,
    cond: Callable[[ClusterSnapshot], bool],
    within: float,
    what: str = "",
    each: Callable[[ClusterSnapshot], object] | None = None,
) -> ClusterSnapshot:
    """Poll until ``cond(snapshot)`` holds (``each`` sees every snapshot); fail after ``within`` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while True:
        snap = await poller.cycle(budget=3.0)
        if each is not None:
            each(snap)
        if cond(snap):
            return snap
        if loop.time() > deadline:
            errors = [f"{n.name}: {n.error}" for n in snap.nodes if n.error] + list(snap.errors)
            raise AssertionError(
                f"{what or cond} not seen within {within}s; errors: {errors}; probes: {snap.probes}; "
                f"last nodes: {snap.nodes}"
            )
        await asyncio.sleep(PACE_S)


def cli_json(config: Path, *args: str) -> dict[str, Any]:
    """`pgtop-ha --config CONFIG ARGS...` (snapshot, check --json) as its parsed JSON answer."""
    argv = [sys.executable, "-m", "pgtop_ha", "--config", str(config), *args]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=60).stdout
    doc: dict[str, Any] = json.loads(out)
    return doc
