"""The pgBackRest source without a lab: `info` JSON captured from the lab, hostile output, spool, queue."""

from __future__ import annotations

import asyncio
import json
import os
import resource
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psutil
import pytest

from pgtop_ha.collect.errors import ParseError
from pgtop_ha.collect.pgbackrest import (
    HIDDEN_INTERVAL_S,
    MAX_OUTPUT,
    PgBackRestReader,
    auto_enabled,
    describe,
    parse_conf,
    parse_info,
    queue_max,
    run_info,
    scan_spool,
    source_for,
)
from pgtop_ha.collect.poller import Poller
from pgtop_ha.judge.backup import queue_state
from pgtop_ha.models.pgbackrest import WAL_SEGMENT_BYTES, parse_size
from pgtop_ha.models.snapshot import ClusterSnapshot
from pgtop_ha.settings import PgBackRestSettings, Settings
from pgtop_ha.ui.panes.registry import PANES

FIXTURES = Path(__file__).parent / "fixtures"
INFO = (FIXTURES / "pgbackrest_info_lab.json").read_text()
# The incr backup in the fixture stopped at 1795345388 (2026-11-22 11:03:08 UTC).
NOW = datetime.fromtimestamp(1795345388, UTC) + timedelta(minutes=10)


def _clock() -> datetime:
    return NOW


def test_info_captured_from_the_lab_after_lab_backup() -> None:
    (stanza,) = parse_info(INFO, NOW)
    assert stanza.name == "lab" and stanza.ok and stanza.status_message == "ok"
    assert stanza.backup_running is False and stanza.backup_count == 2
    assert stanza.full is not None and stanza.full.label == "20261122-110253F"
    assert stanza.full.age_s == pytest.approx(600 + 11)  # stopped 11 s before the incr did
    assert stanza.full.size_bytes == 52202133 and stanza.full.repo_size_bytes == 5676271
    assert stanza.diff is None
    assert stanza.incr is not None and stanza.incr.age_s == pytest.approx(600)
    assert stanza.incr.wal_start == "000000010000000000000007"
    assert (stanza.archive_min, stanza.archive_max) == (
        "000000010000000000000001",
        "000000010000000000000008",
    )


def test_a_broken_stanza_and_repository_are_reported() -> None:
    doc = json.loads(INFO)
    doc[0]["status"] = {"code": 2, "message": "no valid backups", "lock": {"backup": {"held": True}}}
    doc[0]["repo"][0]["status"] = {"code": 99, "message": "other"}
    doc[0]["backup"][0]["error"] = True
    (stanza,) = parse_info(json.dumps(doc), NOW)
    assert not stanza.ok and stanza.status_code == 2 and stanza.backup_running is True
    assert stanza.repo_errors == ("repo1: other",) and stanza.full is not None and stanza.full.error


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("not json at all", "not JSON"),
        ("{}", "JSON list"),
        ("[" * 100_000 + "]" * 100_000, "not JSON"),  # deep nesting is refused, not a RecursionError
        ("x" * (MAX_OUTPUT + 1), "over 4 MiB"),
    ],
)
def test_hostile_info_is_one_line_error(text: str, message: str) -> None:
    with pytest.raises(ParseError, match=message) as err:
        parse_info(text, NOW)
    assert "\n" not in str(err.value)


def test_hostile_values_are_cleaned_or_dropped() -> None:
    doc = json.loads(INFO)
    doc[0]["name"] = "lab\x1b[31m\x07" + "n" * 500
    doc[0]["status"]["message"] = "ok\x1b]0;pwned\x07"
    doc[0]["archive"][0]["max"] = "zz\x1b[2J"
    doc[0]["backup"][0]["info"]["size"] = 2**80
    doc[0]["backup"][0]["timestamp"]["stop"] = 10**30
    doc[0]["backup"][1]["type"] = "weird"
    doc.append("not a stanza")
    (stanza,) = parse_info(json.dumps(doc), NOW)
    assert "\x1b" not in stanza.name and len(stanza.name) <= 64
    assert stanza.status_message is not None and "\x1b" not in stanza.status_message
    assert (stanza.archive_min, stanza.archive_max) == ("000000010000000000000001", None)  # bad max dropped
    assert stanza.full is not None and stanza.full.size_bytes is None and stanza.full.age_s is None
    assert stanza.incr is None and stanza.backup_count == 1


def test_conf_sections_and_queue_max() -> None:
    conf = parse_conf(
        "# comment\n[global]\nspool-path=/sp\narchive-push-queue-max=1GB\n\n[lab]\npg1-path=/d\n"
        "[lab:archive-push]\narchive-push-queue-max = 256m\n"
    )
    assert conf["global"]["spool-path"] == "/sp"
    assert queue_max(conf, "lab") == 256 * 1024**2
    assert queue_max(conf, "other") == 1024**3
    assert queue_max(parse_conf("[global]\n"), "lab") is None


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("1GB", 1024**3),
        ("512m", 512 * 1024**2),
        ("100", 100),
        ("2tb", 2 * 1024**4),
        ("x", None),
        ("1XB", None),
    ],
)
def test_parse_size(text: str, size: int | None) -> None:
    assert parse_size(text) == size


def test_queue_levels_warn_before_wal_is_dropped() -> None:
    limit = 10 * WAL_SEGMENT_BYTES
    assert queue_state(2, limit).level == "ok"
    assert queue_state(5, limit).level == "warn"
    assert queue_state(8, limit).level == "crit"
    dropping = queue_state(10, limit)
    assert dropping.level == "dropping" and dropping.share == 1.0
    assert queue_state(None, limit).level == "unknown"
    unlimited = queue_state(3, None)
    assert unlimited.level == "unknown" and unlimited.queue_bytes == 3 * WAL_SEGMENT_BYTES


def test_spool_counts_and_newest_error(tmp_path: Path) -> None:
    out = tmp_path / "archive" / "lab" / "out"
    out.mkdir(parents=True)
    for n in range(3):
        (out / f"00000001000000000000000{n}.ok").write_text("")
    old = out / "000000010000000000000004.error"
    old.write_text("1\nold error\n")
    os.utime(old, (1, 1))
    (out / "global.error").write_text((FIXTURES / "pgbackrest_global.error").read_text() + "\x1b[31m")
    spool = scan_spool(tmp_path, "lab")
    assert (spool.ok_count, spool.error_count) == (3, 2)
    assert spool.newest_error_file == "global.error"
    assert spool.newest_error is not None and spool.newest_error.startswith("[103] unable to find a valid")
    assert "\x1b" not in spool.newest_error and "\n" not in spool.newest_error
    assert len(spool.newest_error) <= 400
    missing = scan_spool(tmp_path, "nosuch")
    assert missing.error is not None and missing.ok_count == 0


def test_spool_error_file_that_is_a_fifo_does_not_block(tmp_path: Path) -> None:
    out = tmp_path / "archive" / "lab" / "out"
    out.mkdir(parents=True)
    os.mkfifo(out / "x.error")
    spool = scan_spool(tmp_path, "lab")
    assert spool.error_count == 1


def _script(tmp_path: Path, body: str) -> tuple[str, ...]:
    path = tmp_path / "fake-pgbackrest"
    path.write_text(f"#!{sys.executable}\nimport sys\n{body}\n")
    path.chmod(0o755)
    return (str(path),)


async def test_reader_runs_argv_and_reads_spool(tmp_path: Path) -> None:
    conf = tmp_path / "pgbackrest.conf"
    conf.write_text(f"[global]\nspool-path={tmp_path}\narchive-push-queue-max=64MB\n")
    (tmp_path / "archive" / "lab" / "out").mkdir(parents=True)
    argv = _script(
        tmp_path,
        "assert sys.argv[-2:] == ['--output=json', 'info']\n"
        f"print(open({str(FIXTURES / 'pgbackrest_info_lab.json')!r}).read())",
    )
    state = await PgBackRestReader(argv, conf, None, None, _clock).read()
    assert state.stanzas[0].name == "lab" and state.queue_max_bytes == 64 * 1024**2
    assert state.spools[0].stanza == "lab" and state.spools[0].error is None
    snap = ClusterSnapshot(taken_at=NOW, pgbackrest=state)
    assert ClusterSnapshot.model_validate_json(snap.model_dump_json()) == snap
    assert "pgbackrest" in ClusterSnapshot.model_json_schema()["properties"]


async def test_huge_output_is_cut_and_the_process_ended(tmp_path: Path) -> None:
    argv = _script(tmp_path, "sys.stdout.write('[' + ' ' * (8 * 1024 * 1024) + ']')")
    with pytest.raises(ParseError, match="over 4 MiB"):
        await run_info(argv, None, None)


async def test_a_failing_command_says_why_in_one_line(tmp_path: Path) -> None:
    argv = _script(
        tmp_path, "sys.stderr.write('ERROR: [055]: unable to open\\nsecond line\\x1b[2J'); sys.exit(55)"
    )
    with pytest.raises(ParseError) as err:
        await run_info(argv, None, None)
    assert str(err.value).startswith("pgbackrest info exited 55: ERROR: [055]")
    assert "\n" not in str(err.value) and "\x1b" not in str(err.value)
    with pytest.raises(FileNotFoundError) as missing:
        await run_info(("/nonexistent/pgbackrest",), None, None)
    assert "command not found" in describe(missing.value)


def test_starting_the_command_does_not_copy_the_console(tmp_path: Path) -> None:
    # uvloop's create_subprocess_exec forks: the console's page tables were copied, and every
    # page it wrote afterwards took a copy-on-write fault (~7 ms of its CPU per run, issue 10).
    # Started with vfork() nothing is copied: pages written after the run fault no more.
    uvloop = pytest.importorskip("uvloop")
    argv = _script(tmp_path, "print('[]')")
    pages = 10_000
    ballast = bytearray(pages * 4096)

    def write_every_page() -> None:
        for i in range(0, len(ballast), 4096):
            ballast[i] = (ballast[i] + 1) % 256

    async def faults_after_a_run() -> int:
        await run_info(argv, None, None)  # the first run starts the thread that waits for it
        write_every_page()  # mapped now: a write faults again only if a fork shared the page
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        assert await run_info(argv, None, None) == b"[]\n"
        write_every_page()
        return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before

    faults = uvloop.run(faults_after_a_run())
    assert faults < pages // 10, f"{faults} page faults after one run: the console was forked"


def _alive(pid: int) -> bool:
    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return False


async def test_a_hung_command_is_killed_on_timeout(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    # The fake pgbackrest writes its PID, then blocks until a signal ends it: a hung command.
    argv = _script(
        tmp_path, f"import os, signal\nopen({str(pid_file)!r}, 'w').write(str(os.getpid()))\nsignal.pause()"
    )
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(1):
            await run_info(argv, None, None)
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + 10
    while _alive(pid):
        assert time.monotonic() < deadline, "the hung command was not killed"
        await asyncio.sleep(0.05)
    assert describe(TimeoutError()) == "pgbackrest info: no answer within its time limit"


def test_off_by_default_unless_local(tmp_path: Path) -> None:
    conf = tmp_path / "pgbackrest.conf"
    conf.write_text("[global]\n")
    local = PgBackRestSettings(config=conf, command=(sys.executable,))
    assert auto_enabled(local, ["127.0.0.1"]) is not None  # not the default command: needs enabled
    default = PgBackRestSettings(config=conf)
    assert auto_enabled(default, ["db1.example.com", "127.0.0.1"]) == (
        "nodes are not local; set [pgbackrest] enabled = true and command to reach them"
    )
    assert source_for(PgBackRestSettings(enabled=False), ["127.0.0.1"], _clock) is None
    remote = PgBackRestSettings(enabled=True, command=("ssh", "db1", "pgbackrest"))
    assert source_for(remote, ["db1"], _clock) is not None


async def test_info_runs_every_interval_while_shown_and_every_minute_while_hidden(tmp_path: Path) -> None:
    conf = tmp_path / "pgbackrest.conf"
    conf.write_text(f"[global]\nspool-path={tmp_path}\n")
    argv = _script(tmp_path, f"print(open({str(FIXTURES / 'pgbackrest_info_lab.json')!r}).read())")
    settings = PgBackRestSettings(enabled=True, command=argv, config=conf, interval=15)
    source = source_for(settings, ["127.0.0.1"], _clock)
    assert source is not None and source.watched  # no screen yet (record, snapshot): every interval
    first = source.start()
    assert first is not None
    await first
    assert source.state().stanzas[0].name == "lab"
    now = asyncio.get_running_loop().time()
    assert 14 < source.due_in(now) <= 15 and source.start() is None
    source.watched = False  # the pgBackRest pane is not on screen
    assert 59 < source.due_in(now) <= HIDDEN_INTERVAL_S
    assert source.due_in(now + 30) > 0  # 30 s later: the pane would have read again, hidden not
    source.watched = True  # shown again after 30 s: its last read is older than the interval
    assert source.due_in(now + 30) <= 0


async def test_the_poller_reads_pgbackrest_often_only_while_its_pane_is_shown(tmp_path: Path) -> None:
    settings = Settings.model_validate(
        {"pgbackrest": {"enabled": True, "command": _script(tmp_path, "print('[]')")}}
    )
    poller = Poller.from_settings(settings)
    try:
        source = poller._pgbackrest
        assert source is not None and source.watched
        poller.set_needs(frozenset({"memory"}))  # the dashboard: no pgBackRest pane
        assert not source.watched
        poller.set_needs(frozenset({"pgbackrest"}))
        assert source.watched
        shown = {p.id for p in PANES if "pgbackrest" in p.needs}
        assert shown == {"pgbackrest"}
    finally:
        await poller.aclose()
