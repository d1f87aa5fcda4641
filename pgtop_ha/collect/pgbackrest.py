"""The pgBackRest source: `pgbackrest info --output=json`, the async spool, archive-push-queue-max.

The command is an argv (``["ssh", "db1", "pgbackrest"]``), never a shell string. Its output is
bounded, its run is under the source's own time limit (collect/source.py), and one runs at a time.
Everything it prints is untrusted: parsed strictly, strings cleaned, numbers range-checked.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import subprocess
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from pgtop_ha.clock import Clock
from pgtop_ha.collect.errors import ParseError
from pgtop_ha.collect.source import Source
from pgtop_ha.models.pgbackrest import BackupInfo, PgBackRestState, SpoolState, StanzaInfo, parse_size
from pgtop_ha.models.text import clean
from pgtop_ha.settings import PgBackRestSettings

MAX_OUTPUT = 4 * 1024 * 1024  # `info` of a busy repository is tens of KB; more is broken or hostile
MAX_CONF = 256 * 1024
MAX_SPOOL_ENTRIES = 100_000
MAX_ERROR_TEXT = 400
MAX_STANZAS = 64
DEFAULT_CONFIGS = (Path("/etc/pgbackrest/pgbackrest.conf"), Path("/etc/pgbackrest.conf"))
DEFAULT_SPOOL = Path("/var/spool/pgbackrest")
_INT_LIMIT = 2**63
_WAL_NAME_LEN = 24
HIDDEN_INTERVAL_S = 60.0  # `pgbackrest info` while no pane on screen shows it


def _int(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or not -_INT_LIMIT < value < _INT_LIMIT:
        return None
    return value


def _text(value: object, limit: int = 200) -> str | None:
    if not isinstance(value, str):
        return None
    return clean(value)[:limit]


def _wal(value: object) -> str | None:
    text = _text(value, 64)
    if text is None or len(text) < _WAL_NAME_LEN or not all(c in "0123456789ABCDEFabcdef" for c in text[:24]):
        return None
    return text


def _when(value: object) -> datetime | None:
    seconds = _int(value)
    if seconds is None or not 0 <= seconds < 253402300800:  # before year 10000
        return None
    return datetime.fromtimestamp(seconds, UTC)


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _backup(raw: dict[str, Any], now: datetime) -> BackupInfo | None:
    kind = raw.get("type")
    label = _text(raw.get("label"), 80)
    if kind not in ("full", "diff", "incr") or not label:
        return None
    stamp, info, archive = _dict(raw.get("timestamp")), _dict(raw.get("info")), _dict(raw.get("archive"))
    stopped = _when(stamp.get("stop"))
    return BackupInfo(
        type=kind,
        label=label,
        started_at=_when(stamp.get("start")),
        stopped_at=stopped,
        age_s=max(0.0, (now - stopped).total_seconds()) if stopped else None,
        error=raw.get("error") is True,
        size_bytes=_int(info.get("size")),
        repo_size_bytes=_int(_dict(info.get("repository")).get("size")),
        wal_start=_wal(archive.get("start")),
        wal_stop=_wal(archive.get("stop")),
    )


def _stanza(raw: dict[str, Any], now: datetime) -> StanzaInfo:
    name = _text(raw.get("name"), 64) or "?"
    status = _dict(raw.get("status"))
    backups = [b for item in raw.get("backup") or [] if isinstance(item, dict) if (b := _backup(item, now))]
    newest: dict[str, BackupInfo] = {}
    for b in backups:  # pgBackRest lists backups oldest first; compare anyway
        held = newest.get(b.type)
        if held is None or (b.stopped_at or datetime.min.replace(tzinfo=UTC)) >= (
            held.stopped_at or datetime.min.replace(tzinfo=UTC)
        ):
            newest[b.type] = b
    archives = [a for a in raw.get("archive") or [] if isinstance(a, dict)]
    mins = [w for a in archives if (w := _wal(a.get("min")))]
    maxs = [w for a in archives if (w := _wal(a.get("max")))]
    repo_errors = tuple(
        f"repo{_int(r.get('key'))}: {_text(_dict(r.get('status')).get('message'))}"
        for r in raw.get("repo") or []
        if isinstance(r, dict) and _int(_dict(r.get("status")).get("code")) not in (0, None)
    )
    lock = _dict(_dict(status.get("lock")).get("backup")).get("held")
    return StanzaInfo(
        name=name,
        status_code=_int(status.get("code")),
        status_message=_text(status.get("message")),
        backup_running=lock if isinstance(lock, bool) else None,
        backup_count=len(backups),
        full=newest.get("full"),
        diff=newest.get("diff"),
        incr=newest.get("incr"),
        archive_min=min(mins) if mins else None,
        archive_max=max(maxs) if maxs else None,
        repo_errors=repo_errors[:8],
    )


def parse_info(text: str | bytes, now: datetime) -> tuple[StanzaInfo, ...]:
    """Stanzas from `pgbackrest info --output=json`; ParseError (one line) for anything else."""
    if len(text) > MAX_OUTPUT:
        raise ParseError(f"pgbackrest info: output over {MAX_OUTPUT // 1024 // 1024} MiB; not read")
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError):
        raise ParseError("pgbackrest info: output is not JSON; is the command `pgbackrest` (argv)?") from None
    if not isinstance(doc, list):
        raise ParseError("pgbackrest info: expected a JSON list of stanzas")
    return tuple(_stanza(item, now) for item in doc[:MAX_STANZAS] if isinstance(item, dict))


def parse_conf(text: str) -> dict[str, dict[str, str]]:
    """pgbackrest.conf as {section: {option: value}} (the last value of a repeated option wins)."""
    sections: dict[str, dict[str, str]] = {}
    current = sections.setdefault("global", {})
    for line in text[:MAX_CONF].splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            current = sections.setdefault(line[1:-1].strip(), {})
            continue
        key, sep, value = line.partition("=")
        if sep:
            current[key.strip()] = value.strip()
    return sections


def option(conf: dict[str, dict[str, str]], name: str, stanza: str | None = None) -> str | None:
    """An option as pgBackRest resolves it: the stanza's section, else [global] (with :archive-push)."""
    for section in ([f"{stanza}:archive-push", stanza] if stanza else []) + ["global:archive-push", "global"]:
        value = conf.get(section, {}).get(name)
        if value is not None:
            return value
    return None


def queue_max(conf: dict[str, dict[str, str]], stanza: str | None = None) -> int | None:
    """archive-push-queue-max in bytes, or None when unset (no WAL is ever dropped)."""
    value = option(conf, "archive-push-queue-max", stanza)
    return parse_size(value) if value else None


def read_conf(path: Path | None) -> tuple[Path | None, dict[str, dict[str, str]]]:
    """The config file used (given or the first default that exists) and its parsed options."""
    candidates = [path] if path else list(DEFAULT_CONFIGS)
    for candidate in candidates:
        try:
            with candidate.open("rb") as fh:
                data = fh.read(MAX_CONF)
        except OSError:
            continue
        return candidate, parse_conf(data.decode("utf-8", "replace"))
    return None, {}


def scan_spool(spool: Path, stanza: str) -> SpoolState:
    """Counts of ``.ok`` and ``.error`` acknowledgements in the async spool and the newest error's text."""
    out = spool / "archive" / stanza / "out"
    ok = errors = seen = 0
    newest: tuple[float, str] | None = None
    truncated = False
    try:
        with os.scandir(out) as entries:
            for entry in entries:
                seen += 1
                if seen > MAX_SPOOL_ENTRIES:
                    truncated = True
                    break
                if entry.name.endswith(".ok"):
                    ok += 1
                elif entry.name.endswith(".error"):
                    errors += 1
                    with contextlib.suppress(OSError):
                        mtime = entry.stat(follow_symlinks=False).st_mtime
                        if newest is None or mtime > newest[0]:
                            newest = (mtime, entry.name)
    except FileNotFoundError:
        return SpoolState(
            stanza=stanza, path=str(out), error="no spool here (archive-async off, or nothing pushed yet)"
        )
    except OSError as exc:
        return SpoolState(stanza=stanza, path=str(out), error=f"cannot read the spool: {exc.strerror or exc}")
    text = None
    if newest is not None:
        try:
            fd = os.open(out / newest[1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            with os.fdopen(fd, "rb") as fh:
                raw = fh.read(4096).decode("utf-8", "replace")
            text = _error_text(raw)
        except OSError as exc:
            text = f"(unreadable: {exc.strerror or exc})"
    return SpoolState(
        stanza=stanza,
        path=str(out),
        ok_count=ok,
        error_count=errors,
        newest_error_file=clean(newest[1])[:80] if newest else None,
        newest_error_at=datetime.fromtimestamp(newest[0], UTC) if newest else None,
        newest_error=text,
        truncated=truncated,
    )


def _error_text(raw: str) -> str:
    """An error file is its code on the first line, then the message: one cleaned, bounded line."""
    lines = [ln.strip() for ln in raw.splitlines() if ln.strip()]
    if lines and lines[0].isdigit():
        lines = [f"[{lines[0]}]", *lines[1:]]
    return clean(" ".join(lines))[:MAX_ERROR_TEXT]


def local_binary(argv: Sequence[str]) -> bool:
    """Whether the command's program exists here (a local pgbackrest, or ssh for a remote one)."""
    return bool(argv) and shutil.which(argv[0]) is not None


async def _read_bounded(stream: asyncio.StreamReader, limit: int) -> bytes:
    """Up to ``limit`` bytes until EOF; more is left unread (the caller kills the process)."""
    chunks: list[bytes] = []
    size = 0
    while size < limit:
        chunk = await stream.read(min(65536, limit - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


_REAPING: set[asyncio.Future[int]] = set()


def _spawn(argv: Sequence[str]) -> subprocess.Popen[bytes]:
    # subprocess.Popen starts the child with vfork(): the console's page tables are not copied.
    # uvloop's create_subprocess_exec forks, which copied them and then took a copy-on-write
    # fault for each page the console wrote afterwards: ~7 ms of the console's CPU per run at
    # its size, against ~1 ms now (bench/spawn_cost.py, docs/benchmarks.md).
    return subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )


async def _pipe(pipe: IO[bytes] | None, transports: list[asyncio.BaseTransport]) -> asyncio.StreamReader:
    """A child's output pipe read on the loop (the transport, kept to be closed, owns the pipe)."""
    assert pipe is not None
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), pipe)
    transports.append(transport)
    return reader


def info_argv(argv: Sequence[str], config: Path | None, stanza: str | None) -> list[str]:
    """`<argv> [--config=…] [--stanza=…] … --output=json info`: the command run_info runs."""
    full = [*argv]
    if config is not None:
        full.append(f"--config={config}")
    if stanza:
        full.append(f"--stanza={stanza}")
    # Errors on stderr only (stdout is the JSON); no log file written by a read.
    full += ["--log-level-console=off", "--log-level-stderr=error", "--log-level-file=off"]
    return [*full, "--output=json", "info"]


async def run_info(argv: Sequence[str], config: Path | None, stanza: str | None) -> bytes:
    """Run `<argv> [--config=…] [--stanza=…] info --output=json`; its stdout, bounded."""
    proc = _spawn(info_argv(argv, config, stanza))
    transports: list[asyncio.BaseTransport] = []
    try:
        stdout = await _pipe(proc.stdout, transports)
        stderr = await _pipe(proc.stderr, transports)
        errors = asyncio.ensure_future(_read_bounded(stderr, 4096))
        try:
            out = await _read_bounded(stdout, MAX_OUTPUT + 1)
            if len(out) > MAX_OUTPUT:
                raise ParseError(f"pgbackrest info: output over {MAX_OUTPUT // 1024 // 1024} MiB; not read")
        except BaseException:
            errors.cancel()
            raise
        err = await errors
        # Both pipes are at their end: the child is exiting. waitpid() blocks, so a thread waits.
        code = await asyncio.to_thread(proc.wait)
    finally:
        for transport in transports:
            transport.close()  # the pipes' read ends: a killed child cannot block on a full one
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            # Reaped in the background: a cancelled poll (its time limit) must not wait for it.
            reaper = asyncio.ensure_future(asyncio.to_thread(proc.wait))
            _REAPING.add(reaper)
            reaper.add_done_callback(_REAPING.discard)
    if code != 0:
        said = clean(err.decode("utf-8", "replace").strip().replace("\n", " "))[:300]
        raise ParseError(f"pgbackrest info exited {code}: {said or 'no message'}")
    return out


class PgBackRestReader:
    """Reads `pgbackrest info` and the local spool; one call is one poll of the source."""

    def __init__(self, argv: Sequence[str], config: Path | None, stanza: str | None,
                 spool: Path | None, clock: Clock, *, asked: bool = True) -> None:  # fmt: skip
        self.asked = asked
        self.argv = tuple(argv)
        self.config = config
        self.stanza = stanza
        self.spool = spool
        self._clock = clock

    async def read(self) -> PgBackRestState:
        """Stanzas, spools and the queue limit, or a ParseError/OSError for the source to keep."""
        conf_path, conf = await asyncio.to_thread(read_conf, self.config)
        out = await run_info(self.argv, conf_path, self.stanza)
        stanzas = parse_info(out, self._clock())
        spool = self.spool or Path(option(conf, "spool-path") or DEFAULT_SPOOL)
        spools = tuple([await asyncio.to_thread(scan_spool, spool, s.name) for s in stanzas if s.name != "?"])
        where = str(conf_path) if conf_path is not None else None
        why = None
        if not stanzas:
            read = (
                f"config {where}" if where else "no config found at " + ", ".join(map(str, DEFAULT_CONFIGS))
            )
            why = f"pgbackrest info lists no stanza ({read}); set [pgbackrest] config and stanza"
        return PgBackRestState(
            enabled=True,
            asked=self.asked,
            stanzas=stanzas,
            spools=spools,
            queue_max_bytes=queue_max(conf, self.stanza or (stanzas[0].name if stanzas else None)),
            config=where,
            no_stanza=why,
        )


def describe(exc: BaseException) -> str:
    """One line for a failed poll of the pgBackRest source."""
    if isinstance(exc, TimeoutError):
        return "pgbackrest info: no answer within its time limit"
    if isinstance(exc, ParseError):
        return str(exc)
    if isinstance(exc, FileNotFoundError):
        return f"pgbackrest: command not found ({exc.filename}); set [pgbackrest] command"
    if isinstance(exc, OSError):
        return f"pgbackrest: {exc.strerror or exc}"
    return f"pgbackrest: {exc.__class__.__name__}: {clean(str(exc))[:200]}"


_LOOPBACK = ("127.", "localhost", "::1", "/")


def _local(host: str | None) -> bool:
    return host is not None and host.lower().startswith(_LOOPBACK)


def auto_enabled(settings: PgBackRestSettings, hosts: Sequence[str | None]) -> str | None:
    """Why the source stays off when ``enabled`` is unset (None: turn it on).

    Unset means: on only when every known node is on this host and the binary and a config exist
    here; a configured remote command (ssh ...) needs ``enabled = true``.
    """
    if tuple(settings.command) != ("pgbackrest",):
        return "a configured command needs [pgbackrest] enabled = true"
    if not hosts or not all(_local(h) for h in hosts):
        return "nodes are not local; set [pgbackrest] enabled = true and command to reach them"
    if not local_binary(settings.command):
        return "no pgbackrest binary here"
    if read_conf(settings.config)[0] is None:
        return "no pgbackrest.conf here; set [pgbackrest] config"
    return None


class PgBackRestSource:
    """The reader under its own time limit (collect/source.py), run at most every ``interval`` seconds.

    While no screen shows it (``watched`` False) it runs every HIDDEN_INTERVAL_S: a process and a
    read of the repository for a pane nobody looks at. A poller without a screen reads at ``interval``.
    """

    def __init__(self, settings: PgBackRestSettings, clock: Clock) -> None:
        self._reader = PgBackRestReader(
            settings.command,
            settings.config,
            settings.stanza,
            settings.spool_path,
            clock,
            asked=settings.enabled is True,
        )
        self._source: Source[PgBackRestState] = Source(
            "pgbackrest", self._reader.read, settings.timeout, clock, describe
        )
        self._interval = settings.interval
        self._started: float | None = None  # loop time of the last start
        self.watched = True

    def due_in(self, now: float) -> float:
        """Seconds until the next `pgbackrest info` is due (0 or less: now)."""
        if self._started is None:
            return 0.0
        every = self._interval if self.watched else max(self._interval, HIDDEN_INTERVAL_S)
        return self._started + every - now

    def start(self) -> asyncio.Task[None] | None:
        """Start a poll when one is due; the first poll's task (a one-shot snapshot waits for it)."""
        now = asyncio.get_running_loop().time()
        if self.due_in(now) > 0:
            return None
        first = self._started is None
        self._started = now
        task = self._source.start()
        return task if first else None

    def state(self) -> PgBackRestState:
        """The last reading, with how the source fares."""
        reading = self._source.reading()
        base = reading.value or PgBackRestState(enabled=True, asked=self._reader.asked)
        return base.model_copy(
            update={"error": reading.error, "last_ok_at": reading.last_ok_at, "slow_s": reading.slow_s}
        )

    async def aclose(self) -> None:
        """Cancel a running poll (its process is killed)."""
        await self._source.aclose()


def source_for(
    settings: PgBackRestSettings, hosts: Sequence[str | None], clock: Clock
) -> PgBackRestSource | None:
    """The source when enabled (or when unset and auto-enabled), else None."""
    if settings.enabled is False:
        return None
    if settings.enabled is None and auto_enabled(settings, hosts) is not None:
        return None
    return PgBackRestSource(settings, clock)
