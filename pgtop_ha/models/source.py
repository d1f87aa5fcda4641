"""Where snapshots come from, for every driver: the live Poller or a recording (tests script their own)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

from pgtop_ha.models.needs import Needs
from pgtop_ha.models.snapshot import ClusterSnapshot


class SnapshotSource(Protocol):
    """Something that keeps calling ``on_snapshot`` until cancelled (collect.poller.Poller)."""

    async def run(
        self,
        on_snapshot: Callable[[ClusterSnapshot], object],
        interval: Callable[[], float],
    ) -> None:
        """Produce snapshots every ``interval()`` seconds until cancelled."""
        ...

    async def aclose(self) -> None:
        """Release connections and clients."""
        ...


@runtime_checkable
class NeedsToggle(Protocol):
    """A source whose optional reads follow the panes on screen (the Poller; see models/needs.py)."""

    def set_needs(self, needs: Needs) -> None:
        """Read these optional views from now on, and no others."""
        ...


@runtime_checkable
class Hurried(Protocol):
    """A source told when its cadence may have become faster (the Poller), so it need not keep asking."""

    def hurry(self) -> None:
        """Look at ``interval()`` again now rather than at the end of the current pause."""
        ...
