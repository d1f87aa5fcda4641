"""The poolers' rules against Patroni (models/poolers.py) and their rates (models/derive.py)."""

from __future__ import annotations

from datetime import timedelta

from pgtop_ha.judge.poolers import PatroniView, bouncer_findings, database_finding, pgpool_findings
from pgtop_ha.judge.problems import cluster_problems, patroni_view
from pgtop_ha.judge.rules import POOLER_CONTRADICTION
from pgtop_ha.models.derive import bouncer_rates, select_rates
from pgtop_ha.models.haproxy import DEFAULT_POOLS
from pgtop_ha.models.poolers import BouncerDatabase, BouncerPool, PgBouncerState, PgpoolState
from pgtop_ha.models.thresholds import Level, Thresholds
from tests.ui import fixtures as fx

PATRONI = PatroniView(
    leader="node2", members=frozenset({"node1", "node2", "node3"}), streaming=frozenset({"node3"})
)


def test_a_database_pointing_at_a_member_that_does_not_lead_is_crit() -> None:
    old = BouncerDatabase(name="app", host="10.0.0.1", port=5432, member="node1")
    new = old.model_copy(update={"member": "node2"})
    haproxy = old.model_copy(update={"member": None, "port": 5000})
    finding = database_finding(old, PATRONI)
    assert finding is not None and finding.level is Level.CRIT and finding.rule == POOLER_CONTRADICTION.id
    assert finding.text.startswith("database app points at node1")
    assert database_finding(new, PATRONI) is None
    assert database_finding(haproxy, PATRONI) is None  # HAProxy's port: routing is HAProxy's
    # No single leader known this cycle: nothing to compare against, no finding.
    assert database_finding(old, PatroniView(members=PATRONI.members)) is None


def test_waiting_clients_warn_then_crit_after_five_seconds() -> None:
    def state(waiting: int, wait_s: float) -> PgBouncerState:
        pool = BouncerPool(database="app", user="app", cl_waiting=waiting, maxwait_s=wait_s)
        return PgBouncerState(name="pgb", target="h:1", ok=True, pools=(pool,))

    assert bouncer_findings(state(0, 0.0), PATRONI) == []
    assert [f.level for f in bouncer_findings(state(3, 1.0), PATRONI)] == [Level.WARN]
    assert [f.level for f in bouncer_findings(state(3, 6.0), PATRONI)] == [Level.CRIT]


def test_an_unread_pooler_is_one_warning_with_its_error() -> None:
    down = PgBouncerState(name="pgb", target="h:1", error="h:1: connection refused")
    assert [(f.level, f.text) for f in bouncer_findings(down, PATRONI)] == [
        (Level.WARN, "h:1: connection refused")
    ]


def test_pgpool_primary_not_the_leader_and_a_node_down_while_streaming() -> None:
    snap = fx.pooled(fx.failed_over(), following=False)
    pool = snap.pgpool[0]
    found = pgpool_findings(pool, patroni_view(snap))
    assert [(f.level, f.text.split(",")[0]) for f in found] == [
        (Level.CRIT, "primary is node1"),
        (Level.WARN, "node 2 (node3) is down in pgpool while Patroni says it streams; no reads go there"),
    ]
    following = fx.pooled(fx.failed_over())
    assert pgpool_findings(following.pgpool[0], patroni_view(following)) == []


def test_pgpool_with_no_primary_while_patroni_has_a_leader_is_crit() -> None:
    snap = fx.pooled(fx.healthy())
    nodes = tuple(n.model_copy(update={"role": "standby"}) for n in snap.pgpool[0].nodes)
    pool = snap.pgpool[0].model_copy(update={"nodes": nodes})
    found = pgpool_findings(pool, patroni_view(snap))
    assert [(f.level, f.text) for f in found] == [(Level.CRIT, "no primary, Patroni's leader is node1")]


def test_pooler_findings_reach_the_problems_list() -> None:
    snap = fx.pooled(fx.failed_over(), following=False)
    texts = [p.text for p in cluster_problems(snap, Thresholds(), DEFAULT_POOLS, snap.taken_at)]
    assert any(t.startswith("pgbouncer: database direct points at node1") for t in texts)
    assert any(t.startswith("pgpool: primary is node1") for t in texts)


def test_rates_come_from_two_reads_and_a_reset_counter_gives_none() -> None:
    a = fx.pooled(fx.healthy())
    b = fx.pooled(fx.healthy(a.taken_at + timedelta(seconds=10)), following=False)
    rates = bouncer_rates(a.pgbouncer[0], b.pgbouncer[0])
    assert rates["app"].xacts_s == (40_000 - 7_000) / 10
    assert rates["app"].wait_ms_per_xact == 1.0 / 1000  # 1 µs of wait per transaction
    assert bouncer_rates(b.pgbouncer[0], a.pgbouncer[0])["app"].xacts_s is None  # went backwards
    sel = select_rates(a.pgpool[0], b.pgpool[0])
    assert sel[0] == (4000 - 700) / 10
    assert select_rates(None, b.pgpool[0]) == {}
    assert select_rates(PgpoolState(name="p", target="h:1"), b.pgpool[0]) == {}
