"""The events report's text table: no value is cut into another."""

from __future__ import annotations

from pgtop_ha.record.report import NAME_LIMIT, format_events


def _event(node: str, kind: str = "reachability") -> dict[str, object]:
    return {"at": "2026-11-29T01:00:00+00:00", "kind": kind, "node": node, "text": "x", "severity": 1}


def test_a_long_member_name_is_printed_whole_not_cut_into_another() -> None:
    text = format_events([_event("pg-replica-10"), _event("pg-replica-1")])
    lines = text.splitlines()
    assert " pg-replica-10 " in lines[1] and " pg-replica-1 " in lines[2]
    assert lines[0].index("KIND") == lines[1].index("reachability")  # columns still line up


def test_a_hostile_name_ends_in_an_ellipsis_at_the_limit() -> None:
    line = format_events([_event("n" * 500, kind="k" * 500)]).splitlines()[1]
    assert "n" * (NAME_LIMIT - 1) + "…" in line and "n" * NAME_LIMIT not in line
    assert "k" * (NAME_LIMIT - 1) + "…" in line


def test_no_events_says_so() -> None:
    assert format_events([]).splitlines()[-1] == "(no events)"
