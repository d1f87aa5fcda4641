"""HAProxy's stats CSV, over HTTP (``<uri>;csv``) or its unix socket (``show stat``)."""

from __future__ import annotations

import asyncio
import contextlib
import csv
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pgtop_ha.collect.coerce import as_int
from pgtop_ha.collect.errors import ParseError
from pgtop_ha.collect.http import GetOnlyClient
from pgtop_ha.models import urls
from pgtop_ha.models.snapshot import HAProxyServer

AGGREGATES = frozenset({"FRONTEND", "BACKEND"})
_REQUIRED = ("pxname", "svname", "status")
_COLUMNS_READ = (
    *_REQUIRED, "check_status", "check_code", "scur", "stot", "lbtot", "lastchg", "weight", "addr",
    "check_rise", "check_fall",
)  # fmt: skip
_MAX_STATS_BYTES = 8 * 1024 * 1024
_READ_SIZE = 64 * 1024
# `show stat <proxy> <type> <server>`: every proxy (-1), servers only (type 4), every server (-1).
# Frontends and backends are skipped anyway (AGGREGATES); asking for servers only keeps the
# answer, and its parsing each cycle, small on a HAProxy with many frontends.
SHOW_SERVERS = b"show stat -1 4 -1\n"


def _cell(cells: list[str], at: dict[str, int], key: str) -> str | None:
    i = at.get(key)
    return (cells[i] or None) if i is not None and i < len(cells) else None


# Rows kept from one answer: a shared HAProxy in front of many services lists tens of thousands.
# Servers of the writer and reader pools come first; of any other backend, OTHER_ROWS at most.
MAX_SERVERS = 2000
OTHER_ROWS = 200


@dataclass(frozen=True)
class StatsPage:
    """The servers kept from one stats answer, and how many more it listed."""

    servers: tuple[HAProxyServer, ...]
    not_shown: int = 0


def parse_stat_csv(text: str) -> tuple[HAProxyServer, ...]:
    """Server rows (not FRONTEND/BACKEND) by header name; ParseError if empty or cut short."""
    return read_stats(text).servers


def read_stats(text: str, pooled: Callable[[str], bool] | None = None, limit: int = MAX_SERVERS) -> StatsPage:
    """Server rows, at most ``limit`` (pool rows first, OTHER_ROWS of other backends); linear in rows."""
    if not text.strip():
        raise ParseError("haproxy stats: empty answer (reload in progress?)")
    if not text.startswith("# "):
        raise ParseError("haproxy stats: no '# pxname,...' header line")
    if not text.endswith("\n"):
        raise ParseError("haproxy stats: answer cut short (reload in progress?)")
    head, _, body = text[2:].partition("\n")
    try:
        header = [h.strip() for h in next(csv.reader([head]), [])]
    except csv.Error as exc:
        raise ParseError(f"haproxy stats: bad CSV ({exc})") from None
    missing = [name for name in _REQUIRED if name not in header]
    if missing:
        raise ParseError(f"haproxy stats: header lacks {', '.join(missing)}")
    width = len(header)
    while width and not header[width - 1]:
        width -= 1  # HAProxy ends the header (and every row) with a comma
    # Column positions once per answer: a row is ~100 cells and 9 of them are read.
    at = {name: i for i, name in enumerate(header) if name in _COLUMNS_READ}  # a repeated name: its last
    kinds: dict[str, bool] = {}
    kept: list[str] = []
    others = not_shown = 0
    for line in body.split("\n"):
        if not line.strip(", "):
            continue
        # Which backend, before any CSV work: most rows of a big page are only counted.
        proxy, _, rest = line.partition(",")
        server = rest.partition(",")[0]
        if proxy.startswith('"') or server.startswith('"'):
            try:
                proxy, server = [*next(csv.reader([line]), []), "", ""][:2]
            except csv.Error as exc:
                raise ParseError(f"haproxy stats: bad CSV ({exc})") from None
        if not proxy or not server or server in AGGREGATES:
            continue
        pool = kinds.get(proxy)
        if pool is None:
            pool = kinds.setdefault(proxy, pooled(proxy) if pooled is not None else True)
        if len(kept) >= limit or (not pool and others >= OTHER_ROWS):
            not_shown += 1
            continue
        others += not pool
        kept.append(line)
    try:
        rows = list(csv.reader(kept))
    except csv.Error as exc:
        raise ParseError(f"haproxy stats: bad CSV ({exc})") from None
    servers: list[HAProxyServer] = []
    for cells in rows:
        if len(cells) < width:
            raise ParseError("haproxy stats: a row is cut short (reload in progress?)")
        pxname, svname = _cell(cells, at, "pxname"), _cell(cells, at, "svname")
        if not pxname or not svname:
            continue
        servers.append(
            HAProxyServer(
                proxy=pxname,
                server=svname,
                status=_cell(cells, at, "status"),
                check_status=_cell(cells, at, "check_status"),
                check_code=as_int(_cell(cells, at, "check_code")),
                sessions=as_int(_cell(cells, at, "scur")),
                sessions_total=as_int(_cell(cells, at, "stot")),
                selected_total=as_int(_cell(cells, at, "lbtot")),
                last_change_s=as_int(_cell(cells, at, "lastchg")),
                weight=as_int(_cell(cells, at, "weight")),
                check_rise=as_int(_cell(cells, at, "check_rise")),
                check_fall=as_int(_cell(cells, at, "check_fall")),
                addr=_cell(cells, at, "addr"),
            )
        )
    return StatsPage(tuple(servers), not_shown)


def csv_url(url: str) -> str:
    """The stats page URL with ';csv' added to its path when missing (``/`` when it has none)."""
    return urls.csv_url(url)


async def fetch_http(http: GetOnlyClient, url: str, limit_s: float) -> str:
    """The CSV text from the stats page."""
    response = await http.get(csv_url(url), limit_s=limit_s)
    response.raise_for_status()
    return response.text


async def fetch_socket(path: Path) -> str:
    """The CSV text of ``show stat`` (server rows) on the stats socket, read until HAProxy closes it.

    At most _MAX_STATS_BYTES are held: a socket that streams more is an error, not more memory.
    """
    reader, writer = await asyncio.open_unix_connection(str(path))
    try:
        writer.write(SHOW_SERVERS)
        await writer.drain()
        data = bytearray()
        while chunk := await reader.read(_READ_SIZE):
            if len(data) + len(chunk) > _MAX_STATS_BYTES:
                raise ParseError(
                    f"haproxy stats socket: answer too large (over {_MAX_STATS_BYTES // 2**20} MiB)"
                )
            data += chunk
        # Kept as is: a missing final newline is how a cut-short answer shows.
        return data.decode("utf-8", "replace")
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
