"""A free loopback TCP port for a test's server."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A port nothing listens on now (bound, read, released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port
