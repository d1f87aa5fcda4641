"""Numbers no server can really send, and strings full of escapes: never an exception in a pane.

Bounded at both ends: the collector's coercion and the snapshot models turn an int wider than
64 bits or a float that is not finite into "unknown"; the panes' helpers still show any int or
float as text ("?" when absurd). An exception that escapes anyway ends the console with exit 1,
one line and a 0600 crash report.
"""

from __future__ import annotations

import dataclasses
import enum
import stat
import time
import types
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Union, get_args, get_origin

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from pgtop_ha.collect.coerce import as_float, as_int
from pgtop_ha.collect.haproxy import parse_stat_csv
from pgtop_ha.collect.patroni import decode_json, parse_cluster
from pgtop_ha.engines.events import diff
from pgtop_ha.judge.eligibility import takeover_plan
from pgtop_ha.models.snapshot import ClusterSnapshot, Member, Process, Replication
from pgtop_ha.ui import format as fmt
from pgtop_ha.ui.operator.takeover_modal import candidate_line
from pgtop_ha.ui.panes import registry
from pgtop_ha.ui.panes.base import Cell, Context, Table, num
from pgtop_ha.ui.widgets.heartbeat import heartbeat_text
from tests.ui import fixtures as fx

HUGE = (10**400, -(10**400), 2**70, 2**64, 2**63, -(2**63), 2**63 - 1, -5, -1, 0)
CONTROLS = {chr(c) for c in (*range(0x20), *range(0x7F, 0xA0))}
HOSTILE_TEXT = (
    "pg[/]1",
    "[@click=app.quit]x",
    "[b]x[/b]",
    "a\x1b[2Jb",
    "t\x1b]0;pwned\x07u",
    "\x9b31m",
    "\u202eevil",
    "x" * 2000,
    "",
)
# "slot" is also the key of the slot matrix's first column.
NAMES = st.sampled_from(("node1", "node2", "slot", "pg[/]1", "[@click=app.quit]x", "a\x1b[2Jb"))
TEXTS = st.one_of(st.sampled_from(HOSTILE_TEXT), st.text(max_size=12))
INTS = st.one_of(st.sampled_from(HUGE), st.integers(min_value=-(2**80), max_value=2**80))
FLOATS = st.floats(allow_nan=True, allow_infinity=True)
DATES = st.datetimes(timezones=st.just(UTC))
ANY_VALUE = st.one_of(INTS, FLOATS, TEXTS, st.booleans(), st.none())
# Fields holding a member's name: drawn from a few names so members, nodes and servers meet.
NAME_FIELDS = {"name", "server", "leader", "application_name", "slot_name", "proxy", "new_leader"}


# -- the collector's end ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (5, 5),
        (-5, -5),
        (2**63 - 1, 2**63 - 1),
        (2**63, None),
        (-(2**63), None),
        (10**400, None),
        (1e300, None),
        (3.0, 3),
        (3.5, None),
        (float("nan"), None),
        (float("inf"), None),
        (True, None),
        (" 42 ", 42),
        ("-7", -7),
        ("--5", None),  # used to reach int() and raise
        ("²", None),  # str.isdigit() says yes, int() says no
        ("9" * 20, None),
        ("1e3", None),
        (None, None),
        ([1], None),
    ],
)
def test_as_int_is_a_64_bit_int_or_none(value: Any, expected: int | None) -> None:
    assert as_int(value) == expected


def test_as_int_refuses_a_long_digit_string_at_once() -> None:
    start = time.perf_counter()
    for _ in range(100):
        assert as_int("9" * 100_000) is None
    assert time.perf_counter() - start < 0.5  # int() of 100k digits alone costs more


def test_as_float_of_a_huge_int_is_none() -> None:
    assert as_float(10**400) is None
    assert as_float(float("nan")) is None
    assert as_float(2) == 2.0


def test_patroni_and_haproxy_answers_with_huge_numbers() -> None:
    body = (
        '{"members": [{"name": "pg[/]1", "role": "leader", "state": "running", "timeline": 1'
        + "0" * 400
        + ', "port": 18446744073709551616, "lag": -5}]}'
    )
    member = parse_cluster(decode_json(body, "/cluster")).members[0]
    assert (member.name, member.timeline, member.port) == ("pg[/]1", None, None)
    csv = "# pxname,svname,status,scur,stot,lastchg,weight\npg_writer,node1,UP,1" + "9" * 5000 + ",-3,,1\n"
    server = parse_stat_csv(csv)[0]
    assert (server.sessions, server.sessions_total, server.last_change_s) == (None, -3, None)


# -- the models' end -------------------------------------------------------------------------


def test_models_turn_absurd_numbers_into_unknown() -> None:
    m = Member(name="x", timeline=10**400, lag_bytes=-5, port=2**70, dcs_last_seen=2**63 - 1)
    assert (m.timeline, m.lag_bytes, m.port, m.dcs_last_seen) == (None, -5, None, 2**63 - 1)
    r = Replication(replay_lag_s=float("nan"), write_lag_s=float("inf"), flush_lag_s=1.5, sent_lsn=2**70)
    assert (r.replay_lag_s, r.write_lag_s, r.flush_lag_s, r.sent_lsn) == (None, None, 1.5, None)
    loaded = Member.model_validate_json('{"name": "x", "timeline": 1' + "0" * 400 + "}")
    assert loaded.timeline is None
    with pytest.raises(ValueError, match=r"Process\.pid is out of range"):
        Process(pid=2**64)


# -- the panes' end --------------------------------------------------------------------------

NUMBERS = st.one_of(INTS, st.integers(min_value=-(10**500), max_value=10**500), FLOATS, st.none())


@given(NUMBERS)
@settings(max_examples=300, deadline=None)
def test_number_helpers_never_raise(value: Any) -> None:
    outputs = [
        fmt.age(value),
        fmt.duration(value),
        fmt.rate(value),
        fmt.human_bytes(value),
        fmt.human_bytes(value, signed=True),
        fmt.count(value),
        fmt.lsn(value),
        fmt.bar(value),
        fmt.sparkline([value, 1, value, 0.5, None]),
    ]
    assert all(isinstance(o, str) and len(o) < 40 for o in outputs), outputs
    sort = num("x", value).sort
    assert isinstance(sort, float) and sort == sort  # never NaN: sorting stays total
    key = Cell("x", sort=value).sort_key()  # None: sorted by its text
    assert key[0] == 1 if value is None else key[0] == 0 and key[1] == key[1]
    ratio = fmt.ratio(value, 3)
    assert ratio is None or ratio == ratio


@pytest.mark.parametrize(
    ("helper", "value", "expected"),
    [
        (fmt.count, 10**400, "?"),
        (fmt.count, -1, "?"),
        (fmt.count, 3, "3"),
        (fmt.human_bytes, -5, "?"),
        (fmt.human_bytes, 2**64, "?"),
        (fmt.lsn, 2**70, "?"),
        (fmt.lsn, -1, "?"),
        (fmt.lsn, 2**64 - 1, "FFFFFFFF/FFFFFFFF"),
        (fmt.age, float("inf"), "?"),
        (fmt.age, -3, "?"),
        (fmt.duration, float("nan"), "?"),
        (fmt.rate, 1e300, "?"),
    ],
)
def test_absurd_numbers_show_as_a_question_mark(
    helper: Callable[[Any], str], value: Any, expected: str
) -> None:
    assert helper(value) == expected


def test_safe_wal_size_may_be_negative() -> None:
    assert fmt.human_bytes(-2048, signed=True) == "-2.0 KiB"


def _strategy(annotation: Any, field: str, required: bool) -> st.SearchStrategy[Any]:
    """Values for a model field: huge/negative ints, NaN/inf floats, hostile strings."""
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        args = get_args(annotation)
        parts = [_strategy(a, field, required) for a in args if a is not type(None)]
        return st.one_of(st.none(), *parts) if type(None) in args else st.one_of(*parts)
    if annotation is int:
        # A required number out of range is a validation error (tested above), not a snapshot.
        return st.integers(min_value=0, max_value=2**31) if required else INTS
    if annotation is float:
        return FLOATS
    if annotation is str:
        return st.one_of(NAMES, TEXTS) if field in NAME_FIELDS else TEXTS
    if annotation is bool:
        return st.booleans()
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return st.sampled_from(list(annotation))
    if annotation is datetime:
        return DATES
    if annotation is Any:
        return ANY_VALUE
    if origin is tuple:
        return st.lists(_strategy(get_args(annotation)[0], field, False), max_size=3).map(tuple)
    if origin is dict:
        _, value = get_args(annotation)
        return st.dictionaries(st.one_of(NAMES, TEXTS), _strategy(value, field, False), max_size=3)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return _model(annotation)
    raise AssertionError(f"no strategy for {annotation!r}")


def _model(cls: type[BaseModel]) -> st.SearchStrategy[Any]:
    required = {n: _strategy(f.annotation, n, True) for n, f in cls.model_fields.items() if f.is_required()}
    optional = {
        n: _strategy(f.annotation, n, False) for n, f in cls.model_fields.items() if not f.is_required()
    }
    if "reachable" in optional:  # mostly reachable, or most panes skip the node
        required["reachable"] = st.sampled_from((True, True, True, False))
        del optional["reachable"]
    # Validated, as the collector and a recording build them.
    return st.fixed_dictionaries(required, optional=optional).map(cls.model_validate)


SNAPSHOTS = _model(ClusterSnapshot)
SPECS: list[Table] = [table for pane in registry.PANES for table in pane.tables]


def _assert_shown_clean(text: str) -> None:
    shown = fmt.shown(text)
    assert not CONTROLS & set(shown), repr(shown)
    assert len(shown) <= fmt.MAX_TEXT


@given(prev=SNAPSHOTS, snap=SNAPSHOTS)
@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
)
def test_rows_of_every_pane_never_raise(prev: ClusterSnapshot, snap: ClusterSnapshot) -> None:
    s = fx.settings()
    events = diff(prev, snap)  # what the app records from the same two snapshots
    ctx = Context(
        thresholds=s.thresholds,
        pools=s.haproxy.pools(),
        now=snap.taken_at + timedelta(seconds=3),
        history=(prev,),
        events=events,
    )
    for spec in SPECS:
        for row in spec.rows(snap, ctx):
            for c in row.cells.values():
                _assert_shown_clean(c.text)
                key = c.sort_key()
                assert key[0] == 1 or key[1] == key[1]  # no NaN sort keys
        if spec.dynamic_columns is not None:
            columns = spec.dynamic_columns(snap)
            assert len({c.key for c in columns}) == len(columns)  # a table refuses a duplicate key
            for column in columns:
                _assert_shown_clean(column.label)
    header = heartbeat_text(
        snapshot=snap,
        now=ctx.now,
        thresholds=s.thresholds,
        read_only=True,
        paused=False,
        interval=1.0,
        node_filter="[/]\x1b[2J",
        note="\x1b]0;pwned\x07",
        styles={},
    ).plain
    assert not CONTROLS & set(header) and "pwned" not in header
    for candidate in takeover_plan(snap).candidates:
        line = candidate_line(candidate)
        assert not CONTROLS & set(line.replace("\n", ""))


# -- and when something raises anyway ---------------------------------------------------------


def test_a_pane_that_raises_ends_the_console_with_exit_1_and_a_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from textual.app import App

    from pgtop_ha import console
    from pgtop_ha.collect.poller import Poller
    from pgtop_ha.ui.app import PgtopApp
    from tests.support.scripted import ScriptedSource

    def broken(snapshot: ClusterSnapshot, ctx: Context) -> list[Any]:
        raise RuntimeError("pane exploded at http://admin:secret@db1:8008/patroni")

    panes = tuple(dataclasses.replace(p, rows=broken) if p.id == "overview" else p for p in registry.PANES)
    monkeypatch.setattr(registry, "PANES", panes)
    monkeypatch.setattr(Poller, "from_settings", staticmethod(lambda _s, *_: ScriptedSource([fx.healthy()])))

    async def headless(self: PgtopApp, **_: object) -> None:
        await App.run_async(self, headless=True, size=(100, 30))

    monkeypatch.setattr(PgtopApp, "run_async", headless)  # how runtime.run_built runs the console
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    for name in ("SSH_CONNECTION", "SSH_CLIENT", "SSH_TTY"):
        monkeypatch.delenv(name, raising=False)
    start = time.monotonic()
    code = console.run_console(fx.settings(read_only=True))
    assert time.monotonic() - start < 30
    assert code == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert "unexpected error" in err[0] and "RuntimeError: pane exploded" in err[0]
    assert "secret" not in err[0]
    reports = list((tmp_path / "pgtop-ha" / "crashes").glob("crash-*.txt"))
    assert len(reports) == 1 and str(reports[0]) in err[0]
    assert stat.S_IMODE(reports[0].stat().st_mode) == 0o600
    text = reports[0].read_text()
    assert "RuntimeError: pane exploded" in text and "secret" not in text
