"""Cache warmth read from a real lab's pg_buffercache (installed by the lab on every node)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from pgtop_ha.collect.poller import Poller
from pgtop_ha.judge.cache import used_share
from pgtop_ha.lab.cluster import Lab
from pgtop_ha.lab.layout import COPY_TABLE
from pgtop_ha.models.derive import shared_memory_on_hugepages
from pgtop_ha.models.snapshot import ClusterSnapshot
from pgtop_ha.settings import Settings
from tests.support.lab_polls import until_seen

pytestmark = pytest.mark.lab


async def test_cache_shows_buffers_in_use_and_the_table_just_read(lab: Lab, lab_settings: Settings) -> None:
    leader = await asyncio.to_thread(lab.leader)
    assert leader is not None
    # Read the lab's big table on the leader so that it is among the hottest relations there.
    await asyncio.to_thread(lab.psql, f"SELECT count(*) FROM {COPY_TABLE}", leader)
    poller = Poller.from_settings(lab_settings)
    poller.set_needs(frozenset({"cache"}))
    try:

        def cache_read(snap: ClusterSnapshot) -> bool:
            node = snap.node(leader)
            return node is not None and node.cache is not None and bool(node.cache.top)

        snap = await until_seen(poller, cache_read, 30, "the leader's cache")
        node = snap.node(leader)
        assert node is not None and node.cache is not None
        cache = node.cache
        share = used_share(cache)
        assert share is not None and 0 < share <= 1
        assert cache.buffers and cache.buffers >= 1024  # shared_buffers of the lab, in 8 kB pages
        assert any(COPY_TABLE in r.relation and (r.buffers or 0) > 0 for r in cache.top)
        assert cache.autoprewarm is not None
        # Off screen, pg_buffercache is not asked.
        poller.set_needs(frozenset())
        snap = await poller.cycle(budget=3.0)
        assert all(n.cache is None for n in snap.nodes)
    finally:
        await poller.aclose()


async def test_hugepages_match_proc_meminfo(lab: Lab, lab_settings: Settings) -> None:
    poller = Poller.from_settings(lab_settings)
    poller.set_needs(frozenset({"memory"}))
    try:

        def all_read(snap: ClusterSnapshot) -> bool:
            return all(n.hugepages is not None and n.hugepages.setting for n in snap.nodes)

        snap = await until_seen(poller, all_read, 30, "HugePages on every node")
        huge = [n.hugepages for n in snap.nodes if n.hugepages is not None]
        # Read at the same moment as the snapshot: the lab's nodes share this host's meminfo.
        text = await asyncio.to_thread(Path("/proc/meminfo").read_text)
        meminfo = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
        for h in huge:
            assert h.total == int(meminfo["HugePages_Total"].split()[0])
            assert h.size_bytes == int(meminfo["Hugepagesize"].split()[0]) * 1024
            assert h.setting in ("on", "off", "try")
            assert h.shared_memory_pages is None or h.shared_memory_pages >= -1  # PostgreSQL 15+
            if h.total == 0:
                assert shared_memory_on_hugepages(h) is False
    finally:
        await poller.aclose()
