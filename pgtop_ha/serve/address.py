"""Where `serve` listens and `attach` connects: a unix socket (the default) or a loopback TCP port."""

from __future__ import annotations

import contextlib
import grp
import ipaddress
import os
import socket
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pgtop_ha.errors import UserError
from pgtop_ha.record.markers import private_dir

SOCKET_NAME = "serve.sock"


@dataclass(frozen=True)
class Address:
    """A unix socket path, or a TCP host and port."""

    path: Path | None = None
    host: str | None = None
    port: int | None = None

    def __str__(self) -> str:
        return str(self.path) if self.path is not None else f"{self.host}:{self.port}"


def default_socket(environ: Mapping[str, str] | None = None) -> Path:
    """serve.sock in this user's private directory (the one `mark` uses, 0700)."""
    return private_dir(environ) / SOCKET_NAME


def host_port(text: str, what: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[v6]:PORT`` too) split; UserError naming ``what`` when it is not one."""
    host, sep, port = text.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise UserError(f"{what} {text!r}: give HOST:PORT, e.g. 127.0.0.1:8080")
    return host, int(port)


def loopback(host: str) -> bool:
    """True for a loopback address or localhost (the only hosts served without a flag)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def parse_target(text: str | None, environ: Mapping[str, str] | None = None) -> Address:
    """What `attach` was given: a socket path, HOST:PORT, or nothing (the default socket)."""
    if not text:
        return Address(path=default_socket(environ))
    if "/" in text or text.endswith(".sock") or ":" not in text:
        return Address(path=Path(text))
    host, port = host_port(text, "attach")
    return Address(host=host, port=port)


def listen_tcp(text: str) -> Address:
    """`serve --listen HOST:PORT`: loopback only (reach it from elsewhere through SSH, as the socket)."""
    host, port = host_port(text, "--listen")
    if not loopback(host):
        raise UserError(
            f"--listen {text}: the stream carries the cluster's state to anyone who connects; "
            "listen on 127.0.0.1 and forward it with ssh -L"
        )
    return Address(host=host, port=port)


SUN_PATH_MAX = 107  # bytes of a unix socket's path on Linux (sun_path is 108, with its NUL)


def check_socket_path(path: Path) -> None:
    """A path a unix socket can be bound at: short enough, in a directory that exists."""
    size = len(os.fsencode(path))
    if size > SUN_PATH_MAX:
        raise UserError(
            f"--socket {str(path)[:60]}…: {size} bytes, over the {SUN_PATH_MAX} a unix socket's path "
            "may have; give a shorter path"
        )
    parent = path.parent
    if not parent.is_dir():
        raise UserError(f"--socket {path}: no such directory {parent}; create it or give another path")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UserError(
            f"--socket {path}: {parent} is not writable by you; give a path in your own directory"
        )


def claim_socket(path: Path) -> None:
    """Make ``path`` free for a new socket: a stale one is removed, a live one or a file refused."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(st.st_mode):
        raise UserError(f"{path} exists and is not a socket; remove it or give --socket another path")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(1.0)
        try:
            probe.connect(str(path))
        except OSError:
            os.unlink(path)  # nobody listens: left by a serve that was killed
            return
    raise UserError(f"another pgtop-ha serve listens on {path}; attach to it, or give --socket another path")


def share_with(path: Path, group: str | None) -> None:
    """0600, or 0660 owned by ``group`` (UserError naming the group when it does not exist)."""
    if group is None:
        os.chmod(path, 0o600)
        return
    try:
        gid = grp.getgrnam(group).gr_gid
    except KeyError:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        raise UserError(f"--group {group}: no such group; create it or name another") from None
    os.chown(path, -1, gid)
    os.chmod(path, 0o660)
