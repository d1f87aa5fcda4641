"""Process memory from /proc: smaps_rollup (Pss, USS, RSS, swap) and status (VmPTE, PPid)."""

from __future__ import annotations

import re
import resource
import time
from dataclasses import dataclass
from pathlib import Path

from pgtop_ha.collect.errors import ParseError
from pgtop_ha.models.snapshot import HugePages

NOT_HERE = "this server's processes are not in this host's /proc (tunnel or container?)"
LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1", "localhost.localdomain"})
_KB_LINE = re.compile(r"^([A-Za-z_()]+):\s+(\d+)\s*kB\s*$")
_PLAIN_LINE = re.compile(r"^([A-Za-z_()]+):\s+(\d+)\s*$")


@dataclass(frozen=True)
class Memory:
    """One process's memory in bytes (None where the source lacks the field)."""

    rss: int | None = None
    pss: int | None = None
    uss: int | None = None
    swap: int | None = None
    pagetable: int | None = None
    ppid: int | None = None


def _fields(text: str, what: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for line in text.splitlines():
        match = _KB_LINE.match(line)
        if match:
            out[match.group(1)] = int(match.group(2)) * 1024
            continue
        match = _PLAIN_LINE.match(line)
        if match:
            out[match.group(1)] = int(match.group(2))
    return out


def parse_smaps_rollup(text: str) -> Memory:
    """Rss/Pss/USS/Swap in bytes from /proc/PID/smaps_rollup; ParseError without Rss and Pss."""
    fields = _fields(text, "smaps_rollup")
    if "Rss" not in fields or "Pss" not in fields:
        raise ParseError("smaps_rollup: no 'Rss:' and 'Pss:' lines (needs Linux 4.14+)")
    private = [fields[k] for k in ("Private_Clean", "Private_Dirty") if k in fields]
    return Memory(
        rss=fields["Rss"],
        pss=fields["Pss"],
        uss=sum(private) if private else None,
        swap=fields.get("Swap"),
    )


def parse_status(text: str) -> Memory:
    """VmPTE (bytes) and PPid from /proc/PID/status; ParseError when neither is there."""
    fields = _fields(text, "status")
    if "VmPTE" not in fields and "PPid" not in fields:
        raise ParseError("status: no 'VmPTE:' or 'PPid:' line")
    return Memory(pagetable=fields.get("VmPTE"), ppid=fields.get("PPid"))


def parse_hugepages(text: str) -> HugePages:
    """HugePages_Total/Free/Rsvd/Surp and Hugepagesize from /proc/meminfo (None when absent)."""
    fields = _fields(text, "meminfo")
    return HugePages(
        total=fields.get("HugePages_Total"),
        free=fields.get("HugePages_Free"),
        reserved=fields.get("HugePages_Rsvd"),
        surplus=fields.get("HugePages_Surp"),
        size_bytes=fields.get("Hugepagesize"),
    )


def merge(rollup: Memory, status: Memory | None) -> Memory:
    """smaps_rollup figures with status's page tables and parent pid."""
    if status is None:
        return rollup
    return Memory(
        rss=rollup.rss,
        pss=rollup.pss,
        uss=rollup.uss,
        swap=rollup.swap,
        pagetable=status.pagetable,
        ppid=status.ppid,
    )


def is_local_host(host: str | None) -> bool:
    """True for loopback addresses and unix-socket directories (this host's /proc applies)."""
    return host is not None and (host in LOCAL_HOSTS or host.startswith("/"))


def _read_memory(base: Path) -> tuple[Memory, Memory]:
    status = parse_status((base / "status").read_text())
    rollup = parse_smaps_rollup((base / "smaps_rollup").read_text())
    return status, rollup


# Shared by every reader on this host: several entries (or clusters) on one host read the same
# processes, and smaps_rollup costs 0.3-8 ms CPU each. Keyed by (proc root, pid); each entry is
# (when read, the process's activity counters then, its memory).
_Entry = tuple[float, tuple[int, int] | None, Memory]  # when read, activity counters then, memory
_CACHE: dict[tuple[str, int], _Entry] = {}
_CACHE_MAX = 20000
# A process whose own memory did not move (no major fault, its RSS within RSS_SLACK_* of its
# reading) keeps its reading this long: smaps_rollup walks every mapped page, /proc/PID/stat is a
# few counters. CPU time is not looked at: a walsender or the checkpointer wakes every
# second without touching a new page. Its Pss can still drift as other processes map or drop
# the pages it shares; hence a bound. Its USS and RSS move only with its own pages; the drift is
# the shared part, and 3 minutes of it is a rounding.
IDLE_KEEP_S = 180.0
# At most this many processes whose reading is past its age are read again per call, the oldest
# readings first; the rest keep their last reading until their turn. Under load every backend is
# busy and smaps_rollup of a backend with many shared buffers mapped is dear: without a cap, a
# refresh costs in proportion to max_connections. Processes never read are always read.
MAX_REREADS = 12
# How far a process's RSS may move from its reading before it is read again: 1 MiB, or 1/32 of
# its RSS when larger. Minor faults are not counted: under load a backend faults every second
# (a shared buffer mapped, a page made private) while its own memory stays put. A sort or hash
# that takes work_mem moves RSS by megabytes: read at the next refresh.
RSS_SLACK_BYTES = 1 << 20
RSS_SLACK_SHARE = 32
_PAGE_BYTES = resource.getpagesize()

# Fields of /proc/PID/stat counted after the command name: majflt, and rss in pages.
_MAJFLT, _RSS = 9, 21


def activity(text: str) -> tuple[int, int] | None:
    """Major faults and RSS pages from /proc/PID/stat, compared by moved()."""
    # The command name (field 2) may hold spaces and parentheses: count fields after the last ')'.
    fields = text[text.rfind(")") + 2 :].split()
    try:
        return int(fields[_MAJFLT]), int(fields[_RSS])
    except (IndexError, ValueError):
        return None


def moved(before: tuple[int, int], now: tuple[int, int]) -> bool:
    """True when a process's memory moved enough since ``before`` to be read again (activity())."""
    if now[0] != before[0]:
        return True  # a page came from disk or swap
    slack = max(RSS_SLACK_BYTES, before[1] * _PAGE_BYTES // RSS_SLACK_SHARE)
    return abs(now[1] - before[1]) * _PAGE_BYTES >= slack


def _stat(base: Path) -> tuple[int, int] | None:
    try:
        return activity((base / "stat").read_text())
    except OSError:
        return None


def _lookup(
    entry: _Entry | None, base: Path, max_age_s: float, now: float
) -> tuple[Memory | None, tuple[int, int] | None]:
    """(the cached reading if still good, the activity counters read for the check, if any)."""
    if entry is not None and now - entry[0] <= max_age_s:
        return entry[2], None  # fresh: no need to look at the process at all
    active = _stat(base)
    if (
        entry is not None
        and active is not None
        and entry[1] is not None
        and not moved(entry[1], active)
        and now - entry[0] <= IDLE_KEEP_S
    ):
        return entry[2], active
    return None, active


def _remember(proc: Path, pid: int, mem: Memory, now: float, active: tuple[int, int] | None) -> None:
    if len(_CACHE) > _CACHE_MAX:
        _CACHE.clear()
    _CACHE[(str(proc), pid)] = (now, active, mem)


def read_local(
    pids: list[int],
    backend_pid: int | None,
    proc: Path = Path("/proc"),
    with_postmaster: bool = True,
    max_age_s: float = 0.0,
) -> tuple[dict[int, Memory], str | None, int | None]:
    """Memory of the postmaster and its children from this host's /proc.

    Returns (memory by pid, a reason when none could be read, the postmaster's pid). The
    postmaster is our own backend's parent; a pid whose PPid is not the postmaster is skipped:
    it is not this server's process (another pid namespace, or the pid was reused).
    """
    out: dict[int, Memory] = {}
    if backend_pid is None:
        return out, "no backend pid to find the postmaster by", None
    try:
        # Our own backend proves the server is on this host: its pid must be a postgres here
        # (a tunnel or container would show an unrelated process, or none).
        if b"postgres" not in (proc / str(backend_pid) / "cmdline").read_bytes():
            return out, NOT_HERE, None
        postmaster = parse_status((proc / str(backend_pid) / "status").read_text()).ppid
    except (OSError, ParseError):
        return out, NOT_HERE, None
    denied: str | None = None
    now = time.monotonic()

    def ours(pid: int, mem: Memory) -> bool:
        return pid == postmaster or mem.ppid == postmaster

    due: list[tuple[float, int, tuple[int, int] | None, _Entry | None]] = []
    for pid in [postmaster, *pids] if postmaster and with_postmaster else pids:
        entry = _CACHE.get((str(proc), pid)) if max_age_s > 0 else None
        if max_age_s > 0:
            hit, active = _lookup(entry, proc / str(pid), max_age_s, now)
        else:
            hit, active = None, None
        if hit is not None and ours(pid, hit):
            out[pid] = hit
            continue
        due.append((entry[0] if entry is not None else -1.0, pid, active, entry))
    due.sort(key=lambda d: d[:2])  # never read first (-1), then the oldest reading
    for rank, (_, pid, active, entry) in enumerate(due):
        if rank >= MAX_REREADS and entry is not None and ours(pid, entry[2]):
            out[pid] = entry[2]  # its turn comes at a later call
            continue
        try:
            status, rollup = _read_memory(proc / str(pid))
        except FileNotFoundError:
            continue  # the process ended since pg_stat_activity listed it
        except PermissionError:
            denied = "cannot read /proc/PID/smaps_rollup: run as the postgres OS user or root"
            continue
        except (OSError, ParseError):
            continue
        if pid != postmaster and status.ppid != postmaster:
            continue
        out[pid] = merge(rollup, status)
        _remember(proc, pid, out[pid], now, active)
    return out, (denied if not out else None), postmaster


def read_local_hugepages(proc: Path = Path("/proc")) -> HugePages | None:
    """This host's HugePages (None when /proc/meminfo cannot be read)."""
    try:
        return parse_hugepages((proc / "meminfo").read_text())
    except OSError:
        return None
