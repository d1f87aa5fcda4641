"""`pgtop-ha record FILE`: poll the cluster and record it, without a screen (no Textual import).

For failure-test harnesses: same connection flags as the console, one status line every few
seconds, markers from `pgtop-ha mark`, and a clean stop (file closed) on SIGINT or SIGTERM.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from pathlib import Path
from typing import TextIO

from pgtop_ha.clock import Clock, system_clock
from pgtop_ha.engines.session import Session
from pgtop_ha.errors import ConfigError
from pgtop_ha.models.snapshot import ClusterSnapshot
from pgtop_ha.models.source import SnapshotSource
from pgtop_ha.models.text import clean
from pgtop_ha.record.limits import RecordLimit
from pgtop_ha.record.markers import MarkerInbox
from pgtop_ha.record.recorder import Recorder
from pgtop_ha.runtime import run
from pgtop_ha.settings import Settings

STATUS_EVERY_S = 5.0
KEEP_EVENTS = 1000  # in memory; every event is in the file as soon as it is seen


def mib(size: int) -> str:
    """A size for status lines."""
    return f"{size / 1024**2:.1f} MiB"


def status_line(recorder: Recorder, events: int, clock: Clock) -> str:
    """One line: cycles, size, events, markers, the last event."""
    now = clock().astimezone()
    last = recorder.last_event
    said = f", last: {last.at.astimezone():%H:%M:%S} {clean(last.text)[:80]}" if last is not None else ""
    thinned = f", {recorder.thinned} thinned" if recorder.thinned else ""
    return (
        f"{now:%H:%M:%S} recording {recorder.path}: {recorder.cycles} cycles, {mib(recorder.file_bytes())}"
        f"{thinned}, {events} events, {recorder.markers} markers{said}"
    )


async def record(
    settings: Settings,
    path: Path,
    limit: RecordLimit,
    *,
    out: TextIO = sys.stdout,
    clock: Clock = system_clock,
    source: SnapshotSource | None = None,
) -> int:
    """Record until SIGINT/SIGTERM (or a write error); the exit code."""
    if source is None:
        from pgtop_ha.collect.poller import Poller

        source = Poller.from_settings(settings, clock)
    recorder = Recorder.create(path, settings, limit, role="recorder", clock=clock)
    stop = asyncio.Event()
    # The console's cadence: faster while something is wrong, so incidents are recorded finely.
    session = Session(
        clock=clock,
        judging=settings.judging(),
        keep=KEEP_EVENTS,
        recording=recorder,
        on_recording_failed=lambda _: stop.set(),
    )
    inbox = MarkerInbox("recorder", str(path))
    loop = asyncio.get_running_loop()
    last_status = -STATUS_EVERY_S

    def say(line: str) -> None:
        print(line, file=out, flush=True)

    def on_snapshot(snapshot: ClusterSnapshot) -> None:
        nonlocal last_status
        session.observe(snapshot)
        if loop.time() - last_status >= STATUS_EVERY_S:
            last_status = loop.time()
            say(status_line(recorder, len(session.events()), clock))

    def on_marker(text: str, source: str) -> None:
        at = session.mark(text, source).at
        say(f"{at.astimezone():%H:%M:%S} marker: {text}")

    async def markers() -> None:
        try:
            await inbox.serve(on_marker)
        except Exception as exc:  # markers are extra: the recording goes on without them
            say(f"pgtop-ha: markers are off ({clean(str(exc))[:200]})")

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    say(f"recording to {path} every {settings.interval:g} s (at most {limit.describe()}); Ctrl-C stops")

    poll = asyncio.create_task(source.run(on_snapshot, session.cadence), name="poll")
    listen = asyncio.create_task(markers(), name="markers")
    stopper = asyncio.create_task(stop.wait(), name="stop")
    try:
        await asyncio.wait([poll, stopper], return_when=asyncio.FIRST_COMPLETED)
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
        for task in (poll, listen, stopper):
            task.cancel()
        await asyncio.gather(poll, listen, stopper, return_exceptions=True)
        with contextlib.suppress(Exception):
            await source.aclose()
        recorder.close()
    failure = poll.exception() if poll.done() and not poll.cancelled() else None
    if failure is not None:
        raise failure
    if recorder.error is not None:
        say(f"pgtop-ha: recording stopped: {recorder.error}")
        return 1
    say(status_line(recorder, len(session.events()), clock).replace(" recording ", " recorded ", 1))
    return 0


def require_targets(settings: Settings) -> None:
    """ConfigError when the settings give nothing to record."""
    if (
        not settings.patroni.urls
        and not settings.nodes
        and not (settings.haproxy.url or settings.haproxy.socket)
    ):
        raise ConfigError("nothing to record: give --patroni URL (or [[nodes]] / --haproxy in the config)")


def run_record(
    settings: Settings, path: Path, limit: RecordLimit, source: SnapshotSource | None = None
) -> int:
    """`pgtop-ha record FILE`: ConfigError when there is nothing to poll; the exit code."""
    require_targets(settings)
    return run(record(settings, path, limit, source=source))
