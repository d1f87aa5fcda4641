"""/proc parsing: smaps_rollup and status of a real process, and fuzzing."""

from __future__ import annotations

import contextlib
import resource
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pgtop_ha.collect import procmem
from pgtop_ha.collect.errors import ParseError
from pgtop_ha.collect.procmem import (
    MAX_REREADS,
    NOT_HERE,
    RSS_SLACK_BYTES,
    activity,
    is_local_host,
    moved,
    parse_hugepages,
    parse_smaps_rollup,
    parse_status,
    read_local,
)

FIXTURES = Path(__file__).parent / "fixtures"


def test_smaps_rollup_fixture() -> None:
    mem = parse_smaps_rollup((FIXTURES / "smaps_rollup.txt").read_text())
    assert mem.rss and mem.pss and mem.uss is not None
    assert mem.pss <= mem.rss
    assert mem.uss <= mem.rss
    assert mem.rss % 1024 == 0


def test_smaps_rollup_values() -> None:
    text = (
        "55d0-7ffd ---p 00000000 00:00 0    [rollup]\n"
        "Rss:   100 kB\nPss:    40 kB\nPrivate_Clean:  4 kB\nPrivate_Dirty: 6 kB\nSwap: 2 kB\n"
    )
    mem = parse_smaps_rollup(text)
    assert (mem.rss, mem.pss, mem.uss, mem.swap) == (102400, 40960, 10240, 2048)


def test_status_fixture() -> None:
    status = parse_status((FIXTURES / "status.txt").read_text())
    assert status.pagetable is not None and status.pagetable > 0
    assert isinstance(status.ppid, int)


def test_hugepages() -> None:
    huge = parse_hugepages(
        "HugePages_Total: 4\nHugePages_Free: 1\nHugePages_Rsvd: 2\nHugepagesize: 2048 kB\n"
    )
    assert (huge.total, huge.free, huge.reserved, huge.size_bytes) == (4, 1, 2, 2 * 1024 * 1024)
    none = parse_hugepages("MemTotal: 1 kB\n")
    assert (none.total, none.free, none.reserved) == (None, None, None)


@pytest.mark.parametrize("text", ["", "Rss: 1 kB\n", "garbage", "Pss: x kB\n"])
def test_smaps_rollup_without_fields(text: str) -> None:
    with pytest.raises(ParseError, match="smaps_rollup"):
        parse_smaps_rollup(text)


def _proc_entry(root: Path, pid: int, ppid: int, cmdline: bytes) -> None:
    base = root / str(pid)
    base.mkdir(parents=True)
    (base / "cmdline").write_bytes(cmdline)
    (base / "status").write_text(f"Name:\tpostgres\nPPid:\t{ppid}\nVmPTE:\t  100 kB\n")
    (base / "smaps_rollup").write_text((FIXTURES / "smaps_rollup.txt").read_text())


def test_read_local_finds_postmaster_children(tmp_path: Path) -> None:
    _proc_entry(tmp_path, 100, 1, b"/usr/lib/postgresql/15/bin/postgres\0-D\0/data")
    _proc_entry(tmp_path, 101, 100, b"postgres: lab: pgtop_monitor labdb idle")  # our backend
    _proc_entry(tmp_path, 102, 100, b"postgres: lab: checkpointer")
    _proc_entry(tmp_path, 103, 7, b"bash")  # pid reused by something else
    mem, reason, postmaster = read_local([101, 102, 103, 104], 101, proc=tmp_path)
    assert postmaster == 100
    assert reason is None
    assert set(mem) == {100, 101, 102}
    assert mem[102].pagetable == 100 * 1024
    assert mem[102].pss and mem[102].pss > 0


def test_read_local_refuses_another_hosts_pids(tmp_path: Path) -> None:
    _proc_entry(tmp_path, 200, 1, b"sshd: tunnel")  # loopback port forwarded elsewhere
    mem, reason, postmaster = read_local([200], 200, proc=tmp_path)
    assert (mem, postmaster) == ({}, None)
    assert reason == NOT_HERE
    none, why, _ = read_local([1], 999_999_999, proc=tmp_path)
    assert none == {}
    assert why == NOT_HERE


def _stat_line(pid: int, minflt: int, utime: int = 7) -> str:
    # Fields after the name: state ppid pgrp session tty tpgid flags minflt cminflt majflt
    # cmajflt utime stime ... rss is the 24th field overall.
    rest = ["S", "100", "0", "0", "0", "0", "0", str(minflt), "0", "2", "0", str(utime), "3"]
    rest += [*["0"] * 8, "77"]
    return f"{pid} (postgres: a) b) " + " ".join(rest) + "\n"


def test_activity_counts_fields_after_the_last_parenthesis() -> None:
    assert activity(_stat_line(5, 9)) == (2, 77)  # major faults, RSS pages
    assert activity("5 (x) S 1") is None
    own = activity(Path("/proc/self/stat").read_text())
    assert own is not None and own[1] > 0  # a real process has resident pages


def test_cpu_time_and_minor_faults_alone_are_not_a_change_of_memory() -> None:
    # A walsender or the checkpointer wakes every second without touching a new page, and a
    # busy backend faults every second mapping shared buffers while its own memory stays put.
    assert activity(_stat_line(5, 9, utime=1)) == activity(_stat_line(5, 9, utime=500))
    assert activity(_stat_line(5, 9)) == activity(_stat_line(5, 10_000))


def test_memory_moved_by_a_major_fault_or_rss_past_the_slack() -> None:
    page = resource.getpagesize()
    slack = RSS_SLACK_BYTES // page  # in pages, for a small process
    assert not moved((2, 1000), (2, 1000))
    assert not moved((2, 1000), (2, 1000 + slack - 1)) and not moved((2, 1000), (2, 1000 - slack + 1))
    assert moved((2, 1000), (2, 1000 + slack)) and moved((2, 1000 + slack), (2, 1000))  # work_mem came, went
    assert moved((2, 1000), (3, 1000))  # a page read from disk or swap
    big = 64 * slack  # a process of 64 MiB: 1/32 of it, 2 MiB, before it is read again
    assert not moved((0, big), (0, big + slack)) and moved((0, big), (0, big + 2 * slack))


def test_an_idle_process_keeps_its_reading_a_busy_one_is_read_again(tmp_path: Path) -> None:
    _proc_entry(tmp_path, 300, 1, b"/usr/lib/postgresql/15/bin/postgres")
    for pid in (301, 302):
        _proc_entry(tmp_path, pid, 300, b"postgres: lab: backend")
        (tmp_path / str(pid) / "stat").write_text(_stat_line(pid, 10))
    first, _, _ = read_local([301, 302], 301, proc=tmp_path, max_age_s=1e-9)
    for pid in (301, 302):
        (tmp_path / str(pid) / "smaps_rollup").write_text("Rss: 8 kB\nPss: 4 kB\n")
    (tmp_path / "302" / "stat").write_text(_stat_with(302, 11, 77 + 1024))  # it grew since: read again
    again, _, _ = read_local([301, 302], 301, proc=tmp_path, max_age_s=1e-9)
    assert again[301].pss == first[301].pss and first[301].pss != 4096
    assert again[302].pss == 4096


def test_an_idle_process_is_read_again_past_the_idle_bound(tmp_path: Path) -> None:
    # Its Pss drifts as other processes map or drop the pages it shares: read it now and then.
    _proc_entry(tmp_path, 310, 1, b"/usr/lib/postgresql/15/bin/postgres")
    _proc_entry(tmp_path, 311, 310, b"postgres: lab: backend")
    (tmp_path / "311" / "stat").write_text(_stat_line(311, 10))
    first, _, _ = read_local([311], 311, proc=tmp_path, max_age_s=1e-9)
    (tmp_path / "311" / "smaps_rollup").write_text("Rss: 8 kB\nPss: 4 kB\n")
    key = (str(tmp_path), 311)
    when, counters, mem = procmem._CACHE[key]
    procmem._CACHE[key] = (when - procmem.IDLE_KEEP_S + 5, counters, mem)  # not yet past it
    kept, _, _ = read_local([311], 311, proc=tmp_path, max_age_s=1e-9)
    assert kept[311].pss == first[311].pss != 4096
    procmem._CACHE[key] = (when - procmem.IDLE_KEEP_S - 1, counters, mem)
    again, _, _ = read_local([311], 311, proc=tmp_path, max_age_s=1e-9)
    assert again[311].pss == 4096


def _stat_with(pid: int, minflt: int, rss: int) -> str:
    return _stat_line(pid, minflt).replace(" 77\n", f" {rss}\n")


def test_faults_and_small_rss_moves_keep_a_reading_a_move_past_the_slack_does_not(tmp_path: Path) -> None:
    # The postmaster's copy-on-write faults after each fork, a backend's queries and a page
    # mapped here and there keep the readings; RSS moved by the slack (a sort took work_mem)
    # has the process read again, measured from its last reading, not its last check.
    _proc_entry(tmp_path, 500, 1, b"/usr/lib/postgresql/15/bin/postgres")
    _proc_entry(tmp_path, 501, 500, b"postgres: lab: pgtop_monitor labdb idle")
    for pid in (500, 501):
        (tmp_path / str(pid) / "stat").write_text(_stat_with(pid, 10, 77))
    first, _, _ = read_local([501], 501, proc=tmp_path, max_age_s=1e-9)
    for pid in (500, 501):
        (tmp_path / str(pid) / "smaps_rollup").write_text("Rss: 8 kB\nPss: 4 kB\n")
        (tmp_path / str(pid) / "stat").write_text(_stat_with(pid, 90, 78))  # forks, queries, a page
    again, _, _ = read_local([501], 501, proc=tmp_path, max_age_s=1e-9)
    assert again[500].pss == first[500].pss != 4096 and again[501].pss == first[501].pss
    step = RSS_SLACK_BYTES // resource.getpagesize() // 2
    for rss in (77 + step, 77 + 2 * step):  # half the slack, then all of it since the reading
        (tmp_path / "501" / "stat").write_text(_stat_with(501, 90, rss))
        later, _, _ = read_local([501], 501, proc=tmp_path, max_age_s=1e-9)
    assert later[501].pss == 4096 and later[500].pss == first[500].pss


def test_busy_processes_are_read_again_a_few_per_call_oldest_reading_first(tmp_path: Path) -> None:
    # Under load every backend is busy: a call reads at most MAX_REREADS of those it read
    # before (the oldest readings first); the others keep their last reading for a later call.
    _proc_entry(tmp_path, 400, 1, b"/usr/lib/postgresql/15/bin/postgres")
    busy = list(range(401, 401 + MAX_REREADS + 5))
    for pid in busy:
        _proc_entry(tmp_path, pid, 400, b"postgres: lab: backend")
    first, _, _ = read_local(busy, busy[0], proc=tmp_path, with_postmaster=False, max_age_s=1e-9)
    assert set(first) == set(busy)  # never read before: every one is read, whatever the cap
    for pid in busy:
        (tmp_path / str(pid) / "smaps_rollup").write_text("Rss: 8 kB\nPss: 4 kB\n")
        (tmp_path / str(pid) / "stat").write_text(_stat_with(pid, 20, 77 + 1024))  # all grew since
    second, _, _ = read_local(busy, busy[0], proc=tmp_path, with_postmaster=False, max_age_s=1e-9)
    fresh = {pid for pid, m in second.items() if m.pss == 4096}
    assert set(second) == set(busy) and len(fresh) == MAX_REREADS  # the rest keep the last reading
    third, _, _ = read_local(busy, busy[0], proc=tmp_path, with_postmaster=False, max_age_s=1e-9)
    assert {pid for pid, m in third.items() if m.pss == 4096} == set(busy)  # the waiting ones first


def test_is_local_host() -> None:
    assert is_local_host("127.0.0.1")
    assert is_local_host("localhost")
    assert is_local_host("::1")
    assert is_local_host("/var/run/postgresql")
    assert not is_local_host("10.0.0.5")
    assert not is_local_host(None)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.text(max_size=30),
            st.builds(
                lambda k, v, u: f"{k}: {v} {u}",
                st.sampled_from(["Rss", "Pss", "Private_Clean", "VmPTE", "PPid", "Swap"]),
                st.integers(min_value=-5, max_value=10**12) | st.text(max_size=4),
                st.sampled_from(["kB", "", "MB"]),
            ),
        ),
        max_size=12,
    ).map("\n".join)
)
def test_fuzz_proc_files(text: str) -> None:
    for parse in (parse_smaps_rollup, parse_status):
        with contextlib.suppress(ParseError):
            mem = parse(text)
            sizes = (mem.rss, mem.pss, mem.uss, mem.swap, mem.pagetable)
            assert all(v is None or isinstance(v, int) for v in sizes)
    huge = parse_hugepages(text)
    assert huge.total is None or isinstance(huge.total, int)
    assert huge.free is None or isinstance(huge.free, int)
