"""A snapshot's judgement: made once, read by every output, its rows' marks kept with it."""

from __future__ import annotations

import gc
import weakref

from pgtop_ha.judge.judgement import judgement
from tests.ui import fixtures as fx

SETTINGS = fx.settings()
POOLS = SETTINGS.haproxy.pools()


def test_a_rows_marks_are_made_once_per_judgement() -> None:
    snap = fx.lagging(fx.healthy())
    judged = judgement(snap, SETTINGS.thresholds, POOLS)
    sender = max((r for n in snap.nodes for r in n.replication), key=lambda r: r.replay_lag_bytes or 0)
    assert judged.walsender(sender) and judged.walsender(sender) is judged.walsender(sender)
    assert judged.outlook() is judged.outlook()
    assert judged.on(None) is judged.on(None) and judged.on("node1") is not judged.on(None)
    again = judgement(snap, SETTINGS.thresholds, POOLS)
    assert again.walsender(sender) == judged.walsender(sender)
    assert again.walsender(sender) is not judged.walsender(sender)


def test_a_judgement_is_freed_without_the_cyclic_collector() -> None:
    # The console runs its collector rarely: a judgement that referred to itself would keep its
    # snapshot alive until a full pass.
    snap = fx.healthy()
    judged = judgement(snap, SETTINGS.thresholds, POOLS)
    gc.disable()
    try:
        judged.worst_slot(), judged.outlook(), judged.backups(), judged.no_stanza()
        for node in snap.nodes:
            for slot in node.slots:
                judged.slot(slot)
            judged.hugepages(node)
        ref = weakref.ref(judged)
        del judged
        assert ref() is None
    finally:
        gc.enable()
