"""Patroni JSON parsers: real answers from a Patroni 4.1 lab, and fuzzing."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pgtop_ha.collect.errors import ParseError
from pgtop_ha.collect.http import GetOnlyClient
from pgtop_ha.collect.patroni import (
    PatroniClient,
    decode_json,
    parse_cluster,
    parse_config,
    parse_history,
    parse_patroni,
)
from pgtop_ha.models.urls import root_of

FIXTURES = Path(__file__).parent / "fixtures"


def _load(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text())


def test_cluster_members_and_leader() -> None:
    view = parse_cluster(_load("cluster.json"))
    assert [m.name for m in view.members] == ["node1", "node2", "node3"]
    assert view.info.leader == "node2"
    assert view.info.name == "pgtop-lab"
    node1 = view.members[0]
    assert (node1.role, node1.state, node1.timeline, node1.lag_bytes) == ("replica", "streaming", 2, 0)
    assert (node1.host, node1.port) == ("127.0.0.1", 25410)
    assert node1.api_url == "http://127.0.0.1:25420/patroni"
    assert view.members[1].lag_bytes is None  # the leader has no lag entry


def test_cluster_unknown_lag_and_bad_entries() -> None:
    data = {
        "members": [
            {"name": "a", "role": "replica", "lag": "unknown", "port": "x"},
            {"name": "a", "role": "leader"},  # duplicate name: first wins
            "junk",
            {"role": "replica"},  # no name
            {"name": "b", "role": "master", "port": 70000},
        ]
    }
    view = parse_cluster(data)
    assert [m.name for m in view.members] == ["a", "b"]
    assert view.members[0].lag_bytes is None
    assert view.members[0].port is None
    assert view.members[1].port is None
    assert view.info.leader == "b"  # pre-3.0 "master" is a leader


def test_patroni_primary_and_replica() -> None:
    primary = parse_patroni(_load("patroni_primary.json"))
    assert primary.role == "primary"
    assert primary.state == "running"
    assert primary.scope == "pgtop-lab"
    assert primary.version and primary.version.startswith("4.")
    assert primary.pending_restart is False
    replica = parse_patroni(_load("patroni_replica.json"))
    assert replica.role == "replica"
    assert replica.timeline == primary.timeline


def test_history_and_config() -> None:
    rows = parse_history(_load("history.json"))
    assert rows[0].timeline == 1
    assert rows[0].new_leader == "node2"
    assert isinstance(rows[0].lsn, int)
    short = parse_history([[3, 100, "reason"], ["x"], [], [4]])
    assert [r.timeline for r in short] == [3, 4]
    assert short[0].timestamp is None
    config = parse_config(_load("config.json"))
    assert config.maximum_lag_on_failover == 16777216
    assert config.ttl == 20
    assert "lab_sub" in config.permanent_slots
    assert parse_config({"slots": {"x": None}}).permanent_slots == {"x": {}}


@pytest.mark.parametrize(
    ("func", "value"),
    [
        (parse_cluster, []),
        (parse_cluster, {"members": "no"}),
        (parse_patroni, {"foo": 1}),
        (parse_patroni, None),
        (parse_history, {}),
        (parse_config, [1]),
    ],
)
def test_wrong_shapes_raise_parse_error(func: Any, value: Any) -> None:
    with pytest.raises(ParseError):
        func(value)


def test_decode_json_errors() -> None:
    with pytest.raises(ParseError, match="patroni /cluster"):
        decode_json(b"<html>", "patroni /cluster")
    with pytest.raises(ParseError):
        decode_json("[" * 100000, "deep")


def test_base_url() -> None:
    assert root_of("http://h:8008/patroni") == "http://h:8008"
    assert root_of("http://h:8008/") == "http://h:8008"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=5)
    ),
    max_leaves=20,
)
member_like = st.fixed_dictionaries(
    {},
    optional={
        "name": json_values | st.text(min_size=1, max_size=5),
        "role": json_values | st.sampled_from(["leader", "replica", "standby_leader"]),
        "state": json_values,
        "host": json_values,
        "port": json_values | st.integers(),
        "timeline": json_values,
        "lag": json_values | st.just("unknown"),
        "tags": json_values,
        "api_url": json_values,
    },
)


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        json_values,
        st.fixed_dictionaries({"members": st.lists(member_like | json_values, max_size=5)}),
    )
)
def test_fuzz_cluster(value: Any) -> None:
    try:
        view = parse_cluster(value)
    except ParseError:
        return
    assert all(m.name for m in view.members)


@settings(max_examples=300, deadline=None)
@given(
    json_values
    | st.fixed_dictionaries(
        {"role": json_values, "state": json_values},
        optional={"patroni": json_values, "timeline": json_values, "pending_restart": json_values},
    )
)
def test_fuzz_patroni(value: Any) -> None:
    try:
        own = parse_patroni(value)
    except ParseError:
        return
    assert own.role is None or isinstance(own.role, str)
    assert own.timeline is None or isinstance(own.timeline, int)


@settings(max_examples=300, deadline=None)
@given(json_values | st.lists(st.lists(json_values, max_size=6), max_size=5))
def test_fuzz_history_and_config(value: Any) -> None:
    with contextlib.suppress(ParseError):
        history = parse_history(value)
        assert all(isinstance(h.timeline, int) for h in history)
    with contextlib.suppress(ParseError):
        config = parse_config(value)
        assert isinstance(config.permanent_slots, dict)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200) | st.text(max_size=200))
def test_fuzz_decode(raw: bytes | str) -> None:
    try:
        value = decode_json(raw, "x")
    except ParseError:
        return
    assert isinstance(value, dict | list | str | int | float | bool | None)


async def test_the_same_answer_is_not_parsed_again_a_new_or_bad_one_is() -> None:
    # A calm cluster's /cluster and /patroni answer the same bytes each second: the frozen view
    # parsed last time comes back. Other bytes are parsed, and bad ones still fail.
    calm = (FIXTURES / "cluster.json").read_bytes()
    moved = calm.replace(b'"streaming"', b'"stopped"', 1)
    answers = [calm, calm, moved, b"{not json"]

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=answers.pop(0))

    client = PatroniClient(GetOnlyClient(timeout=2, transport=httpx.MockTransport(answer)), 2)
    first = await client.cluster("http://127.0.0.1:8008")
    assert await client.cluster("http://127.0.0.1:8008") is first
    changed = await client.cluster("http://127.0.0.1:8008")
    assert changed is not first and "stopped" in {m.state for m in changed.members}
    with pytest.raises(ParseError, match="not JSON"):
        await client.cluster("http://127.0.0.1:8008")
    assert client.requests == 4
