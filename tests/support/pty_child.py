"""A child process on a pseudo-terminal of a given size: Textual's own driver, not the headless one."""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import termios
from collections.abc import Sequence


def spawn_on_pty(
    argv: Sequence[str], *, size: tuple[int, int] = (80, 24), drop: tuple[str, ...] = ("TEXTUAL",)
) -> tuple[int, subprocess.Popen[bytes]]:
    """Start ``argv`` on a new pseudo-terminal; returns its master end and the child.

    Variables starting with ``drop`` are left out of the child's environment; TERM is xterm-256color.
    """
    master, slave = pty.openpty()
    cols, rows = size
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    env["TERM"] = "xterm-256color"
    proc = subprocess.Popen(
        list(argv), stdin=slave, stdout=slave, stderr=slave, env=env, start_new_session=True
    )
    os.close(slave)
    return master, proc
