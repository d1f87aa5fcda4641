"""`serve` and its viewers on a unix socket, fed by a scripted source: what each viewer gets.

A scripted source stands in for the poller: these are the stream's rules, not the cluster's.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import socket
import stat
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from pgtop_ha.errors import UserError
from pgtop_ha.models.snapshot import ClusterInfo, ClusterSnapshot, Member
from pgtop_ha.record.limits import parse_limit
from pgtop_ha.serve import hub as hub_module
from pgtop_ha.serve import wire
from pgtop_ha.serve.address import Address, claim_socket
from pgtop_ha.serve.peers import user_name
from pgtop_ha.serve.server import serve
from pgtop_ha.serve.viewer import AttachSource, ServeEnded
from pgtop_ha.settings import Settings
from tests.support.scripted import ScriptedSource

T0 = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)


def snap(i: int, leader: str = "a") -> ClusterSnapshot:
    members = tuple(Member(name=n, role="leader" if n == leader else "replica") for n in ("a", "b"))
    return ClusterSnapshot(
        taken_at=T0 + timedelta(seconds=i), cluster=ClusterInfo(leader=leader), members=members
    )


async def until(condition: Callable[[], bool], within_s: float = 10.0) -> None:
    """Poll ``condition()`` until true, or fail at the deadline."""
    deadline = asyncio.get_running_loop().time() + within_s
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "condition not met in time"
        await asyncio.sleep(0.02)


@contextlib.asynccontextmanager
async def serving(tmp_path: Path, source: ScriptedSource) -> AsyncIterator[Path]:
    sock = tmp_path / "serve.sock"
    settings = Settings(patroni={"urls": ("http://watch:s3cret-rest@127.0.0.1:1",)})
    task = asyncio.create_task(
        serve(
            settings,
            [Address(path=sock)],
            limit=parse_limit("1GiB"),
            out=io.StringIO(),
            source=source,
        )
    )
    await until(lambda: sock.exists() or task.done())
    try:
        yield sock
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def lines(reader: asyncio.StreamReader, n: int) -> list[dict[str, object]]:
    out = []
    for _ in range(n):
        out.append(json.loads(await asyncio.wait_for(reader.readline(), 10)))
    return out


async def test_a_late_viewer_gets_what_the_serve_holds_then_the_live_stream(tmp_path: Path) -> None:
    source = ScriptedSource([snap(0), snap(1)])
    async with serving(tmp_path, source) as sock:
        await until(lambda: source.sent == 2)
        assert stat.S_IMODE(os.stat(sock).st_mode) == 0o600
        viewer = await AttachSource.connect(Address(path=sock))
        assert viewer.hello["backlog"] == 2
        # Settings cross without any secret: the REST password never reaches a viewer.
        assert "s3cret-rest" not in json.dumps(viewer.hello)
        held: list[tuple[int, int]] = []
        shown: list[ClusterSnapshot] = []
        viewer.on_backlog = lambda events, before: held.append((len(events), len(before)))
        run = asyncio.create_task(viewer.run(shown.append, lambda: 1.0))
        await until(lambda: len(shown) == 1)
        assert held == [(0, 1)] and shown[0].taken_at == snap(1).taken_at
        source.push(snap(2, leader="b"))
        await until(lambda: len(shown) == 2)
        assert shown[1].cluster.leader == "b"
        run.cancel()
        await viewer.aclose()


async def test_a_marker_from_one_viewer_comes_back_stamped_to_every_viewer(tmp_path: Path) -> None:
    source = ScriptedSource([snap(0)])
    async with serving(tmp_path, source) as sock:
        marks: dict[int, list[tuple[datetime, str, str]]] = {0: [], 1: []}
        viewers = [await AttachSource.connect(Address(path=sock)) for _ in range(2)]
        runs = []
        for i, v in enumerate(viewers):
            v.on_marker = lambda at, text, src, i=i: marks[i].append((at, text, src))
            runs.append(asyncio.create_task(v.run(lambda s: None, lambda: 1.0)))
        viewers[0].send_mark("killed \x1b[31mprimary")
        await until(lambda: all(marks.values()))
        assert marks[0] == marks[1]
        at, text, src = marks[0][0]
        assert (
            text == "killed primary"
            and src == f"{user_name(os.getuid())} via socket"
            and at.tzinfo is not None
        )
        for run in runs:
            run.cancel()
        for v in viewers:
            await v.aclose()


async def test_a_viewer_that_falls_behind_is_dropped_and_the_others_go_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(hub_module, "QUEUE", 4)
    monkeypatch.setattr(hub_module, "BYE_TIMEOUT_S", 30.0)  # time to read its last line below
    big = snap(0).model_copy(update={"errors": ("x" * 300_000,)})  # fills the socket buffers quickly
    source = ScriptedSource([big])
    async with serving(tmp_path, source) as sock:
        # A viewer that never reads: its queue fills while the other keeps up.
        stuck = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        stuck.setblocking(False)
        await asyncio.get_running_loop().sock_connect(stuck, str(sock))
        good = await AttachSource.connect(Address(path=sock))
        got: list[ClusterSnapshot] = []
        pushed: list[int] = []
        run = asyncio.create_task(good.run(got.append, lambda: 1.0))
        for i in range(1, 60):
            source.push(big.model_copy(update={"taken_at": T0 + timedelta(seconds=i)}))
            pushed.append(i)
            await until(lambda: len(got) > len(pushed))
        assert len(got) == 60
        # Read now, its stream ends with the line saying why, within the serve's grace for it.
        received = bytearray()
        while chunk := await asyncio.wait_for(asyncio.get_running_loop().sock_recv(stuck, 1 << 20), 10):
            received += chunk
        stuck.close()
        bye = json.loads(bytes(received).splitlines()[-1])
        assert bye["t"] == "bye" and "fell 4 lines behind" in bye["text"]
        run.cancel()
        await good.aclose()


async def test_garbage_from_a_viewer_gets_a_line_and_the_serve_goes_on(tmp_path: Path) -> None:
    source = ScriptedSource([snap(0)])
    async with serving(tmp_path, source) as sock:
        reader, writer = await asyncio.open_unix_connection(sock)
        hello, _events, _snap = await lines(reader, 3)
        assert hello["t"] == "hello" and hello["version"] == wire.VERSION
        writer.write(b"GET / HTTP/1.1\r\n\r\n")
        got = await lines(reader, 1)
        assert got[0]["t"] == "bye" and "not a line of JSON" in str(got[0]["text"])
        assert await asyncio.wait_for(reader.read(), 10) == b""
        writer.close()
        # A line past the limit, and a line of another type: each ends that viewer only.
        for junk in (b"x" * (wire.MAX_FROM_VIEWER + 10) + b"\n", b'{"t":"switchover"}\n'):
            reader, writer = await asyncio.open_unix_connection(sock)
            await lines(reader, 3)
            writer.write(junk)
            bye = (await lines(reader, 1))[0]
            assert bye["t"] == "bye" and "it sent" in str(bye["text"])
            writer.close()
        viewer = await AttachSource.connect(Address(path=sock))
        assert viewer.hello["backlog"] == 1
        await viewer.aclose()


async def test_a_viewer_is_told_when_the_serve_stops(tmp_path: Path) -> None:
    source = ScriptedSource([snap(0)])
    async with serving(tmp_path, source) as sock:
        viewer = await AttachSource.connect(Address(path=sock))
        run = asyncio.create_task(viewer.run(lambda s: None, lambda: 1.0))
        await asyncio.sleep(0)
    with pytest.raises(ServeEnded, match="serve stopped"):
        await asyncio.wait_for(run, 10)
    await viewer.aclose()


async def test_socket_paths_taken_stale_or_not_a_socket(tmp_path: Path) -> None:
    plain = tmp_path / "file.sock"
    plain.write_text("")
    with pytest.raises(UserError, match="exists and is not a socket"):
        claim_socket(plain)
    source = ScriptedSource([snap(0)])
    async with serving(tmp_path, source) as sock:
        with pytest.raises(UserError, match="another pgtop-ha serve listens on"):
            claim_socket(sock)
    # Left by a serve killed with -9: nobody listens, so the next serve takes the path.
    stale = tmp_path / "stale.sock"
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(stale))
    claim_socket(stale)
    assert not stale.exists()


async def test_attach_names_the_address_and_the_fix(tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"no pgtop-ha serve at .*missing.sock \(no such socket\)"):
        await AttachSource.connect(Address(path=tmp_path / "missing.sock"))

    async def not_serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"SSH-2.0-OpenSSH_9.2\r\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(not_serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        with pytest.raises(UserError, match="is it a pgtop-ha serve"):
            await AttachSource.connect(Address(host="127.0.0.1", port=port))
