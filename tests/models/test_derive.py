"""Pure derivations: WAL arithmetic, lag per stage, rates between snapshots, slot presence."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pgtop_ha.models import derive
from pgtop_ha.models.snapshot import (
    Archiver,
    ClusterSnapshot,
    CopyProgress,
    Member,
    NodeSnapshot,
    PatroniConfig,
    Replication,
    Slot,
)

SEG = 16 * 1024 * 1024
T0 = datetime(2025, 1, 1, tzinfo=UTC)


def test_walfile_segno() -> None:
    assert derive.walfile_segno("000000010000000000000001", SEG) == 1
    assert derive.walfile_segno("000000020000000100000000", SEG) == 256
    assert derive.walfile_segno("0000000300000002000000FF", SEG) == 2 * 256 + 255
    assert derive.walfile_segno("000000010000000000000003.partial", SEG) == 3
    assert derive.walfile_segno("000000010000000000000003.00000028.backup", SEG) == 3
    # 1 GB segments: 4 per xlogid
    assert derive.walfile_segno("000000010000000200000003", 1024**3) == 11
    assert derive.walfile_timeline("0000000A0000000000000001") == 10


@pytest.mark.parametrize(
    "name",
    ["00000002.history", "", "xyz", "0000000100000000000001", "000000010000000000000100"],
)
def test_walfile_segno_rejects(name: str) -> None:
    with pytest.raises(derive.WalFileNameError):
        derive.walfile_segno(name, SEG)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40), st.sampled_from([SEG, 1024**3, 1024**2, 3, 0]))
def test_fuzz_walfile_names(name: str, size: int) -> None:
    try:
        segno = derive.walfile_segno(name, size)
    except derive.WalFileNameError:
        return
    assert segno >= 0


@given(st.integers(min_value=0, max_value=2**32 - 1), st.sampled_from([SEG, 1024**2, 1024**3]))
def test_walfile_roundtrip(segno: int, size: int) -> None:
    per = 2**32 // size
    name = f"{1:08X}{segno // per:08X}{segno % per:08X}"
    assert derive.walfile_segno(name, size) == segno
    assert derive.lsn_segno(segno * size + 5, size) == segno


def test_lsn_text() -> None:
    assert derive.parse_lsn("0/3000060") == 0x3000060
    assert derive.parse_lsn("1/0") == 2**32
    assert derive.format_lsn(derive.parse_lsn("16/B374D848")) == "16/B374D848"
    with pytest.raises(ValueError, match="not an LSN"):
        derive.parse_lsn("nope")


def test_segments_behind() -> None:
    last = "000000010000000000000010"
    assert derive.segments_behind(0x11 * SEG + 100, last, SEG) == 0
    assert derive.segments_behind(0x15 * SEG, last, SEG) == 4
    assert derive.segments_behind(None, last, SEG) is None
    assert derive.segments_behind(0x15 * SEG, "00000002.history", SEG) is None
    assert derive.segments_behind(0x15 * SEG, None, SEG) is None


def test_lag_per_stage() -> None:
    row = Replication(sent_lsn=900, write_lsn=800, flush_lsn=700, replay_lsn=0)
    lagged = derive.with_lag(row, 1000)
    assert (lagged.sent_lag_bytes, lagged.write_lag_bytes, lagged.flush_lag_bytes) == (100, 200, 300)
    assert lagged.replay_lag_bytes is None  # a startup sender reports 0: unknown, not 1000
    assert derive.lag_bytes(None, 5) is None
    assert derive.lag_bytes(5, 10) == 0


def test_reference_and_standby_lag() -> None:
    primary = NodeSnapshot(name="a", in_recovery=False, current_lsn=500)
    standby = NodeSnapshot(name="b", in_recovery=True, receive_lsn=400, replay_lsn=300)
    assert derive.reference_lsn(primary) == 500
    assert derive.reference_lsn(standby) == 300
    assert derive.standby_lag_bytes(standby) == 100
    assert derive.standby_lag_bytes(primary) is None


def test_copy_estimate() -> None:
    exact = derive.copy_estimate(CopyProgress(pid=1, bytes_processed=50, bytes_total=200))
    assert exact.percent == 25.0
    by_tuples = derive.copy_estimate(
        CopyProgress(pid=1, bytes_processed=1000, bytes_total=0, tuples_processed=250, relation_tuples=1000.0)
    )
    assert by_tuples.percent == 25.0
    assert by_tuples.estimated_total_bytes == 4000
    by_size = derive.copy_estimate(
        CopyProgress(pid=1, bytes_processed=100, bytes_total=0, relation_tuples=-1, relation_size_bytes=400)
    )
    assert by_size.percent == 25.0
    assert derive.copy_estimate(CopyProgress(pid=1, bytes_total=0)).percent is None


def _snap(at: datetime, **node: object) -> ClusterSnapshot:
    return ClusterSnapshot(
        taken_at=at, nodes=(NodeSnapshot(name="n1", reachable=True, last_ok_at=at, **node),)
    )


def test_rate_rules() -> None:
    t1 = T0 + timedelta(seconds=2)
    assert derive.rate(10, 30, T0, t1) == 10.0
    assert derive.rate(30, 10, T0, t1) is None  # counter reset
    assert derive.rate(10, 30, t1, T0) is None  # time went backwards
    assert derive.rate(None, 30, T0, t1) is None


def test_node_rates() -> None:
    a = _snap(
        T0,
        in_recovery=True,
        replay_lsn=1000,
        receive_lsn=1000,
        archiver=Archiver(archived_count=5, failed_count=1, ready_count=10),
    )
    b = _snap(
        T0 + timedelta(seconds=4),
        in_recovery=True,
        replay_lsn=5000,
        receive_lsn=9000,
        archiver=Archiver(archived_count=5, failed_count=3, ready_count=6),
    )
    rates = derive.node_rates(a, b)["n1"]
    assert rates.replay_bytes_s == 1000.0
    assert rates.receive_bytes_s == 2000.0
    assert rates.archive_failures_s == 0.5
    assert rates.ready_growth_s == -1.0  # the queue shrinks
    promoted = _snap(T0 + timedelta(seconds=4), in_recovery=False, current_lsn=6000)
    assert derive.node_rates(a, promoted)["n1"].replay_bytes_s is None


def test_slot_and_copy_rates() -> None:
    a = _snap(
        T0,
        slots=(Slot(slot_name="s", spill_bytes=0, stream_bytes=100, total_bytes=10),),
        copy_progress=(
            CopyProgress(
                pid=7, relation="t", bytes_processed=100, estimated_total_bytes=1100, tuples_processed=1
            ),
        ),
    )
    b = _snap(
        T0 + timedelta(seconds=2),
        slots=(Slot(slot_name="s", spill_bytes=2000, stream_bytes=100, total_bytes=5),),
        copy_progress=(
            CopyProgress(
                pid=7, relation="t", bytes_processed=300, estimated_total_bytes=1100, tuples_processed=5
            ),
        ),
    )
    slot = derive.slot_rates(a, b)[("n1", "s")]
    assert slot.spill_bytes_s == 1000.0
    assert slot.stream_bytes_s == 0.0
    assert slot.total_bytes_s is None  # stats were reset in between
    copy = derive.copy_rates(a, b)[("n1", 7)]
    assert copy.bytes_s == 100.0
    assert copy.tuples_s == 2.0
    assert copy.eta_s == 8.0


def test_rates_skip_failed_nodes() -> None:
    a = _snap(T0, replay_lsn=1, in_recovery=True)
    b = ClusterSnapshot(
        taken_at=T0 + timedelta(seconds=1),
        nodes=(NodeSnapshot(name="n1", error="down", replay_lsn=5, in_recovery=True),),
    )
    assert derive.node_rates(a, b)["n1"].replay_bytes_s is None


def test_slot_presence() -> None:
    snap = ClusterSnapshot(
        taken_at=T0,
        members=(Member(name="a"), Member(name="b"), Member(name="c")),
        nodes=(
            NodeSnapshot(name="a", reachable=True, slots=(Slot(slot_name="p"),)),
            NodeSnapshot(name="b", reachable=True),
            NodeSnapshot(name="c", error="timeout"),
        ),
        patroni_config=PatroniConfig(permanent_slots={"p": {"type": "logical"}}),
    )
    matrix = derive.slot_presence(snap)
    assert matrix.slots == ("p",)
    assert matrix.present["p"] == {"a": True, "b": False, "c": None}
    assert matrix.missing() == {"p": ("b",)}
    assert derive.slot_presence(snap, slots=()).slots == ()
    assert derive.slot_presence(ClusterSnapshot(taken_at=T0)).slots == ()


def test_copy_total_prefers_the_exact_size_and_eta_uses_it() -> None:
    exact = CopyProgress(
        pid=7, relation="t", bytes_processed=100, bytes_total=500, estimated_total_bytes=9000
    )
    assert derive.copy_total(exact) == 500
    assert derive.copy_total(CopyProgress(pid=7, bytes_total=0, estimated_total_bytes=900)) == 900
    assert derive.copy_total(CopyProgress(pid=7, bytes_total=0)) is None
    later = exact.model_copy(update={"bytes_processed": 300})
    a, b = _snap(T0, copy_progress=(exact,)), _snap(T0 + timedelta(seconds=2), copy_progress=(later,))
    assert derive.copy_rates(a, b)[("n1", 7)].eta_s == 2.0  # 200 B left at 100 B/s
    moved = later.model_copy(update={"relation": "other"})  # the pid now copies another table
    assert derive.copy_rates(a, _snap(T0 + timedelta(seconds=2), copy_progress=(moved,))) == {}


def test_rates_are_timed_by_each_nodes_last_answer_not_the_cycle() -> None:
    a = _snap(T0, slots=(Slot(slot_name="s", spill_bytes=0),))
    b = _snap(T0 + timedelta(seconds=4), slots=(Slot(slot_name="s", spill_bytes=2000),))
    read_at = T0 + timedelta(seconds=2)  # the node answered 2 s after the first cycle
    b = b.model_copy(update={"nodes": (b.nodes[0].model_copy(update={"last_ok_at": read_at}),)})
    assert derive.slot_rates(a, b)[("n1", "s")].spill_bytes_s == 1000.0
    stale = b.model_copy(update={"nodes": (b.nodes[0].model_copy(update={"last_ok_at": T0}),)})
    assert derive.slot_rates(a, stale)[("n1", "s")].spill_bytes_s is None  # no new answer: no rate


def test_slot_presence_lists_nodes_patroni_does_not() -> None:
    snap = ClusterSnapshot(
        taken_at=T0,
        members=(Member(name="b"),),
        nodes=(NodeSnapshot(name="a", reachable=True, slots=(Slot(slot_name="p"),)),),
        patroni_config=PatroniConfig(permanent_slots={"p": {"type": "logical"}}),
    )
    matrix = derive.slot_presence(snap)
    assert matrix.members == ("a", "b")  # sorted, as the panes list members
    assert matrix.present["p"] == {"a": True, "b": None}
