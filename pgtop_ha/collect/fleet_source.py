"""The fleet's rows from Prometheus: a handful of instant queries per refresh."""

from __future__ import annotations

import time
from collections.abc import Callable

from pgtop_ha.collect.prometheus import PrometheusReader
from pgtop_ha.judge.fleet import FleetQueries, FleetRow, build_rows

DEFAULT_INTERVAL = 5.0


class PrometheusFleet:
    """A FleetSource reading one Prometheus."""

    def __init__(
        self,
        reader: PrometheusReader,
        queries: FleetQueries,
        *,
        interval: float | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.reader = reader
        self.queries = queries
        self._interval = interval
        self._clock = clock

    async def rows(self) -> list[FleetRow]:
        """One refresh: query, then build the rows (worst first)."""
        answers = await self.reader.fleet(self.queries)
        return build_rows(
            answers.vectors,
            now=self._clock(),
            scope_label=self.queries.scope_label,
            name_label=self.queries.name_label,
        )

    async def interval(self) -> float:
        """The configured interval, else Prometheus's scrape interval, else 5 s."""
        if self._interval is None:
            self._interval = await self.reader.scrape_interval() or DEFAULT_INTERVAL
        return max(1.0, self._interval)

    async def aclose(self) -> None:
        """Close the reader."""
        await self.reader.aclose()
