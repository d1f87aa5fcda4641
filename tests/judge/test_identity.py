"""Names that can't pass for another: cleaned at parse, duplicates and look-alikes flagged."""

from __future__ import annotations

import json

import pytest

from pgtop_ha.collect.haproxy import parse_stat_csv
from pgtop_ha.collect.patroni import parse_cluster
from pgtop_ha.judge.problems import cluster_problems
from pgtop_ha.models.snapshot import Member
from pgtop_ha.models.text import clean, has_hidden
from pgtop_ha.models.thresholds import Level
from tests.models.builders import healthy, member, node, t
from tests.ui import fixtures as fx

SETTINGS = fx.settings()
POOLS = SETTINGS.haproxy.pools()
HIDDEN = {
    "zero-width space": "\u200b",
    "zero-width non-joiner": "\u200c",
    "zero-width joiner": "\u200d",
    "word joiner": "\u2060",
    "BOM": "\ufeff",
    "LRM": "\u200e",
    "RLM": "\u200f",
    "ALM": "\u061c",
    "soft hyphen": "\u00ad",
    "tag letter": "\U000e0041",
}


@pytest.mark.parametrize("char", list(HIDDEN.values()), ids=list(HIDDEN))
def test_every_invisible_character_is_removed(char: str) -> None:
    assert clean(f"pg{char}1") == "pg1" and has_hidden(f"pg{char}1")


def test_line_and_paragraph_separators_become_spaces_and_scripts_stay() -> None:
    assert clean("a\u2028b\u2029c") == "a b c"
    for text in ("日本語", "café", "✔ node1", "😀", "pg-prod-eu-1a"):
        assert clean(text) == text and not has_hidden(text)


def test_a_name_is_cleaned_when_parsed_and_says_what_it_was() -> None:
    m = Member(name="pg\u200b1", role="lea\u200bder")
    assert (m.name, m.role, m.hidden) == ("pg1", "leader", "U+200B")
    snap = member(healthy(), "node2", hidden="U+200B")
    (p,) = [
        p for p in cluster_problems(snap, SETTINGS.thresholds, POOLS, t(0)) if p.rule == "identity.hidden"
    ]
    assert p.level == Level.WARN and p.subject == "node2" and "(U+200B)" in p.text


def _cluster(*members: dict[str, object]) -> dict[str, object]:
    return {"scope": "batman", "members": list(members)}


def test_a_duplicate_member_name_is_critical_and_names_each_host() -> None:
    view = parse_cluster(
        _cluster(
            {"name": "node1", "role": "replica", "host": "10.0.0.1", "port": 5432},
            {"name": "node1\u200b", "role": "leader", "host": "10.0.0.9", "port": 5432},
            {"name": "node2", "role": "replica", "host": "10.0.0.2", "port": 5432},
        )
    )
    assert [m.name for m in view.members] == ["node1", "node2"]
    assert view.info.duplicates == ("node1 (10.0.0.1:5432, 10.0.0.9:5432)",)
    snap = healthy().model_copy(
        update={"cluster": healthy().cluster.model_copy(update={"duplicates": view.info.duplicates})}
    )
    (p,) = [
        p for p in cluster_problems(snap, SETTINGS.thresholds, POOLS, t(0)) if p.rule == "identity.duplicate"
    ]
    assert p.level == Level.CRIT and "10.0.0.1:5432, 10.0.0.9:5432" in p.text


def test_look_alike_names_are_flagged() -> None:
    snap = healthy()
    members = tuple(m.model_copy(update={"name": "nоde3"}) if m.name == "node3" else m for m in snap.members)
    snap = snap.model_copy(update={"members": members})  # a Cyrillic letter: one name more than the nodes
    found = [
        p for p in cluster_problems(snap, SETTINGS.thresholds, POOLS, t(0)) if p.rule == "identity.look-alike"
    ]
    assert len(found) == 1 and "'node3'" in found[0].text and "'n\\u043ede3'" in found[0].text


def test_a_nul_inside_a_haproxy_field_is_the_same_value_for_the_screen_and_the_pools() -> None:
    csv = (
        "# pxname,svname,qcur,qmax,scur,smax,slim,stot,bin,bout,dreq,dresp,ereq,econ,eresp,wretr,wredis,"
        "status,weight,act,bck,chkfail,chkdown,lastchg,downtime,qlimit,pid,iid,sid,throttle,lbtot,tracked,"
        "type,rate,rate_lim,rate_max,check_status,check_code\n"
        "pg_wri\x00ter,node1,0,0,1,1,,1,0,0,,0,,0,0,0,0,UP,1,1,0,0,0,5,0,,1,2,1,,1,,2,0,,1,L7OK,200\n"
    )
    (srv,) = parse_stat_csv(csv)
    assert srv.proxy == "pg_writer" and POOLS.kind(srv.proxy) == "writer"
    assert "\\u0000" not in json.dumps(srv.model_dump())


def test_a_node_past_its_row_caps_says_how_many_more() -> None:
    n = healthy().node("node1")
    assert n is not None
    snap = node(healthy(), "node1", slots_total=len(n.slots) + 700, processes_total=5000)
    found = {
        p.text for p in cluster_problems(snap, SETTINGS.thresholds, POOLS, t(0)) if p.rule == "pg.rows-capped"
    }
    backends = sum(1 for p in n.processes if p.backend_type != "postmaster")
    assert found == {
        f"700 more slots not shown ({len(n.slots) + 700}; past the row cap)",
        f"{5000 - backends} more processes not shown (5000; past the row cap)",
    }


def test_a_name_is_one_line_while_other_texts_keep_their_line_breaks() -> None:
    m = Member(name="pg\n1", state="a\nb")
    assert (m.name, m.hidden, m.state) == ("pg 1", "U+000A", "a\nb")
    view = parse_cluster(
        _cluster({"name": "pg 1", "host": "a", "port": 1}, {"name": "pg\n1", "host": "b", "port": 2})
    )
    assert view.info.duplicates == ("pg 1 (a:1, b:2)",)
