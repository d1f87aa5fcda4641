"""What the fleet screen reads from: a source of rows (Prometheus in life, a script in tests)."""

from __future__ import annotations

from typing import Protocol

from pgtop_ha.judge.fleet import FleetRow


class FleetSource(Protocol):
    """Gives the fleet's rows, worst first; raises an Exception whose str is one line on failure."""

    async def rows(self) -> list[FleetRow]:
        """One refresh."""
        ...

    async def interval(self) -> float:
        """Seconds between refreshes (the scrape interval when known)."""
        ...

    async def aclose(self) -> None:
        """Release connections."""
        ...
