"""Blocking trees and the wait sample: pure rules, checked on hand-made rows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pgtop_ha.collect.errors import ParseError
from pgtop_ha.collect.pgquery import Capabilities
from pgtop_ha.collect.postgres import parse_document
from pgtop_ha.judge.problems import cluster_problems
from pgtop_ha.models.derive import shared_memory_on_hugepages
from pgtop_ha.models.haproxy import Pools
from pgtop_ha.models.locks import blocking_trees
from pgtop_ha.models.snapshot import HugePages, LockProcess, Process
from pgtop_ha.models.thresholds import Level, Thresholds
from pgtop_ha.models.waits import kind, wait_counts, waiting
from tests.models.builders import healthy, node

FIXTURES = Path(__file__).parent.parent / "collect" / "fixtures"


def _p(pid: int, *blockers: int, mode: str | None = None) -> LockProcess:
    return LockProcess(
        pid=pid, blocked_by=blockers, waiting_mode=mode or ("RowExclusiveLock" if blockers else None)
    )


def test_a_chain_is_one_tree_from_its_root() -> None:
    lines = blocking_trees([_p(3, 2), _p(2, 1, mode="AccessExclusiveLock"), _p(1)])
    assert [(x.process.pid, x.depth, x.root, x.waiters) for x in lines] == [
        (1, 0, 1, 2),
        (2, 1, 1, 1),
        (3, 2, 1, 0),
    ]


def test_a_waiter_behind_two_blockers_shows_under_each() -> None:
    lines = blocking_trees([_p(1), _p(2), _p(3, 1, 2)])
    assert [(x.process.pid, x.root) for x in lines] == [(1, 1), (3, 1), (2, 2), (3, 2)]


def test_a_cycle_has_no_root_and_still_ends() -> None:
    lines = blocking_trees([_p(1, 2), _p(2, 1)])
    assert [(x.process.pid, x.depth) for x in lines] == [(1, 0), (2, 1)]


def test_a_blocker_not_in_the_rows_is_still_a_root() -> None:
    lines = blocking_trees([_p(7, 99)])  # pid 99 fell outside the statement's limit
    assert [(x.process.pid, x.depth) for x in lines] == [(99, 0), (7, 1)]


def _proc(
    state: str | None, wtype: str | None, event: str | None, backend: str = "client backend"
) -> Process:
    return Process(pid=1, state=state, wait_event_type=wtype, wait_event=event, backend_type=backend)


@pytest.mark.parametrize(
    ("proc", "counted"),
    [
        (_proc("idle", "Client", "ClientRead"), None),  # an idle session is no one's wait
        (_proc("active", None, None), ("CPU", None)),
        (_proc("active", "Client", "ClientWrite"), ("Client", "ClientWrite")),
        (_proc("idle in transaction", "Client", "ClientRead"), ("Client", "ClientRead")),
        (_proc("active", "Lock", "relation"), ("Lock", "relation")),
        (_proc(None, "Activity", "CheckpointerMain", "checkpointer"), None),
        (_proc(None, "IO", "DataFileWrite", "checkpointer"), ("IO", "DataFileWrite")),
        (_proc(None, None, None, "walsender"), None),
    ],
)
def test_who_counts_as_waiting(proc: Process, counted: tuple[str, str | None] | None) -> None:
    assert waiting(proc) == counted


def test_wait_counts_most_first_and_kinds() -> None:
    procs = [
        _proc("active", "Lock", "relation"),
        _proc("active", "Lock", "relation"),
        _proc("active", None, None),
    ]
    counts = wait_counts(procs)
    assert [(w.wait_class, w.event, w.count) for w in counts] == [("Lock", "relation", 2), ("CPU", None, 1)]
    assert (
        kind("Client", "ClientWrite") == "client"
        and kind("Lock", "tuple") == "lock"
        and kind("CPU", None) == "cpu"
    )


def test_a_bad_locks_part_is_one_parse_error() -> None:
    doc = json.loads((FIXTURES / "doc_primary_monitor.json").read_text())
    doc["locks"] = [{"pid": 1, "blocked_by": ["x"]}]
    with pytest.raises(ParseError, match=r"locks\.0\.blocked_by"):
        parse_document(json.dumps(doc), Capabilities(version=150000))
    doc["locks"] = [{"pid": 1, "blocked_by": [2]}]
    parsed = parse_document(json.dumps(doc), Capabilities(version=150000))
    assert parsed.fields["locks"][0].blocked_by == (2,)
    assert parsed.fields["waits"] is not None


@pytest.mark.parametrize(
    ("huge", "expected"),
    [
        (HugePages(status="on"), True),
        (HugePages(total=0, free=0, setting="try"), False),
        (HugePages(total=512, free=62, reserved=40, setting="try", shared_memory_pages=450), True),
        (HugePages(total=512, free=512, reserved=0, setting="try", shared_memory_pages=450), False),
        (HugePages(total=512, free=500, setting="on"), True),
        (HugePages(total=512, free=512, setting="off"), False),
        (None, None),
    ],
)
def test_shared_memory_on_hugepages(huge: HugePages | None, expected: bool | None) -> None:
    assert shared_memory_on_hugepages(huge) is expected


def _queued(*query_s: float | None) -> list[Process]:
    waiting = [
        Process(pid=900 + i, wait_event_type="Lock", wait_event="relation", lock_query_s=s)
        for i, s in enumerate(query_s)
    ]
    return [Process(pid=10, state="active"), *waiting]


@pytest.mark.parametrize(
    ("query_s", "level", "text"),
    [
        ((3.0, 8.0), None, None),  # queued a few seconds: the Locks pane's business, not a problem
        ((12.5,), Level.WARN, "1 session waits on a lock, longest query 12s (l: Locks)"),
        ((4.0, 75.0, float("nan")), Level.CRIT, "2 sessions wait on a lock, longest query 75s (l: Locks)"),
    ],
)
def test_sessions_queued_behind_a_lock_are_a_problem_on_every_screen(
    query_s: tuple[float, ...], level: Level | None, text: str | None
) -> None:
    # `lab fault lock` (an AccessExclusiveLock held, two sessions queued behind it for 40 s): the
    # overview at 80x24 said nothing, its Locks pane being off screen.
    snap = healthy()
    snap = node(snap, "node1", processes=tuple(_queued(*query_s)))
    found = [
        p
        for p in cluster_problems(snap, Thresholds(), Pools(("pg_writer",), ("pg_reader",)), snap.taken_at)
        if p.key == "lock waits"
    ]
    if level is None:
        assert found == []
    else:
        (problem,) = found
        assert (problem.level, problem.subject, problem.text) == (level, "node1", text)
