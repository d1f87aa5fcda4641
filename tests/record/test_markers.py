"""Markers through unix sockets: a private directory, bounded cleaned text, stale sockets, no listener."""

from __future__ import annotations

import asyncio
import os
import socket
import threading
from pathlib import Path

import pytest

from pgtop_ha.errors import UserError
from pgtop_ha.record.markers import (
    MAX_TEXT,
    MarkerInbox,
    NobodyListening,
    marker_dir,
    private_dir,
    run_mark,
    send_marker,
)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """An XDG_RUNTIME_DIR of the test's own."""
    return {"XDG_RUNTIME_DIR": str(tmp_path)}


def test_directory_choice(tmp_path: Path) -> None:
    assert marker_dir({"XDG_RUNTIME_DIR": str(tmp_path)}) == tmp_path / "pgtop-ha"
    assert marker_dir({}) == Path(f"/tmp/pgtop-ha-{os.getuid()}")
    assert marker_dir({"XDG_RUNTIME_DIR": "relative/dir"}) == Path(f"/tmp/pgtop-ha-{os.getuid()}")


def test_private_dir_is_0700_and_refuses_open_or_linked_dirs(tmp_path: Path, env: dict[str, str]) -> None:
    made = private_dir(env)
    assert oct(made.stat().st_mode & 0o777) == "0o700"
    made.chmod(0o755)
    with pytest.raises(UserError, match="open to others"):
        private_dir(env)
    made.rmdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    made.symlink_to(elsewhere)
    with pytest.raises(UserError, match="not a directory"):
        private_dir(env)


async def test_marker_reaches_the_inbox_bounded_and_cleaned(env: dict[str, str]) -> None:
    got: list[tuple[str, str]] = []
    inbox = MarkerInbox("recorder", "/tmp/x.db", environ=env)
    task = asyncio.create_task(inbox.serve(lambda text, source: got.append((text, source))))
    await asyncio.wait_for(inbox.ready.wait(), 5)
    assert inbox.path is not None and oct(inbox.path.stat().st_mode & 0o777) == "0o600"
    hostile = "killed\x1b[31m primary\n" + "x" * 2000
    result = await asyncio.to_thread(send_marker, hostile, "test", env)
    assert result.received == [f"recorder (pid {os.getpid()}, /tmp/x.db)"]
    assert got[0][0].startswith("killed primary xxx") and len(got[0][0]) == MAX_TEXT
    assert got[0][1] == "test"
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert not inbox.path.exists()  # removed on the way out


async def test_inbox_refuses_garbage_and_survives(env: dict[str, str]) -> None:
    got: list[str] = []
    inbox = MarkerInbox("console", environ=env)
    task = asyncio.create_task(inbox.serve(lambda text, source: got.append(text)))
    await asyncio.wait_for(inbox.ready.wait(), 5)
    assert inbox.path is not None
    for payload in (b"not json\n", b'{"text": 5}\n', b'{"text": "   "}\n', b"x" * 10000 + b"\n"):
        reader, writer = await asyncio.open_unix_connection(str(inbox.path))
        writer.write(payload)
        await writer.drain()
        answer = await asyncio.wait_for(reader.read(), 5)
        writer.close()
        assert b'"ok": false' in answer, payload[:20]
    result = await asyncio.to_thread(send_marker, "still here", "test", env)
    assert len(result.received) == 1 and got == ["still here"]
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


def test_stale_sockets_are_removed_and_nobody_listening_is_exit_1(
    env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    directory = private_dir(env)
    stale = directory / "99999999.sock"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(stale))
    sock.close()  # bound, never listening: what a kill -9 leaves behind
    with pytest.raises(NobodyListening) as err:
        run_mark("killed primary", environ=env)
    assert err.value.exit_code == 1 and "\n" not in str(err.value)
    assert "no running console or recorder" in str(err.value)
    assert not stale.exists()


def test_empty_marker_is_refused(env: dict[str, str]) -> None:
    with pytest.raises(UserError, match="empty"):
        send_marker(" \x1b[0m \n", environ=env)


async def test_a_text_within_its_characters_is_never_refused_for_its_bytes(env: dict[str, str]) -> None:
    # 500 emoji (4 UTF-8 bytes, 12 bytes as JSON escapes) and quotes: the limit is in characters.
    got: list[str] = []
    inbox = MarkerInbox("console", environ=env)
    task = asyncio.create_task(inbox.serve(lambda text, source: got.append(text)))
    await asyncio.wait_for(inbox.ready.wait(), 5)
    for text in ("😀" * MAX_TEXT, '"' * MAX_TEXT, "\\" * MAX_TEXT):
        result = await asyncio.to_thread(send_marker, text, "😀" * 100, env)
        assert result.received and not result.failed, result.failed
    assert [len(t) for t in got] == [MAX_TEXT] * 3
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


def test_every_refusal_is_named(env: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    directory = private_dir(env)
    servers = []
    for name in ("101.sock", "102.sock"):
        # A socket that answers every request with a refusal of its own.
        srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        srv.bind(str(directory / name))
        srv.listen(1)
        servers.append(srv)

    def refuse(srv: socket.socket) -> None:
        conn, _ = srv.accept()
        with conn:
            conn.recv(8192)
            conn.sendall(b'{"ok": false, "error": "busy"}\n')

    threads = [threading.Thread(target=refuse, args=(s,), daemon=True) for s in servers]
    for th in threads:
        th.start()
    with pytest.raises(NobodyListening) as caught:
        run_mark("killed primary", environ=env)
    assert "101.sock: busy" in str(caught.value) and "102.sock: busy" in str(caught.value)
    for srv in servers:
        srv.close()
