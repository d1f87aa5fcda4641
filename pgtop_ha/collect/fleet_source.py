"""The fleet from Prometheus: two rounds of instant queries per refresh, whatever the fleet's size."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Callable

from pgtop_ha.collect.fleet_queries import FleetQueries, rules_state, written
from pgtop_ha.collect.prometheus import PrometheusReader
from pgtop_ha.judge.fleet import LIVE, RULES_VERSION, FleetPage, build_rows, counts_of

DEFAULT_INTERVAL = 5.0
STALE_EVALUATIONS = 12  # recorded rules older than this many refresh intervals: read live instead


class PrometheusFleet:
    """A FleetSource reading one Prometheus."""

    def __init__(
        self,
        reader: PrometheusReader,
        queries: FleetQueries,
        *,
        interval: float | None = None,
        clock: Callable[[], float] = time.time,
        prefer_recorded: bool = True,
    ) -> None:
        self.reader = reader
        self.queries = queries
        self.prefer_recorded = prefer_recorded  # False: always live (a benchmark's reference)
        self._interval = interval
        self._clock = clock

    async def refresh(self, filter_text: str = "") -> FleetPage:
        """One refresh, narrowed server-side to clusters whose name holds ``filter_text``."""
        queries = self.queries.matching(filter_text)
        at, said = None, LIVE
        if self.prefer_recorded:
            versions, stamps = await asyncio.gather(
                self.reader.query(RULES_VERSION), self.reader.query(written(queries))
            )
            stale_s = STALE_EVALUATIONS * (self._interval or DEFAULT_INTERVAL)
            at, said = rules_state(versions, stamps, queries, self._clock(), stale_s)
        if at is not None:
            queries = dataclasses.replace(queries, evaluated_at=at)
        answers = await self.reader.fleet(queries)
        rows = build_rows(
            answers.vectors,
            now=self._clock(),
            scope_label=queries.scope_label,
            name_label=queries.name_label,
            lag_warn_bytes=queries.lag_warn_bytes,
        )
        counts = counts_of(answers.vectors.get("counts", ()))
        return FleetPage(rows, counts, answers.bytes_read, answers.warnings, said)

    async def instances(self, scope: str) -> tuple[str, ...]:
        """Each member's instance label (its REST root) for one cluster, for a drill down."""
        samples = await self.reader.query(self.queries.members_of(scope))
        return tuple(sorted({i for s in samples if (i := s.labels.get("instance"))}))

    async def interval(self) -> float:
        """The configured interval, else Prometheus's scrape interval, else 5 s."""
        if self._interval is None:
            self._interval = await self.reader.scrape_interval() or DEFAULT_INTERVAL
        return max(1.0, self._interval)

    async def aclose(self) -> None:
        """Close the reader."""
        await self.reader.aclose()
