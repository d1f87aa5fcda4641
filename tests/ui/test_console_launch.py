"""The console as a user starts it: `pgtop-ha --read-only` on a pseudo-terminal against the lab.

The first cycle is begun before Textual is imported and its snapshot is shown once the screen is
up (console.run_console, Poller.prime); this runs that whole path, Textual's own driver included,
and leaves with q.
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import sys
import time
from collections.abc import Callable
from pathlib import Path

from pgtop_ha.lab.cluster import Lab
from pgtop_ha.lab.layout import NODE_NAMES
from tests.support.pty_child import spawn_on_pty

# Cursor moves, colours and modes: what is left is the text Textual drew.
ESCAPES = re.compile(rb"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[@-Z\\-_])")
LAST = re.compile(r"last \d\d:\d\d")  # the minute while calm, seconds otherwise


class Console:
    """`pgtop-ha --read-only --config CONFIG` on an 80x24 pseudo-terminal; its output kept as text."""

    def __init__(self, config: Path) -> None:
        # PG* and PGTOP_HA_* too: the console reads only the lab's config file.
        self.master, self.proc = spawn_on_pty(
            [sys.executable, "-m", "pgtop_ha", "--read-only", "--config", str(config)],
            drop=("TEXTUAL", "PG", "PGTOP_HA_"),
        )
        self.raw = b""

    def text(self) -> str:
        """What the console wrote so far, escape sequences left out."""
        return ESCAPES.sub(b"", self.raw).decode("utf-8", "replace")

    def until(self, done: str, ready: Callable[[str], bool], deadline_s: float = 30.0) -> str:
        """Read the terminal until ``ready(text)`` holds; fails naming ``done`` after the deadline."""
        end = time.monotonic() + deadline_s
        while time.monotonic() < end:
            if ready(self.text()):
                return self.text()
            readable, _, _ = select.select([self.master], [], [], 0.05)
            if readable:
                with contextlib.suppress(OSError):  # the child is gone: what it wrote is in raw
                    self.raw += os.read(self.master, 65536)
        raise AssertionError(f"no {done} in {deadline_s:.0f} s; the console wrote: {self.text()[-2000:]!r}")

    def drain(self) -> str:
        """Everything the exited console wrote (the terminal reads empty or fails once it is all read)."""
        while select.select([self.master], [], [], 1.0)[0]:
            try:
                data = os.read(self.master, 65536)
            except OSError:  # EIO: the child and its terminal are gone
                break
            if not data:
                break
            self.raw += data
        return self.text()

    def close(self) -> None:
        """End the child if it is still running (by its PID), then the terminal."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        os.close(self.master)


def test_the_console_shows_every_member_with_a_snapshot_and_leaves_with_q(lab: Lab) -> None:
    console = Console(lab.layout.console_config)
    try:
        shown = console.until(
            "first full frame", lambda text: bool(LAST.search(text)) and all(n in text for n in NODE_NAMES)
        )
        assert "Traceback" not in shown
        assert "READ-ONLY" in shown  # --read-only: no action exists
        os.write(console.master, b"q")
        assert console.proc.wait(timeout=20) == 0
        assert "Traceback" not in console.drain()  # nor on the way out
    finally:
        console.close()
