"""Cache warmth: how much of shared_buffers holds data, and a new primary's cache against the old's."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pgtop_ha.judge.eligibility import find_leader
from pgtop_ha.models.snapshot import CacheState, ClusterSnapshot


def used_share(cache: CacheState | None) -> float | None:
    """Share of shared_buffers holding a page (0..1), None when unknown."""
    if cache is None or not cache.buffers or cache.used is None:
        return None
    return min(1.0, max(0.0, cache.used / cache.buffers))


def relation_share(buffers: int, relation_pages: int | None) -> float | None:
    """Share of a relation's pages that sit in shared_buffers (0..1; relpages is an estimate)."""
    if not relation_pages or relation_pages <= 0:
        return None
    return min(1.0, buffers / relation_pages)


@dataclass(frozen=True)
class Handover:
    """After a leader change: the new leader's cache beside what the old leader's held."""

    old: str
    new: str
    old_used: float | None
    new_used: float | None


def after_failover(history: Sequence[ClusterSnapshot], current: ClusterSnapshot) -> Handover | None:
    """The cache handover when the leader changed within ``history`` (None when it did not)."""
    leader = find_leader(current)
    if leader is None:
        return None
    for snap in reversed(history):
        before = find_leader(snap)
        if before is None or before.name == leader.name:
            continue
        old_node, new_node = snap.node(before.name), current.node(leader.name)
        old_cache = old_node.cache if old_node is not None else None
        new_cache = new_node.cache if new_node is not None else None
        return Handover(before.name, leader.name, used_share(old_cache), used_share(new_cache))
    return None
