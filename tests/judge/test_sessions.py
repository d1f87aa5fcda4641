"""Open transactions judged: too long, idle in one too long; the words stay while the level does."""

from __future__ import annotations

from pgtop_ha.judge.rules import SESSIONS_IDLE_IN_TRANSACTION, SESSIONS_LONG_TRANSACTION
from pgtop_ha.judge.sessions import open_transaction_marks, session_findings
from pgtop_ha.models.snapshot import OpenTransaction
from pgtop_ha.models.thresholds import Level, Thresholds
from tests.models.builders import healthy, node

T = Thresholds()


def _open(state: str, xact_s: float, state_s: float, holds: bool = False) -> OpenTransaction:
    return OpenTransaction(
        pid=812, usename="app", application_name="batch", state=state, xact_s=xact_s, state_s=state_s,
        holds_xmin=holds,
    )  # fmt: skip


def test_a_transaction_younger_than_its_band_is_fine() -> None:
    assert open_transaction_marks(_open("active", 30, 30), T) == ()
    assert open_transaction_marks(_open("idle in transaction", 59, 59), T) == ()


def test_a_long_transaction_warns_then_is_critical_with_the_limit_it_passed() -> None:
    (warn,) = open_transaction_marks(_open("active", 601, 601), T)
    assert (warn.rule, warn.level, warn.part) == (SESSIONS_LONG_TRANSACTION.id, Level.WARN, "xact")
    assert warn.text == "pid 812 (batch) has had a transaction open past 10m"
    (crit,) = open_transaction_marks(_open("active", 3601, 3601), T)
    assert crit.level == Level.CRIT and crit.text.endswith("past 1h")
    # The words do not tick with the age: a problem's row stays the same while its level does.
    assert open_transaction_marks(_open("active", 900, 900), T)[0].text == warn.text


def test_idle_in_transaction_says_whether_it_holds_the_horizon() -> None:
    (idle,) = open_transaction_marks(_open("idle in transaction", 61, 61, holds=True), T)
    assert (idle.rule, idle.level, idle.part) == (SESSIONS_IDLE_IN_TRANSACTION.id, Level.WARN, "state")
    assert idle.text == "pid 812 (batch) idle in transaction past 1m, holding the xmin horizon"
    both = open_transaction_marks(_open("idle in transaction (aborted)", 4000, 700), T)
    assert [(m.rule, m.level) for m in both] == [
        (SESSIONS_LONG_TRANSACTION.id, Level.CRIT),
        (SESSIONS_IDLE_IN_TRANSACTION.id, Level.CRIT),
    ]


def test_findings_carry_the_pid_they_are_about() -> None:
    snap = node(healthy(), "node1", open_transactions=(_open("active", 700, 700),))
    n = snap.node("node1")
    assert n is not None
    assert [(pid, m.rule) for pid, m in session_findings(n, T)] == [(812, SESSIONS_LONG_TRANSACTION.id)]
