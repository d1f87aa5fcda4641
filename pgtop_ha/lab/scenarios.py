"""Demo scenarios: lab faults run beside the console, each step stamped on its timeline as a marker.

`pgtop-ha demo --scenario NAME` runs one in a background thread once the console listens for
markers, so a newcomer sees the timeline, the failover stopwatch and the contradiction banner
within a minute. Every step is bounded and the scenario leaves the lab healthy again.
"""

from __future__ import annotations

import io
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from pgtop_ha.errors import UserError
from pgtop_ha.lab import faults, procs
from pgtop_ha.lab.cluster import Lab

Mark = Callable[[str], None]
START_AFTER_S = 8.0  # let the console draw a calm cluster first
LISTEN_WAIT_S = 30.0


@dataclass(frozen=True)
class Scenario:
    """A named demo: what it shows, and the function that runs its steps."""

    name: str
    shows: str
    run: Callable[[Lab, Mark, threading.Event], None]


def _wait(stop: threading.Event, seconds: float) -> bool:
    """Wait ``seconds`` unless asked to stop; True when the scenario should go on."""
    return not stop.wait(seconds)


def _new_leader(lab: Lab, old: str, stop: threading.Event, timeout: float = 90) -> str | None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not stop.is_set():
        leader = lab.leader()
        if leader is not None and leader != old:
            return leader
        stop.wait(0.5)
    return None


def _failover(lab: Lab, mark: Mark, stop: threading.Event) -> None:
    old = lab.leader()
    if old is None:
        raise UserError("the lab has no leader to fail over from")
    mark(f"demo: crashing the leader {old} (kill -9 of Patroni and PostgreSQL: a power cut)")
    faults.crash(lab, old)
    new = _new_leader(lab, old, stop)
    mark(f"demo: Patroni elected {new}" if new else "demo: no new leader within 90 s")
    if not _wait(stop, 10):
        return
    mark(f"demo: starting {old} again (it rejoins as a replica)")
    faults.start_patroni(lab, old)


def _kill_primary(lab: Lab, mark: Mark, stop: threading.Event) -> None:
    leader = lab.leader()
    mark(f"demo: kill -9 of the postmaster on the leader {leader} (Patroni restarts it in place)")
    faults.kill_primary(lab)
    procs.poll(lambda: stop.is_set() or lab.healthy(), 120, interval=1.0)
    mark("demo: the cluster is healthy again")


def _archive(lab: Lab, mark: Mark, stop: threading.Event) -> None:
    mark("demo: archiving broken (the pgBackRest repository made unwritable): .ready files pile up")
    faults.break_archive(lab)
    try:
        # A little write load so WAL segments are switched and wait to be archived.
        faults.load(lab, 20)
        _wait(stop, 10)
    finally:
        faults.fix_archive(lab)
    mark("demo: archiving fixed; the archiver catches up")


SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in (
        Scenario("failover", "a real failover: the leader crashes, Patroni elects another", _failover),
        Scenario("kill-primary", "the leader's postmaster killed: Patroni still leads", _kill_primary),
        Scenario("archive", "WAL archiving fails and recovers", _archive),
    )
}


def scenario(name: str) -> Scenario:
    """The scenario called ``name``; a one-line error naming the known ones otherwise."""
    found = SCENARIOS.get(name)
    if found is None:
        raise UserError(f"no demo scenario {name!r}; choose one of {', '.join(SCENARIOS)}")
    return found


def start_in_background(
    layout_lab: Lab, chosen: Scenario, mark: Mark, listening: Callable[[], bool]
) -> tuple[threading.Thread, threading.Event]:
    """Run ``chosen`` in a daemon thread once ``listening()`` says the console takes markers."""
    stop = threading.Event()
    # The faults print progress; the console owns the terminal, so they print nowhere.
    quiet = Lab(layout_lab.layout, out=io.StringIO())

    def run() -> None:
        deadline = time.monotonic() + LISTEN_WAIT_S
        while not listening() and time.monotonic() < deadline and not stop.is_set():
            stop.wait(0.2)
        if not _wait(stop, START_AFTER_S):
            return
        try:
            chosen.run(quiet, mark, stop)
        except Exception as exc:  # a failed step is told on the timeline, never a traceback
            mark(f"demo: step failed: {exc}")

    thread = threading.Thread(target=run, name=f"demo-{chosen.name}", daemon=True)
    thread.start()
    return thread, stop
