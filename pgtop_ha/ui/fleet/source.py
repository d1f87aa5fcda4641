"""What the fleet screen reads from: a source of rows (Prometheus in life, a script in tests)."""

from __future__ import annotations

from typing import Protocol

from pgtop_ha.judge.view import FleetPage


class FleetSource(Protocol):
    """Gives the fleet's counts and worst rows; raises an Exception whose str is one line on failure."""

    async def refresh(self, filter_text: str = "") -> FleetPage:
        """One refresh, narrowed to clusters whose name holds ``filter_text``."""
        ...

    async def interval(self) -> float:
        """Seconds between refreshes (the scrape interval when known)."""
        ...

    async def aclose(self) -> None:
        """Release connections."""
        ...
