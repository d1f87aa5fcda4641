"""Patroni answers a real Patroni never sends: each value checked against its meaning, every list capped.

A fake Patroni on loopback (a real one cannot be made to send these on demand) feeds a real
poller; the snapshot, the judge's verdicts and `check`'s perfdata are what is checked.
"""

from __future__ import annotations

import json
import time
from typing import Any

from pgtop_ha.check_cli import perfdata
from pgtop_ha.collect.patroni import MAX_HISTORY, MAX_TAGS, parse_cluster, parse_patroni
from pgtop_ha.collect.poller import Poller
from pgtop_ha.judge.checks import disagreements
from pgtop_ha.judge.judgement import judgement
from pgtop_ha.models.haproxy import DEFAULT_POOLS
from pgtop_ha.models.snapshot import ClusterSnapshot
from pgtop_ha.models.thresholds import Thresholds
from pgtop_ha.settings import Settings
from tests.hostile.fakes import fake_server, json_answer
from tests.support.clocks import StepClock


def _rules(snap: ClusterSnapshot) -> dict[str, list[str]]:
    seen = [(c, snap.taken_at) for c in disagreements(snap, DEFAULT_POOLS)]
    out: dict[str, list[str]] = {}
    for v in judgement(snap, Thresholds(), DEFAULT_POOLS, seen).verdicts:
        out.setdefault(v.rule or "", []).append(v.text)
    return out


async def _cycles(
    cluster: dict[str, Any], own: dict[str, Any], history: list[Any], n: int = 1
) -> list[ClusterSnapshot]:
    """``n`` cycles of a real poller against a fake Patroni whose members all answer with ``own``."""
    routes = {
        "/patroni": json_answer(json.dumps(own).encode()),
        "/history": json_answer(json.dumps(history).encode()),
        "/config": json_answer(b"{}"),
    }
    async with fake_server(routes) as patroni:
        for m in cluster["members"]:
            m["api_url"] = f"{patroni.url}/patroni"
        patroni.routes["/cluster"] = json_answer(json.dumps(cluster).encode())
        poller = Poller.from_settings(Settings(patroni={"urls": [patroni.url]}), StepClock())
        try:
            return [await poller.cycle() for _ in range(n)]
        finally:
            await poller.aclose()


async def test_a_long_history_keeps_its_newest_rows_and_is_sent_once() -> None:
    history = [[tl, tl * 1000, "r"] for tl in range(1, 150_001)]  # about 3 MB: under the byte cap
    cluster = {
        "scope": "c",
        "members": [{"name": "m1", "role": "leader", "state": "running", "timeline": 150_001}],
    }
    own = {"role": "primary", "state": "running", "timeline": 150_001, "patroni": {"version": "4.0.4"}}
    first, second = await _cycles(cluster, own, history, n=2)
    assert first.history is not None and len(first.history) == MAX_HISTORY
    assert first.history[-1].timeline == 150_000 and first.history_total == 150_000
    # Unchanged since: not carried again (the last one given still holds).
    assert second.history is None and second.history_total is None
    assert len(second.model_dump_json()) < 10_000


async def test_values_against_their_meaning() -> None:
    now = time.time()
    cluster = {
        "scope": "c",
        "pause": "yes",
        "members": [
            {"name": "m1", "role": "leader", "state": "running", "timeline": 3},
            {"name": "m2", "role": "replica", "state": "streaming", "timeline": 3, "lag": -4096,
             "tags": {f"t{i}": "v" * 1000 for i in range(500)}},
        ],
    }  # fmt: skip
    own = {
        "role": "replica",
        "state": "running",
        "timeline": 3,
        "pause": "yes",
        "dcs_last_seen": int(now + 3600),
        "patroni": {"version": "x" * 5007},
    }
    (snap,) = await _cycles(cluster, own, [])
    m2 = snap.member("m2")
    assert m2 is not None
    # A negative lag is no lag: not data, and never perfdata.
    assert m2.lag_bytes is None
    assert not any(p.startswith("max_lag=-") for p in perfdata(snap, Settings()))
    # Tags: the first few, text cut.
    assert len(m2.tags) == MAX_TAGS and all(len(str(v)) <= 256 for v in m2.tags.values())
    # A version that does not parse: "unknown", cut, and flagged unsupported.
    assert m2.patroni_version == "unknown"
    assert "x" * 30 not in json.dumps([m.malformed for m in snap.members])
    rules = _rules(snap)
    assert any("does not parse" in t for t in rules["patroni.unsupported"])
    # pause "yes" is not silently "not paused": unknown, and named once per answer.
    assert snap.cluster.pause is None and m2.pause is None
    malformed = rules["patroni.malformed"]
    assert sum("/cluster: pause is 'yes'" in t for t in malformed) == 1
    assert any("lag is -4096, below 0" in t for t in malformed)
    # A DCS contact in the future is a clock verdict, not a fresh DCS.
    assert any("in the future" in t for t in rules["patroni.clock-skew"])


def test_parsers_name_a_wrong_type_once_and_keep_reading() -> None:
    own = parse_patroni({"role": "replica", "state": "running", "timeline": "three", "pending_restart": 1})
    assert own.timeline is None and own.pending_restart is None
    assert len(own.malformed) == 2 and all(n.startswith("/patroni:") for n in own.malformed)
    # Patroni omits pause and pending_restart when false: absent is false, not unknown.
    calm = parse_patroni({"role": "replica", "state": "running"})
    assert calm.pause is False and calm.pending_restart is False and calm.malformed == ()
    view = parse_cluster({"members": [{"name": "a", "role": "leader", "lag": "unknown", "timeline": 0}]})
    assert view.members[0].lag_bytes is None
    assert view.members[0].malformed == ("/cluster a: timeline is 0, below 1: not data, read as unknown",)
