"""One polled source (a URL, a socket): its own task, its own time limit, failure kept as data.

Fresh: its last poll answered. Slow: a poll still runs within its own limit, the last answer kept
with ``slow_s``. Unreachable: the last poll failed or hit its limit. The limit is the source's
own, never the poll interval: a 1.5 s answer at a 1 s interval is used when it comes.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Generic, TypeVar

from pgtop_ha.clock import Clock

T = TypeVar("T")


@dataclass(frozen=True)
class Reading(Generic[T]):
    """What a source last said (value or error), when it answered well, how long a poll waits."""

    value: T | None
    error: str | None
    last_ok_at: datetime | None
    slow_s: float | None = None


class PollTask:
    """At most one poll at a time in the background: start it, ask how long it runs, cancel it."""

    def __init__(self, name: str, poll: Callable[[], Coroutine[Any, Any, None]]) -> None:
        self.name = name
        self._poll = poll
        self._task: asyncio.Task[None] | None = None
        self._started = 0.0

    def start(self) -> asyncio.Task[None]:
        """The running poll, or a new one when the last has finished."""
        if self._task is None or self._task.done():
            self._started = asyncio.get_running_loop().time()
            self._task = asyncio.create_task(self._poll(), name=self.name)
        return self._task

    def running_for(self) -> float | None:
        """Seconds the unfinished poll has run so far; None when no poll is running."""
        if self._task is None or self._task.done():
            return None
        return asyncio.get_running_loop().time() - self._started

    async def cancel(self) -> None:
        """Cancel a running poll and wait for it to end."""
        task = self._task
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


class Source(Generic[T]):
    """Runs ``fetch`` under its own time limit; a poll still running is reported, never awaited."""

    def __init__(
        self,
        name: str,
        fetch: Callable[[], Awaitable[T]],
        limit_s: float,
        clock: Clock,
        describe: Callable[[BaseException], str],
    ) -> None:
        self.name = name
        self._fetch = fetch
        self._limit_s = limit_s
        self._clock = clock
        self._describe = describe
        self._runner = PollTask(f"source:{name}", self._poll)
        self._reading: Reading[T] = Reading(None, "not polled yet", None)
        self._finished = False  # a poll has ended (answered or failed) at least once

    def start(self) -> asyncio.Task[None]:
        """The running poll, or a new one when the last has finished."""
        return self._runner.start()

    async def _poll(self) -> None:
        try:
            async with asyncio.timeout(self._limit_s):
                value = await self._fetch()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a failure is data about this source, never a crash
            self._finished = True
            self._reading = Reading(None, self._describe(exc), self._reading.last_ok_at)
            return
        self._finished = True
        self._reading = Reading(value, None, self._clock())

    def running_for(self) -> float | None:
        """Seconds the poll in flight has waited; None when none runs."""
        return self._runner.running_for()

    @property
    def finished(self) -> bool:
        """A poll has ended (answered or failed) at least once."""
        return self._finished

    def reading(self) -> Reading[T]:
        """The latest reading; while a poll runs, the last answer kept with how long it waits."""
        waited = self._runner.running_for()
        if waited is None:
            return self._reading
        last = self._reading
        if last.error is None:
            # Slow, not unreachable: only the poll's own time limit makes it an error.
            return replace(last, slow_s=waited)
        if last.last_ok_at is None and not self._finished:
            return Reading(None, f"{self.name}: no answer yet after {waited:.1f}s", None, waited)
        return last  # the last poll failed: unreachable until one answers

    async def aclose(self) -> None:
        """Cancel a running poll."""
        await self._runner.cancel()
