"""The console's terminal driver: keys and a lone Escape arrive, exit is prompt, idle means asleep.

Run in a real pseudo-terminal: Textual's own driver, not the headless one run_test uses.
"""

from __future__ import annotations

import contextlib
import os
import select
import sys
import time
from pathlib import Path

from pgtop_ha.runtime import loop_name
from pgtop_ha.ui.driver import AFTER_INPUT_S, TICK_S, next_wait
from tests.support.pty_child import spawn_on_pty

KEYS_APP = r"""
import asyncio
import sys
from pathlib import Path
from textual.binding import Binding
from pgtop_ha.runtime import run_app
from pgtop_ha.ui.driver import CalmApp

out = Path(sys.argv[1])


def say(line):
    with out.open("a") as f:
        f.write(line + "\n")


class KeysApp(CalmApp[None]):
    BINDINGS = [Binding("a", "seen('a')"), Binding("escape", "seen('escape')"), Binding("q", "quit")]

    def on_mount(self):
        self.driver = self._driver
        say(f"driver {type(self.driver).__name__}")
        say(f"loop {type(asyncio.get_running_loop()).__module__.split('.')[0]}")
        self.set_timer(1.0, self.idle_start)

    def idle_start(self):
        self.at = self.driver.wakeups
        self.set_timer(2.0, self.idle_end)

    def idle_end(self):
        say(f"idle {self.driver.wakeups - self.at}")

    def action_seen(self, key):
        say(f"key {key}")


run_app(KeysApp())  # as the console runs: on pgtop_ha.runtime's loop
say("exited")
"""


class Terminal:
    """A child process on a pseudo-terminal of 80x24 whose output is read (and dropped) as it comes."""

    def __init__(self, out: Path) -> None:
        self.master, self.proc = spawn_on_pty([sys.executable, "-c", KEYS_APP, str(out)])
        self.out = out

    def lines(self) -> list[str]:
        return self.out.read_text().splitlines() if self.out.exists() else []

    def until(self, what: str, deadline_s: float = 20.0) -> list[str]:
        """Drain the terminal until the app has written a line starting with ``what``."""
        end = time.monotonic() + deadline_s
        while time.monotonic() < end:
            found = [line for line in self.lines() if line.startswith(what)]
            if found:
                return found
            ready, _, _ = select.select([self.master], [], [], 0.05)
            if ready:
                with contextlib.suppress(OSError):  # the child is gone: its last lines are in the file
                    os.read(self.master, 65536)
        raise AssertionError(f"no {what!r} in {deadline_s:.0f} s; the app wrote {self.lines()}")

    def send(self, data: bytes) -> None:
        os.write(self.master, data)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        os.close(self.master)


def test_the_input_thread_ticks_only_shortly_after_input() -> None:
    assert next_wait(None) is None  # never had input: wait until woken
    assert next_wait(0.0) == TICK_S  # just had input: a lone Escape needs its tick
    assert next_wait(AFTER_INPUT_S - 0.01) == TICK_S
    assert next_wait(AFTER_INPUT_S) is None


def test_on_uvloop_keys_and_a_lone_escape_arrive_exit_is_prompt_and_idle_is_asleep(tmp_path: Path) -> None:
    term = Terminal(tmp_path / "seen.txt")
    try:
        assert term.until("driver") == ["driver CalmLinuxDriver"]
        # uvloop is a dependency on Linux: the console's keys, timers and exit run on it.
        assert loop_name() == "uvloop"
        assert term.until("loop") == ["loop uvloop"]
        # Two idle seconds: Textual's own driver wakes 20 times; this one not at all (a terminal
        # answer to a query at start may still come in).
        idle = int(term.until("idle")[0].split()[1])
        assert idle <= 2
        term.send(b"a")
        term.until("key a")
        term.send(b"\x1b")  # nothing after it: only the tick can tell it is the Escape key
        term.until("key escape")
        term.send(b"q")
        term.until("exited", deadline_s=10.0)  # the exit wakes the input thread; no hang
        assert term.proc.wait(timeout=10) == 0
    finally:
        term.close()
