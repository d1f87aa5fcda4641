"""`pgtop-ha serve`: the poller and the recorder without a screen, its stream to every viewer.

It holds the credentials; viewers get the snapshots as a recording holds them (secrets masked).
It polls every optional read, since any viewer may open any pane.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from pgtop_ha.clock import Clock, system_clock
from pgtop_ha.collect.snapshot_cli import READS
from pgtop_ha.engines.session import Session
from pgtop_ha.errors import UserError
from pgtop_ha.models.snapshot import ClusterSnapshot
from pgtop_ha.models.source import SnapshotSource
from pgtop_ha.models.text import clean
from pgtop_ha.record.headless import KEEP_EVENTS
from pgtop_ha.record.limits import RecordLimit
from pgtop_ha.record.markers import MarkerInbox, clean_marker
from pgtop_ha.record.recorder import Recorder, header_values, stored_json
from pgtop_ha.runtime import run
from pgtop_ha.serve import wire
from pgtop_ha.serve.address import Address, check_socket_path, claim_socket, share_with
from pgtop_ha.serve.hub import MAX_VIEWERS, Hub
from pgtop_ha.serve.peers import Token, new_token, token_path, user_name, write_token
from pgtop_ha.settings import Settings

if TYPE_CHECKING:
    from pgtop_ha.serve.web import WebView

STATUS_EVERY_S = 30.0


async def _listen(address: Address, hub: Hub, group: str | None, backlog: int) -> asyncio.Server:
    limit = wire.MAX_FROM_VIEWER
    if address.path is not None:
        check_socket_path(address.path)
        claim_socket(address.path)
        # Made private before anyone can connect: the mode is set by umask at bind time.
        old = os.umask(0o177)
        try:
            server = await asyncio.start_unix_server(
                hub.handle, path=address.path, limit=limit, backlog=backlog
            )
        except OSError as exc:
            raise UserError(
                f"--socket {address.path}: {exc.strerror or exc}; give a path in a directory you can write"
            ) from None
        finally:
            os.umask(old)
        share_with(address.path, group)
        return server
    try:
        return await asyncio.start_server(
            hub.handle, address.host, address.port, limit=limit, backlog=backlog
        )
    except OSError as exc:
        why = exc.strerror or exc
        raise UserError(f"--listen {address}: {why}; is another serve on that port?") from None


def _tcp_tokens(
    addresses: list[Address], tokens: tuple[Token, ...] | None
) -> tuple[Path | None, tuple[Token, ...]]:
    """The tokens TCP viewers prove themselves with, and the file the serve writes its own to."""
    if not any(a.path is None for a in addresses):
        return None, ()
    if tokens:
        return None, tokens
    sock = next(a.path for a in addresses if a.path is not None)
    return token_path(sock), (new_token(user_name(os.getuid())),)


async def serve(
    settings: Settings,
    addresses: list[Address],
    *,
    group: str | None = None,
    record: Path | None = None,
    limit: RecordLimit,
    web: WebView | None = None,
    out: TextIO = sys.stdout,
    clock: Clock = system_clock,
    source: SnapshotSource | None = None,
    tokens: tuple[Token, ...] | None = None,
    max_viewers: int = MAX_VIEWERS,
) -> int:
    """Poll, record and stream until SIGINT/SIGTERM; the exit code."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()

    def say(line: str) -> None:
        print(f"{clock().astimezone():%H:%M:%S} {clean(line)}", file=out, flush=True)

    if source is None:
        from pgtop_ha.collect.poller import Poller

        poller = Poller.from_settings(settings, clock)
        poller.set_needs(frozenset(READS))  # any viewer may open any pane
        source = poller
    recorder = Recorder.create(record, settings, limit, role="serve", clock=clock) if record else None
    session = Session(
        clock=clock,
        judging=settings.judging(),
        keep=KEEP_EVENTS,
        recording=recorder,
        on_recording_failed=lambda error: say(f"recording stopped: {error}"),
    )
    shown = header_values(settings, limit, "serve", clock())["settings"]
    hello: dict[str, Any] = {"settings": shown, "recording": str(record) if record else None}

    def on_marker(text: str, origin: str) -> None:
        text = clean_marker(text)
        if not text:
            return
        at = session.mark(text, origin).at
        hub.send(wire.marker_line(at, text, origin))
        say(f"marker from {origin}: {text}")

    token_file, known = _tcp_tokens(addresses, tokens)
    hub = Hub(
        hello,
        lambda: wire.events_line(session.events()),
        on_marker,
        say,
        tokens=known,
        max_viewers=max_viewers,
        group=group is not None,
    )
    servers = []
    made: list[Path] = []  # sockets and the token file, gone when the serve ends
    try:
        for address in addresses:
            servers.append(await _listen(address, hub, group, max_viewers))
            if address.path is not None:
                made.append(address.path)
        if token_file is not None:
            write_token(token_file, known[0])
            made.append(token_file)
    except BaseException:
        for server in servers:
            server.close()
        if recorder is not None and record is not None:
            recorder.close()
            made.append(record)  # a failed start leaves no file behind, not even the recording
        for path in made:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        raise
    cycles = 0

    def on_snapshot(snapshot: ClusterSnapshot) -> None:
        nonlocal cycles
        cycles += 1
        scrubbed = stored_json(snapshot)  # once, for the recording and every viewer
        session.observe(snapshot, scrubbed)
        hub.snapshot(wire.snapshot_line(scrubbed))

    async def status() -> None:
        while True:
            await asyncio.sleep(STATUS_EVERY_S)
            say(f"{cycles} cycles, {len(hub.viewers)} viewers, {len(session.events())} events")

    inbox = MarkerInbox("serve", ", ".join(map(str, addresses)))

    async def markers() -> None:
        try:
            await inbox.serve(on_marker)
        except Exception as exc:  # `pgtop-ha mark` is extra: serving goes on without it
            say(f"markers from `pgtop-ha mark` are off ({clean(str(exc))[:200]})")

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    for address in addresses:
        if address.path is None and token_file is not None:
            say(f"serving on {address}: `pgtop-ha attach {address} --token-file {token_file}`")
        elif address.path is None:
            say(f"serving on {address} to the holders of {len(known)} token(s) (--tokens)")
        else:
            say(f"serving on {address}: `pgtop-ha attach {address}`")
    if recorder is not None:
        say(f"recording to {record} (at most {limit.describe()})")
    tasks = [
        asyncio.create_task(source.run(on_snapshot, session.cadence), name="poll"),
        asyncio.create_task(markers(), name="markers"),
        asyncio.create_task(status(), name="status"),
        asyncio.create_task(stop.wait(), name="stop"),
    ]
    if web is not None:
        tasks.append(asyncio.create_task(web.run(say), name="web"))
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
        await hub.aclose()
        for server in servers:
            server.close()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        with contextlib.suppress(Exception):
            await source.aclose()
        for path in made:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        if recorder is not None:
            recorder.close()
    for task in tasks:
        failure = task.exception() if task.done() and not task.cancelled() else None
        if failure is not None:
            raise failure
    say(f"stopped after {cycles} cycles")
    return 0


def run_serve(
    settings: Settings,
    addresses: list[Address],
    *,
    group: str | None,
    record: Path | None,
    limit: RecordLimit,
    web: WebView | None,
    tokens: tuple[Token, ...] | None = None,
    max_viewers: int = MAX_VIEWERS,
) -> int:
    """`pgtop-ha serve`: UserError when there is nothing to poll; the exit code."""
    haproxy = settings.haproxy.url or settings.haproxy.socket
    if not settings.patroni.urls and not settings.nodes and not haproxy:
        raise UserError("nothing to serve: give --patroni URL (or [[nodes]] / --haproxy in the config)")
    return run(
        serve(
            settings,
            addresses,
            group=group,
            record=record,
            limit=limit,
            web=web,
            tokens=tokens,
            max_viewers=max_viewers,
        )
    )
