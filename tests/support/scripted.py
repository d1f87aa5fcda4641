"""A snapshot source for UI tests: given snapshots, then whatever the test pushes."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable

from pgtop_ha.models.snapshot import ClusterSnapshot


class ScriptedSource:
    """Feeds given snapshots (all at once, or one per ``interval()`` when paced), then idles."""

    def __init__(self, snapshots: Iterable[ClusterSnapshot], *, paced: bool = False) -> None:
        self._pending = list(snapshots)
        self._paced = paced
        self._more: asyncio.Queue[ClusterSnapshot] = asyncio.Queue()
        self.closed = False
        self.sent = 0
        self.intervals: list[float] = []
        self.hurried = 0  # times the app said the cadence got faster

    def prime(self) -> None:
        """Nothing to begin early (the console calls it on its Poller): the script is at hand."""

    def push(self, snapshot: ClusterSnapshot) -> None:
        """Deliver one more snapshot as soon as the app's loop runs."""
        self._more.put_nowait(snapshot)

    async def run(
        self,
        on_snapshot: Callable[[ClusterSnapshot], object],
        interval: Callable[[], float],
    ) -> None:
        """Send the scripted snapshots, then whatever ``push`` adds, until cancelled."""
        for snap in self._pending:
            on_snapshot(snap)
            self.sent += 1
            self.intervals.append(interval())
            if self._paced:
                await asyncio.sleep(interval())
        while True:
            snap = await self._more.get()
            on_snapshot(snap)
            self.sent += 1
            self.intervals.append(interval())

    def hurry(self) -> None:
        """Count the app's word that the cadence got faster (the Poller ends its pause)."""
        self.hurried += 1

    async def aclose(self) -> None:
        """Mark the source closed (tests check the app closes it)."""
        self.closed = True
