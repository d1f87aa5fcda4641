"""The events report's text table: no value is cut into another."""

from __future__ import annotations

from pgtop_ha.record.report import NAME_LIMIT, _failover_lines, _time, format_events


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


def test_a_failovers_bounds_and_loss_in_time_are_said() -> None:
    report: dict[str, object] = {
        "lost_at": "2026-11-29T10:00:03+00:00",
        "old_leader": "node1",
        "new_leader": "node2",
        "write_outage_from": "2026-11-29T10:00:01+00:00",
        "write_outage_to": "2026-11-29T10:00:08+00:00",
        "write_outage_s": 7.0,
        "write_outage_from_after": "2026-11-29T10:00:00+00:00",
        "write_outage_to_after": "2026-11-29T10:00:06+00:00",
        "lag_at_promotion_bytes": 500,
        "lag_at_promotion_s": 1.25,
        "done": True,
    }
    outage, lag = _failover_lines(1, report)[1:3]
    began, ended = _time(report["write_outage_from_after"]), _time(report["write_outage_to_after"])
    assert outage.endswith(f"7.0 s (began after {began}, ended after {ended}: the polls before)")
    assert "500 B (the old leader's last 1.2 s of writes or more)" in lag
    assert "write_outage_to_after" not in "\n".join(_failover_lines(1, report))  # said once, not dumped
