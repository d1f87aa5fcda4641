"""Memory's rules: shared memory that PostgreSQL meant to put in HugePages and did not."""

from __future__ import annotations

from pgtop_ha.judge.rules import MEMORY_HUGEPAGES
from pgtop_ha.models.derive import shared_memory_on_hugepages
from pgtop_ha.models.snapshot import NodeSnapshot
from pgtop_ha.models.thresholds import Level
from pgtop_ha.models.verdict import Mark


def hugepages_marks(node: NodeSnapshot) -> tuple[Mark, ...]:
    """huge_pages on or try with shared memory not in them (a silent fallback): WARN."""
    h = node.hugepages
    if h is None or not h.total or h.setting not in ("on", "try"):
        return ()
    if shared_memory_on_hugepages(h) is not False:
        return ()
    text = f"huge_pages = {h.setting} but shared memory is not in HugePages"
    return (Mark(MEMORY_HUGEPAGES.id, Level.WARN, text, "state"),)
