"""`serve` against hostile viewers: no credential, a marker flood, a viewer that never reads, too many.

A scripted source stands in for the poller; the viewers are raw sockets doing what a hostile
local user would, beside real `AttachSource` viewers that must keep working throughout.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import io
import json
import os
import resource
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from pgtop_ha.errors import UserError
from pgtop_ha.models.snapshot import ClusterSnapshot
from pgtop_ha.record.limits import parse_limit
from pgtop_ha.record.reader import Recording
from pgtop_ha.serve import hub as hub_module
from pgtop_ha.serve import viewer as viewer_module
from pgtop_ha.serve import wire
from pgtop_ha.serve.address import Address
from pgtop_ha.serve.peers import Token, read_tokens, token_path, user_name
from pgtop_ha.serve.server import serve
from pgtop_ha.serve.viewer import AttachSource
from pgtop_ha.settings import Settings
from tests.serve.test_serve_stream import T0, lines, snap, until
from tests.support.ports import free_port
from tests.support.scripted import ScriptedSource

ME = f"{user_name(os.getuid())} via socket"


@contextlib.asynccontextmanager
async def serving(
    tmp_path: Path, source: ScriptedSource, *, tcp: bool = False, **options: Any
) -> AsyncIterator[tuple[Path, Address | None, io.StringIO]]:
    """A serve in ``tmp_path`` (and on a loopback port with ``tcp``): its socket, TCP address and log."""
    sock = tmp_path / "serve.sock"
    addresses = [Address(path=sock)]
    listen = Address(host="127.0.0.1", port=free_port()) if tcp else None
    if listen is not None:
        addresses.append(listen)
    out = io.StringIO()
    settings = Settings(patroni={"urls": ("http://127.0.0.1:1",)})
    options.setdefault("limit", parse_limit("1GiB"))
    task = asyncio.create_task(serve(settings, addresses, out=out, source=source, **options))
    await until(
        lambda: (sock.exists() and (listen is None or "serving on 127" in out.getvalue())) or task.done()
    )
    try:
        yield sock, listen, out
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def _never_reading(sock: Path) -> socket.socket:
    """A viewer that connects and never reads (a small receive buffer, so the serve's fills)."""
    stuck = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stuck.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    stuck.connect(str(sock))
    return stuck


async def _raw(address: Address) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    if address.path is not None:
        return await asyncio.open_unix_connection(address.path)
    return await asyncio.open_connection(address.host, address.port)


async def test_a_tcp_viewer_gets_nothing_without_the_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(hub_module, "AUTH_TIMEOUT_S", 0.5)
    async with serving(tmp_path, ScriptedSource([snap(0)]), tcp=True) as (sock, listen, out):
        assert listen is not None
        token_file = token_path(sock)
        assert stat.S_IMODE(os.stat(token_file).st_mode) == 0o600
        secret = token_file.read_text().split()[-1]
        # Silent, wrong, or a marker instead of a token: not one byte back, then closed.
        for first in (b"", b'{"t":"auth","token":"guess-guess-guess-guess"}\n', b'{"t":"mark","text":"x"}\n'):
            reader, writer = await _raw(listen)
            writer.write(first)
            assert await asyncio.wait_for(reader.read(), 10) == b""
            writer.close()
        assert out.getvalue().count("refused: no valid token") == 3
        # The token proves it: hello, then its markers carry the token's name, not the name it sends.
        viewer = await AttachSource.connect(listen, secret)
        marks: list[tuple[object, str, str]] = []
        viewer.on_marker = lambda at, text, source: marks.append((at, text, source))
        run = asyncio.create_task(viewer.run(lambda s: None, lambda: 1.0))
        viewer._writer.write(wire.encode("mark", text="from tcp", source="the-dba"))
        await until(lambda: bool(marks))
        assert marks[0][1:] == ("from tcp", f"{user_name(os.getuid())} via tcp")
        run.cancel()
        await viewer.aclose()
        with pytest.raises(UserError, match="token is wrong or missing"):
            await AttachSource.connect(listen, "w" * 43)
    assert not token_file.exists() and not sock.exists()  # nothing left behind


async def test_named_tokens_name_the_viewer(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text(
        "# who may attach over TCP\nalice aaaaaaaaaaaaaaaaaaaaaaaa\nbob bbbbbbbbbbbbbbbbbbbbbbbb\n"
    )
    tokens.chmod(0o644)
    with pytest.raises(UserError, match="readable by others"):
        read_tokens(tokens)
    tokens.chmod(0o600)
    known = read_tokens(tokens)
    assert known == (Token("alice", "a" * 24), Token("bob", "b" * 24))
    bad = tmp_path / "bad"
    bad.write_text("alice short\n")
    bad.chmod(0o600)
    with pytest.raises(UserError, match="line 1: write NAME TOKEN"):
        read_tokens(bad)
    async with serving(tmp_path, ScriptedSource([snap(0)]), tcp=True, tokens=known) as (sock, listen, _):
        assert listen is not None and not token_path(sock).exists()  # the named tokens only
        viewer = await AttachSource.connect(listen, "b" * 24)
        marks: list[str] = []
        viewer.on_marker = lambda at, text, source: marks.append(source)
        run = asyncio.create_task(viewer.run(lambda s: None, lambda: 1.0))
        viewer.send_mark("bob was here")
        await until(lambda: bool(marks))
        assert marks == ["bob via tcp"]
        run.cancel()
        await viewer.aclose()


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to act as a second local user")
async def test_a_second_local_user_can_neither_attach_nor_read_the_token(tmp_path: Path) -> None:
    # A directory anyone may enter: only the files' own modes stand in the way.
    shared = Path(tempfile.mkdtemp(prefix="pgtop-ha-serve-", dir="/tmp"))
    os.chmod(shared, 0o755)
    try:
        said = await _second_user(shared)
    finally:
        shutil.rmtree(shared, ignore_errors=True)
    assert said[:2] == ["token refused", "socket refused"], said


async def _second_user(tmp_path: Path) -> list[str]:
    """What uid 65534 got, trying to read the serve's token and to open its socket."""
    async with serving(tmp_path, ScriptedSource([snap(0)]), tcp=True) as (sock, listen, _):
        assert listen is not None
        probe = (
            "import socket, sys\n"
            "try:\n    open(sys.argv[2]).read(); print('token read')\n"
            "except PermissionError:\n    print('token refused')\n"
            "s = socket.socket(socket.AF_UNIX)\n"
            "try:\n    s.connect(sys.argv[1]); print('socket open')\n"
            "except PermissionError:\n    print('socket refused')\n"
        )
        result = await asyncio.to_thread(
            subprocess.run,
            [sys.executable, "-c", probe, str(sock), str(token_path(sock))],
            user=65534,
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        return result.stdout.split("\n")


async def test_a_marker_flood_drops_only_the_flooder(tmp_path: Path) -> None:
    source = ScriptedSource([snap(0)])
    record = tmp_path / "rec.pgtop"
    async with serving(tmp_path, source, record=record) as (sock, _, out):
        good = await AttachSource.connect(Address(path=sock))
        marks: list[str] = []
        good.on_marker = lambda at, text, src: marks.append(text)
        got: list[ClusterSnapshot] = []
        run = asyncio.create_task(good.run(got.append, lambda: 1.0))
        reader, writer = await _raw(Address(path=sock))
        await lines(reader, 3)
        writer.write(b"".join(wire.encode("mark", text=f"flood {i}") for i in range(70)))
        received = await asyncio.wait_for(reader.read(), 10)
        bye = json.loads(received.splitlines()[-1])
        assert bye["t"] == "bye" and "markers faster than" in bye["text"]
        await until(lambda: len(marks) == hub_module.MARKER_BURST)
        # The real viewer is still attached, and still gets snapshots.
        source.push(snap(1))
        await until(lambda: len(got) == 2)
        assert not run.done()
        assert "dropped: it sent markers faster" in out.getvalue()
        run.cancel()
        await good.aclose()
    recording = Recording.open(record)
    try:
        assert len(recording.markers()) == hub_module.MARKER_BURST
    finally:
        recording.close()


async def test_a_viewer_that_never_reads_is_closed_by_the_write_deadline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(hub_module, "WRITE_TIMEOUT_S", 0.5)
    big = snap(0).model_copy(update={"errors": ("x" * 400_000,)})
    source = ScriptedSource([big])
    async with serving(tmp_path, source) as (sock, _, out):
        stuck = _never_reading(sock)
        await until(lambda: "closed: it took nothing for 0.5 s" in out.getvalue())
        await until(lambda: "left (0 now)" in out.getvalue())
        # Its end of the connection is closed too: reading now ends (after what was buffered).
        stuck.setblocking(False)
        loop = asyncio.get_running_loop()
        ended = reset = False
        try:
            while await asyncio.wait_for(loop.sock_recv(stuck, 1 << 20), 10):
                pass
            ended = True
        except ConnectionResetError:
            reset = True  # aborted with data unread: closed all the same
        stuck.close()
        assert ended or reset


async def test_past_the_cap_a_viewer_is_told_the_serve_is_busy(tmp_path: Path) -> None:
    async with serving(tmp_path, ScriptedSource([snap(0)]), max_viewers=2) as (sock, _, _out):
        first = [await AttachSource.connect(Address(path=sock)) for _ in range(2)]
        with pytest.raises(UserError, match=r"busy: 2 viewers attached.*--max-viewers"):
            await AttachSource.connect(Address(path=sock))
        await first[0].aclose()
        await until(lambda: "left (1 now)" in _out.getvalue())
        again = await AttachSource.connect(Address(path=sock))
        for viewer in (first[1], again):
            await viewer.aclose()


def _all_got(counts: list[int], n: int) -> bool:
    """Every honest viewer (all but the first, the flooder) got ``n`` snapshots."""
    return min(counts[1:]) >= n


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()


async def test_two_hundred_viewers_fifty_stuck_one_flooding_and_memory_stays_flat(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(hub_module, "WRITE_TIMEOUT_S", 1.0)
    snapshot = snap(0).model_copy(update={"errors": ("y" * 50_000,)})
    source = ScriptedSource([snapshot])
    loop = asyncio.get_running_loop()
    async with serving(tmp_path, source) as (sock, _, out):
        readers: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
        stuck: list[socket.socket] = []
        for i in range(200):
            if i % 4 == 0:
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                s.setblocking(False)
                await loop.sock_connect(s, str(sock))
                stuck.append(s)
            else:
                readers.append(await asyncio.open_unix_connection(sock, limit=wire.MAX_FROM_SERVER))
        counts = [0] * len(readers)

        async def drain(k: int, reader: asyncio.StreamReader) -> None:
            while line := await reader.readline():
                counts[k] += line.startswith(b'{"t":"snap"')

        draining = [asyncio.create_task(drain(k, r)) for k, (r, _) in enumerate(readers)]
        flooder = readers[0][1]
        base = _rss_bytes()
        for i in range(1, 41):
            if not flooder.is_closing():  # until the serve drops it
                flooder.write(wire.encode("mark", text=f"flood {i}"))
            source.push(snapshot.model_copy(update={"taken_at": T0 + timedelta(seconds=i)}))
            await until(functools.partial(_all_got, counts, i + 1), 30)  # every honest viewer has it
        await until(lambda: out.getvalue().count("closed: it took nothing") == 50, 30)
        await until(lambda: min(counts[1:]) == 41, 30)  # every honest viewer got every snapshot
        assert "dropped: it sent markers faster" in out.getvalue()
        grown = _rss_bytes() - base
        assert grown < 64 * 1024**2, f"the serve grew {grown / 1024**2:.0f} MiB"
        for task in draining:
            task.cancel()
        for _, writer in readers:
            writer.close()
        for s in stuck:
            s.close()


async def test_attach_takes_no_more_than_a_serve_keeps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A peer that announces 10⁹ snapshots and streams: attach keeps what a serve would, at its own pace."""
    monkeypatch.setattr(viewer_module, "MIN_GAP_S", 0.02)
    sock = tmp_path / "liar.sock"
    line = wire.snapshot_line(snap(0).model_dump_json())

    async def liar(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(wire.encode("hello", version=wire.VERSION, backlog=10**9, settings={}))
        writer.write(wire.encode("events", events=[]))
        with contextlib.suppress(ConnectionError):
            for _ in range(700):
                writer.write(line)
                await writer.drain()
            writer.write(b"[" * 5000 + b"\n")
            await writer.drain()
            await asyncio.sleep(30)

    server = await asyncio.start_unix_server(liar, path=str(sock))
    async with server:
        viewer = await AttachSource.connect(Address(path=sock))
        held: list[int] = []
        shown: list[ClusterSnapshot] = []
        viewer.on_backlog = lambda events, before: held.append(len(before))
        started = asyncio.get_running_loop().time()
        with pytest.raises(UserError, match="nested deeper than"):
            await asyncio.wait_for(viewer.run(shown.append, lambda: 1.0), 60)
        assert held == [599]
        assert len(shown) == 700 - 600 + 1
        assert asyncio.get_running_loop().time() - started >= 100 * 0.02  # live ones at most so often
        await viewer.aclose()


async def test_attach_ends_when_the_serve_stops(tmp_path: Path) -> None:
    from pgtop_ha.console import attach_sections
    from pgtop_ha.ui.attach import AttachApp

    source = ScriptedSource([snap(0)])
    async with contextlib.AsyncExitStack() as stack:
        async with serving(tmp_path, source) as (sock, _, _out):
            viewer = await AttachSource.connect(Address(path=sock))
            app = AttachApp(attach_sections(viewer.hello, "dark"), viewer)
            await stack.enter_async_context(app.run_test(size=(100, 30)))
            await until(lambda: app.received >= 1)
        # The serve has stopped: the viewer says why and ends, with no stale screen left up.
        await until(lambda: app.ended is not None, 15)
        await until(lambda: app.return_code == 1, 15)
    assert "serve stopped" in str(app.ended) and "\n" not in str(app.ended)


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["serve", "--socket", "/nonexistent-dir/s.sock"], "no such directory"),
        (["serve", "--socket", "/tmp/" + "s" * 120 + ".sock"], "over the 107"),
        (["serve", "--tokens", "/nonexistent-tokens"], "--tokens is for TCP viewers"),
        (["serve", "--listen", "127.0.0.1:1", "--tokens", "/nonexistent-tokens"], "no such file"),
        (["serve", "--max-viewers", "0"], "give a whole number"),
        (["attach", "127.0.0.1:9", "--token-file", "/nonexistent-token"], "no such file"),
    ],
)
def test_bad_invocations_are_one_line(argv: list[str], said: str, capsys: pytest.CaptureFixture[str]) -> None:
    from pgtop_ha.cli import main

    assert main(["--patroni", "http://127.0.0.1:1", *argv]) == 2
    err = capsys.readouterr().err
    assert said in err and "Traceback" not in err and "report it" not in err


def test_a_failed_start_leaves_no_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from pgtop_ha.cli import main

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        sock, record = tmp_path / "s.sock", tmp_path / "r.pgtop"
        argv = ["--patroni", "http://127.0.0.1:1", "serve", "--socket", str(sock), "--record", str(record),
                "--listen", f"127.0.0.1:{port}"]  # fmt: skip
        assert main(argv) == 2
    err = capsys.readouterr().err
    assert "--listen" in err and err.count("\n") == 1
    assert sorted(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "argv",
    [["check", "--bogus"], ["check", "--wait-healthy", "soon"], ["--nope", "check"], ["check", "extra"]],
)
def test_check_usage_errors_are_unknown(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    from pgtop_ha.cli import main

    assert main(argv) == 3
    out = capsys.readouterr().out
    assert out.startswith("PGTOP-HA UNKNOWN - usage: ") and out.count("\n") == 1


def test_attach_over_tcp_without_a_token_file_says_how(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pgtop_ha.serve.peers import tcp_token

    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    (tmp_path / "pgtop-ha").mkdir(mode=0o700)
    with pytest.raises(UserError, match="needs the serve's token: give --token-file"):
        tcp_token(Address(host="127.0.0.1", port=9), None)
    with pytest.raises(UserError, match="a socket needs none"):
        tcp_token(Address(path=tmp_path / "s.sock"), tmp_path / "t")


async def test_q_answers_while_a_peer_floods_the_viewer(tmp_path: Path) -> None:
    from pgtop_ha.console import attach_sections
    from pgtop_ha.ui.attach import AttachApp

    sock = tmp_path / "flood.sock"
    line = wire.snapshot_line(snap(0).model_dump_json())

    async def flood(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(wire.encode("hello", version=wire.VERSION, backlog=10**9, settings={}))
        writer.write(wire.encode("events", events=[]))
        with contextlib.suppress(ConnectionError, RuntimeError):
            while not writer.is_closing():
                writer.write(line * 50)
                await writer.drain()

    server = await asyncio.start_unix_server(flood, path=str(sock))
    async with server:
        viewer = await AttachSource.connect(Address(path=sock))
        app = AttachApp(attach_sections(viewer.hello, "dark"), viewer)
        async with app.run_test(size=(100, 30)) as pilot:
            await until(lambda: app.received >= 1, 30)
            await asyncio.wait_for(pilot.press("q"), 10)
            await until(lambda: app.return_code is not None, 10)
        assert app.return_code == 0 and app.ended is None  # quit by the key, not by the stream
        await viewer.aclose()


async def test_a_dropped_viewer_that_never_reads_is_closed_at_its_last_line_deadline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(hub_module, "QUEUE", 2)
    monkeypatch.setattr(hub_module, "BYE_TIMEOUT_S", 0.5)
    big = snap(0).model_copy(update={"errors": ("x" * 400_000,)})
    source = ScriptedSource([big])
    async with serving(tmp_path, source) as (sock, _, out):
        stuck = _never_reading(sock)
        await until(lambda: "attached (1 now)" in out.getvalue())
        for i in range(1, 6):
            source.push(big.model_copy(update={"taken_at": T0 + timedelta(seconds=i)}))
        await until(lambda: "dropped: it fell 2 lines behind" in out.getvalue())
        # Closed well before the 20 s a write may take: the drop does not wait behind it.
        dropped = asyncio.get_running_loop().time()
        await until(lambda: "left (0 now)" in out.getvalue(), 5)
        assert asyncio.get_running_loop().time() - dropped < hub_module.WRITE_TIMEOUT_S / 4
        stuck.close()
