"""A free loopback TCP port for a test's server (or a run of them for an engine and its helpers)."""

from __future__ import annotations

import socket


def _free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port(run: int = 1) -> int:
    """A port nothing listens on now (bound, read, released), and the ``run - 1`` after it too."""
    for _ in range(100):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port: int = s.getsockname()[1]
        if port + run <= 65535 and all(_free(port + k) for k in range(1, run)):
            return port
    raise RuntimeError(f"no run of {run} free loopback ports")
