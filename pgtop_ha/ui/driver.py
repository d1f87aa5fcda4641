"""The terminal driver: Textual's Linux driver with an input thread that sleeps while no key comes.

Textual's thread wakes ten times a second to look for its exit flag; this one waits for input or
its exit (a pipe), and polls in 0.1 s steps only for a second after input, for a lone Escape.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import threading
import time
from codecs import getincrementaldecoder
from typing import Any, TypeVar

from textual import constants
from textual._parser import ParseError
from textual._xterm_parser import XTermParser
from textual.app import App
from textual.driver import Driver
from textual.drivers.linux_driver import LinuxDriver

ReturnType = TypeVar("ReturnType")

TICK_S = 0.1  # Textual's own step: a lone Escape waits ESCDELAY (0.1 s by default) for more
AFTER_INPUT_S = max(1.0, 4 * constants.ESCAPE_DELAY)  # ticking this long after the last input


def next_wait(since_input: float | None) -> float | None:
    """How long the input thread may wait: a tick shortly after input, else until woken."""
    if since_input is not None and since_input < AFTER_INPUT_S:
        return TICK_S
    return None


class _WakingEvent(threading.Event):
    """A threading.Event whose set() also wakes a selector waiting on ``wake_fd``'s pipe."""

    def __init__(self, wake_fd: int) -> None:
        super().__init__()
        self._wake_fd: int | None = wake_fd

    def set(self) -> None:
        """Set the flag and wake the input thread."""
        super().set()
        if self._wake_fd is None:
            return
        with contextlib.suppress(BlockingIOError):  # the pipe is full: a wake is pending anyway
            os.write(self._wake_fd, b"x")

    def unwire(self) -> None:
        """Stop writing to the pipe (it is being closed)."""
        self._wake_fd = None


class CalmLinuxDriver(LinuxDriver):
    """LinuxDriver whose input thread waits for a key or for exit, not ten times a second."""

    wakeups = 0  # times the input thread's wait ended (tests and benchmarks read it)

    def __init__(
        self, app: App[Any], *, debug: bool = False, mouse: bool = True, size: tuple[int, int] | None = None
    ) -> None:
        super().__init__(app, debug=debug, mouse=mouse, size=size)
        self.input_debug = debug  # Textual keeps its own flag private
        self._wake_r, self._wake_w = os.pipe()
        self._wake_fds: tuple[int, ...] = (self._wake_r, self._wake_w)
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self.exit_event: _WakingEvent = _WakingEvent(self._wake_w)

    def run_input_thread(self) -> None:
        """Wait for input or exit and dispatch events (Textual's loop, without the idle ticks)."""
        selector = selectors.SelectSelector()
        fileno = self.fileno
        selector.register(fileno, selectors.EVENT_READ)
        selector.register(self._wake_r, selectors.EVENT_READ)
        parser = XTermParser(self.input_debug)
        decode = getincrementaldecoder("utf-8")().decode
        clock = time.monotonic
        last_input: float | None = None

        def process(ready: list[tuple[selectors.SelectorKey, int]], final: bool = False) -> None:
            nonlocal last_input
            for index, (key, mask) in enumerate(ready):
                if key.fd == self._wake_r:
                    _drain(self._wake_r)
                elif mask & selectors.EVENT_READ:
                    last_input = clock()
                    data = decode(os.read(fileno, 4096), final=final and index == len(ready) - 1)
                    if not data:
                        break  # stdin is a pipe at its end
                    for event in parser.feed(data):
                        self.process_message(event)
            for event in parser.tick():
                self.process_message(event)

        try:
            while not self.exit_event.is_set():
                wait = next_wait(None if last_input is None else clock() - last_input)
                ready = selector.select(wait)
                self.wakeups += 1
                process(ready)
            selector.unregister(fileno)
            process(selector.select(TICK_S), final=True)
        finally:
            selector.close()
            with contextlib.suppress(EOFError, ParseError):
                for _ in parser.feed(""):
                    pass

    def close(self) -> None:
        """Perform cleanup, and close the wake pipe (once: its numbers may be reused after)."""
        super().close()
        self.exit_event.unwire()
        fds, self._wake_fds = self._wake_fds, ()
        for fd in fds:
            os.close(fd)


def _drain(fd: int) -> None:
    with contextlib.suppress(BlockingIOError):
        while os.read(fd, 512):
            pass


def calm(driver: type[Driver]) -> type[Driver]:
    """CalmLinuxDriver where Textual would use its LinuxDriver; any other driver as it is."""
    return CalmLinuxDriver if driver is LinuxDriver else driver


class CalmApp(App[ReturnType]):
    """A Textual app whose terminal driver, on Linux, is CalmLinuxDriver (the console, the fleet)."""

    def get_driver_class(self) -> type[Driver]:
        """Textual's driver for this terminal; on Linux one whose input thread sleeps."""
        return calm(super().get_driver_class())
