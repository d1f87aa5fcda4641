"""How a console's process runs: on uvloop where installed, its start-up heap out of the collector.

A console is a long loop of small steps, which uvloop runs in C. The heap built by the first
snapshot lives until exit: settle_heap() freezes it (gc.freeze), so full collections walk only
what came after, and the youngest generation is collected less often (YOUNG_COLLECT_AFTER).
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Protocol, TypeVar

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)


class RunsAsync(Protocol[T_co]):
    """Anything run as a coroutine, such as a Textual App."""

    def run_async(self) -> Coroutine[Any, Any, T_co | None]:
        """Run until done; its result."""
        ...


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop]:
    """What makes a new loop: uvloop's when installed, asyncio's otherwise."""
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop
    return uvloop.new_event_loop


def loop_name() -> str:
    """Which loop loop_factory() makes ("uvloop" or "asyncio"), for the benchmark's notes and tests."""
    return "asyncio" if loop_factory() is asyncio.new_event_loop else "uvloop"


def run(main: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(main)`` on a loop from loop_factory()."""
    with asyncio.Runner(loop_factory=loop_factory()) as runner:
        return runner.run(main)


def _run_then_unfreeze(main: Coroutine[Any, Any, T]) -> T:
    try:
        return run(main)
    finally:
        # The fleet view opens one console after another: what one froze is collectable again.
        gc.unfreeze()


def run_app(app: RunsAsync[T]) -> T | None:
    """Run ``app`` (a Textual App) as App.run() does, on a loop from loop_factory(); unfreeze after."""
    return _run_then_unfreeze(app.run_async())


A = TypeVar("A", bound=RunsAsync[Any])


def run_built(build: Callable[[], Awaitable[A]]) -> A:
    """Build an app on the loop (so work begun there overlaps the build), run it; the app."""

    async def main() -> A:
        app = await build()
        await app.run_async()
        return app

    return _run_then_unfreeze(main())


def settle_heap() -> None:
    """Leave every object alive now out of the cyclic GC's passes (once the console is built); GC on."""
    gc.collect()  # what start-up already dropped goes now, not frozen with the rest
    gc.freeze()
    collector_on()


# The youngest generation is collected once this many container objects have been made and
# not yet freed (Python's default is 700). Under load a console makes most of its objects for one
# snapshot or one frame and drops them a second later, so at 700 a young pass came every second
# or so and walked the snapshot being shown; each tenth pass walked the middle generation, and
# every tenth of those the whole unfrozen heap (~140 ms on the main thread, a frame or a key
# held up by as much). The cycles still freed only by a pass are mostly Textual's strips, whose
# caches can hold the strip itself: they wait a few passes longer, not forever.
YOUNG_COLLECT_AFTER = 20_000
# The middle and oldest generations keep Python's defaults: a middle pass after 10 young ones,
# a full one after 10 middle ones (and only once a quarter of the old generation is new).
MIDDLE_COLLECT_AFTER = 10
OLD_COLLECT_AFTER = 10


def collector_on() -> None:
    """Turn the cyclic collector (back) on with the console's thresholds: entry.main() starts it off."""
    gc.set_threshold(YOUNG_COLLECT_AFTER, MIDDLE_COLLECT_AFTER, OLD_COLLECT_AFTER)
    gc.enable()
