"""Markers: `pgtop-ha mark TEXT` stamps the timeline of every console and recorder of this user.

Each listens on ``<pid>.sock`` (0600) in a private directory (``$XDG_RUNTIME_DIR/pgtop-ha`` or
``/tmp/pgtop-ha-<uid>``, 0700, never a symlink); ``mark`` sends one JSON line to each socket and
removes sockets nobody listens on.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import stat
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pgtop_ha.errors import UserError
from pgtop_ha.models.text import clean

MAX_TEXT = 500  # characters of a marker
# Bytes of one request or answer: MAX_TEXT characters of 4 UTF-8 bytes (sent unescaped), and room.
MAX_LINE = 8192
TIMEOUT_S = 2.0  # per socket: a frozen console must not hold `mark` up for long


class NobodyListening(UserError):
    """`mark` found no console or recorder to stamp (exit 1, as the brief of `mark` says)."""

    exit_code = 1


def marker_dir(environ: Mapping[str, str] | None = None) -> Path:
    """Where the sockets live: $XDG_RUNTIME_DIR/pgtop-ha, else /tmp/pgtop-ha-<uid>."""
    env = os.environ if environ is None else environ
    runtime = env.get("XDG_RUNTIME_DIR", "")
    if runtime and os.path.isabs(runtime):
        return Path(runtime) / "pgtop-ha"
    return Path("/tmp") / f"pgtop-ha-{os.getuid()}"  # noqa: S108  (checked private below)


def check_private(path: Path) -> None:
    """UserError unless ``path`` is a real directory of this user that no one else may enter."""
    st = os.lstat(path)
    fix = f"remove it (rm -r {path}) and start again"
    if not stat.S_ISDIR(st.st_mode):
        raise UserError(f"{path} is not a directory (a symlink or file?); {fix}")
    if st.st_uid != os.getuid():
        raise UserError(f"{path} belongs to uid {st.st_uid}, not you; {fix}")
    if st.st_mode & 0o077:
        raise UserError(
            f"{path} is open to others (mode {stat.S_IMODE(st.st_mode):o}); chmod 700 it or {fix}"
        )


def private_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The socket directory, created 0700 when missing, checked to be private."""
    path = marker_dir(environ)
    with contextlib.suppress(FileExistsError):
        path.mkdir(mode=0o700)
    check_private(path)
    return path


def clean_marker(text: str) -> str:
    """A marker's text as stored: no control characters, one line, at most MAX_TEXT characters."""
    return " ".join(clean(text[: MAX_TEXT * 4]).split())[:MAX_TEXT]


def peer_uid(sock: socket.socket | None) -> int | None:
    """The uid at the other end of a unix socket (Linux's SO_PEERCRED), None where unknown."""
    if sock is None or sock.family != socket.AF_UNIX or not hasattr(socket, "SO_PEERCRED"):
        return None
    try:
        creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    except OSError:
        return None
    return int(struct.unpack("3i", creds)[1])


class MarkerInbox:
    """One process's socket: every marker received goes to ``on_marker(text, source)``."""

    def __init__(self, role: str, label: str = "", environ: Mapping[str, str] | None = None) -> None:
        self.role = role
        self.label = label
        self._environ = environ
        self.path: Path | None = None
        self.received = 0
        self.ready = asyncio.Event()

    async def serve(self, on_marker: Callable[[str, str], object]) -> None:
        """Listen until cancelled; the socket file is removed on the way out."""
        directory = private_dir(self._environ)
        path = directory / f"{os.getpid()}.sock"
        with contextlib.suppress(FileNotFoundError):
            path.unlink()  # left by an earlier process that had our pid
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.bind(str(path))
            # The directory is 0700 already; 0600 on the socket as well, in case it is ever moved.
            os.chmod(path, 0o600)
        except OSError:
            sock.close()
            raise

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                answer = await self._answer(reader, writer, on_marker)
                writer.write(json.dumps(answer).encode() + b"\n")
                await writer.drain()
            except (OSError, TimeoutError, ValueError):
                pass
            finally:
                writer.close()

        server = await asyncio.start_unix_server(handle, sock=sock, limit=MAX_LINE)
        self.path = path
        self.ready.set()
        try:
            await asyncio.Future()  # until cancelled
        finally:
            server.close()
            with contextlib.suppress(OSError):
                path.unlink()

    async def _answer(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        on_marker: Callable[[str, str], object],
    ) -> dict[str, Any]:
        uid = peer_uid(writer.get_extra_info("socket"))
        if uid is not None and uid not in (os.getuid(), 0):
            return {"ok": False, "error": "not your console"}
        try:
            async with asyncio.timeout(TIMEOUT_S):
                line = await reader.readuntil(b"\n")
        except (asyncio.LimitOverrunError, asyncio.IncompleteReadError):
            return {"ok": False, "error": f"request too long or cut short (max {MAX_LINE} bytes)"}
        try:
            request = json.loads(line)
        except ValueError:
            return {"ok": False, "error": "not JSON"}
        if not isinstance(request, dict) or not isinstance(request.get("text"), str):
            return {"ok": False, "error": "no text"}
        text = clean_marker(request["text"])
        source = clean_marker(str(request.get("source") or "pgtop-ha mark"))[:100]
        if not text:
            return {"ok": False, "error": "empty marker"}
        on_marker(text, source)
        self.received += 1
        return {"ok": True, "role": self.role, "pid": os.getpid(), "label": self.label}


@dataclass
class Delivery:
    """What `mark` achieved: who received it, which sockets were stale (removed), which failed."""

    received: list[str] = field(default_factory=list)
    stale: list[Path] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    directory: Path | None = None


def _describe(answer: dict[str, Any], path: Path) -> str:
    role = clean(str(answer.get("role") or "process"))[:20]
    pid = answer.get("pid") if isinstance(answer.get("pid"), int) else path.stem
    label = clean(str(answer.get("label") or ""))[:120]
    return f"{role} (pid {pid}{', ' + label if label else ''})"


def _send_one(path: Path, payload: bytes) -> dict[str, Any]:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(TIMEOUT_S)
        sock.connect(str(path))
        sock.sendall(payload)
        data = b""
        while not data.endswith(b"\n") and len(data) < MAX_LINE:
            chunk = sock.recv(MAX_LINE)
            if not chunk:
                break
            data += chunk
    answer = json.loads(data or b"{}")
    return answer if isinstance(answer, dict) else {}


def send_marker(
    text: str, source: str = "pgtop-ha mark", environ: Mapping[str, str] | None = None
) -> Delivery:
    """Send a marker to every listening console and recorder of this user."""
    shown = clean_marker(text)
    if not shown:
        raise UserError('the marker text is empty; give a few words, e.g. pgtop-ha mark "killed primary"')
    result = Delivery(directory=marker_dir(environ))
    directory = result.directory
    assert directory is not None
    if not directory.exists():
        return result
    check_private(directory)
    # Unescaped UTF-8: "\ud83d\ude00" for every emoji would refuse a text within MAX_TEXT characters.
    body = {"text": shown, "source": clean_marker(source)[:100]}
    payload = json.dumps(body, ensure_ascii=False).encode() + b"\n"
    for path in sorted(directory.glob("*.sock")):
        try:
            if not stat.S_ISSOCK(os.lstat(path).st_mode):
                continue
            answer = _send_one(path, payload)
        except (ConnectionRefusedError, FileNotFoundError):
            # Nobody listens: the process died without removing its socket (kill -9).
            with contextlib.suppress(OSError):
                path.unlink()
            result.stale.append(path)
            continue
        except (OSError, ValueError) as exc:
            result.failed.append(f"{path.name}: {clean(str(exc))[:80]}")
            continue
        if answer.get("ok") is True:
            result.received.append(_describe(answer, path))
        else:
            result.failed.append(f"{path.name}: {clean(str(answer.get('error') or 'no answer'))[:80]}")
    return result


def run_mark(text: str, environ: Mapping[str, str] | None = None) -> int:
    """`pgtop-ha mark TEXT`: print who received it; exit 1 with one line when nobody did."""
    result = send_marker(text, environ=environ)
    if not result.received:
        why = (
            f"; {len(result.failed)} refused or did not answer: {_listed(result.failed)}"
            if result.failed
            else ""
        )
        raise NobodyListening(
            "no running console or recorder received the marker "
            f"(none listening in {result.directory}{why}); "
            "start one with `pgtop-ha` or `pgtop-ha record FILE`"
        )
    print(
        f"marker {clean_marker(text)!r} stamped on {len(result.received)} timeline(s): "
        + "; ".join(result.received)
    )
    if result.failed:
        print(f"not received by {len(result.failed)}: {_listed(result.failed)}")
    return 0


def _listed(failed: list[str], shown: int = 10) -> str:
    """Every refusal by name (the first ``shown``, then how many more)."""
    more = f"; and {len(failed) - shown} more" if len(failed) > shown else ""
    return "; ".join(failed[:shown]) + more
