"""Patroni's REST API, read with GET only: /cluster, /patroni, /history and /config."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar, cast

import httpx

from pgtop_ha.collect.coerce import MAX_NOTES, Fields, as_bool, as_dict, as_float, as_int, as_str
from pgtop_ha.collect.errors import ParseError
from pgtop_ha.collect.http import GetOnlyClient, RefusedAnswer
from pgtop_ha.models.roles import is_leader_role
from pgtop_ha.models.snapshot import ClusterInfo, HistoryEntry, Member, PatroniConfig
from pgtop_ha.models.text import clean, fit
from pgtop_ha.models.urls import redact

MAX_PARAMETERS = 1000  # postgresql.parameters kept from /config (a real one has tens)
MAX_TAGS = 64  # tags kept per member (Patroni's own are a handful)
MAX_HISTORY = 100  # newest /history rows kept (a cluster has one per failover)
REMEMBERED_BODY_BYTES = 64 * 1024  # a real /cluster or /patroni answer is a few KiB
REMEMBERED_URLS = 256  # answers kept, one per URL: /cluster and each member's /patroni
T = TypeVar("T")


@dataclass(frozen=True)
class ClusterView:
    """What one /cluster answer says: the cluster and its members (Patroni's side only)."""

    info: ClusterInfo
    members: tuple[Member, ...]
    listed: int = 0  # members /cluster named (more than ``members`` when a limit applied)


@dataclass(frozen=True)
class OwnView:
    """What one member's /patroni answer says about itself."""

    role: str | None
    state: str | None
    timeline: int | None
    pending_restart: bool | None
    pending_restart_reason: dict[str, Any] | None
    pause: bool | None
    dcs_last_seen: int | None
    version: str | None
    scope: str | None
    name: str | None
    failsafe_active: bool | None = None
    cert_not_after: datetime | None = None  # its REST certificate's end, from the TLS handshake
    malformed: tuple[str, ...] = ()  # fields of the wrong type, named


def decode_json(text: str | bytes, what: str) -> Any:
    """JSON from ``text``, or ParseError naming ``what``."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ParseError(f"{what}: not JSON ({exc.__class__.__name__})") from None


def _lag(fields: Fields) -> int | None:
    # Patroni 4 reports "lag" (and receive_lag/replay_lag) as bytes or the string "unknown";
    # a negative lag is no lag at all: named, not shown.
    for key in ("lag", "replay_lag", "receive_lag"):
        value = fields.whole(key, minimum=0, unknown=("unknown",))
        if value is not None:
            return value
    return None


def _tags(value: Any) -> dict[str, Any]:
    """A member's tags: the first MAX_TAGS, scalars only, text cut (Patroni's own tags are scalars)."""
    tags = as_dict(value) or {}
    kept: dict[str, Any] = {}
    for key, item in list(tags.items())[:MAX_TAGS]:
        if isinstance(item, str):
            kept[clean(key)[:64]] = fit(clean(item), 256)
        elif item is None or isinstance(item, bool):
            kept[clean(key)[:64]] = item
        elif isinstance(item, int):
            kept[clean(key)[:64]] = as_int(item)
        elif isinstance(item, float):
            kept[clean(key)[:64]] = as_float(item)
    return kept


_VERSION = re.compile(r"\d{1,3}\.\d{1,3}(\.\d{1,4})?([.+~-][0-9A-Za-z.+~-]{1,24})?")
UNKNOWN_VERSION = "unknown"


def _version(fields: Fields) -> str | None:
    """Patroni's version as it parses; one that does not is "unknown", and named (cut)."""
    version = fields.text("version")
    if version is None or _VERSION.fullmatch(version):
        return version
    fields.note("version", f"{fit(version, 24)!r} does not parse: unknown")
    return UNKNOWN_VERSION


DUPLICATES_KEPT = 1000  # names tracked for duplicates, and duplicates reported


def parse_cluster(data: Any, limit: int | None = None) -> ClusterView:
    """Members and cluster flags from a decoded /cluster answer; ParseError if not one.

    With ``limit``, only that many members become models (leaders first, then in the order
    given); ``listed`` still counts them all, so the caller can say how many were left out.
    """
    body = as_dict(data)
    if body is None or not isinstance(body.get("members"), list):
        raise ParseError("patroni /cluster: expected an object with a 'members' list")
    entries: list[dict[str, Any]] = []
    seen: dict[str, list[str]] = {}  # name: the host:port of each entry that gave it
    for raw in body["members"]:
        entry = as_dict(raw)
        name = as_str(entry.get("name")) if entry else None
        name = clean(name) if name else None  # as the Member model holds a name: one line
        if entry is None or not name:
            continue
        if name not in seen:
            entries.append(entry)
        if len(seen) < DUPLICATES_KEPT or name in seen:
            where = f"{as_str(entry.get('host')) or '?'}:{as_int(entry.get('port')) or '?'}"
            seen.setdefault(name, []).append(where[:80])
    # A name given twice (or one that differs only by hidden characters) can hide the real leader.
    duplicates = tuple(f"{n} ({', '.join(w[:4])})" for n, w in seen.items() if len(w) > 1)
    chosen = entries
    if limit is not None and len(entries) > limit:
        # The leader matters most: it is kept whatever its place in a long list.
        leaders = [i for i, e in enumerate(entries) if is_leader_role(as_str(e.get("role")))][:limit]
        lead = set(leaders)
        others = [i for i in range(len(entries)) if i not in lead][: limit - len(leaders)]
        chosen = [entries[i] for i in sorted([*leaders, *others])]
    members: list[Member] = []
    notes: list[str] = []
    for entry in chosen:
        fields = Fields(entry, f"/cluster {clean(str(entry.get('name')))[:40]}:")
        port = as_int(entry.get("port"))
        api_url = as_str(entry.get("api_url"))
        members.append(
            Member(
                name=as_str(entry.get("name")) or "",
                role=as_str(entry.get("role")),
                state=as_str(entry.get("state")),
                timeline=fields.whole("timeline", minimum=1),
                lag_bytes=_lag(fields),
                host=as_str(entry.get("host")),
                port=port if port is not None and 0 < port < 65536 else None,
                # Shown and stored as given but without credentials; the poller checks its shape.
                api_url=redact(api_url) if api_url is not None else None,
                tags=_tags(entry.get("tags")),
                pending_restart=fields.flag("pending_restart"),
                scheduled_restart=as_dict(entry.get("scheduled_restart")),
                malformed=tuple(fields.notes),
            )
        )
        notes.extend(fields.notes)
    leader = next((m.name for m in members if is_leader_role(m.role)), None)
    top = Fields(body, "/cluster:")
    info = ClusterInfo(
        name=as_str(body.get("scope")),
        leader=leader,
        pause=top.flag("pause"),
        scheduled_switchover=as_dict(body.get("scheduled_switchover")),
        duplicates=duplicates[:DUPLICATES_KEPT],
        malformed=tuple(top.notes),
    )
    return ClusterView(info=info, members=tuple(members), listed=len(entries))


def parse_patroni(data: Any) -> OwnView:
    """A member's view of itself from a decoded /patroni answer; ParseError if not one."""
    body = as_dict(data)
    if body is None or ("role" not in body and "state" not in body):
        raise ParseError("patroni /patroni: expected an object with 'role' and 'state'")
    meta = as_dict(body.get("patroni")) or {}
    fields = Fields(body, "/patroni:")
    about = Fields(meta, "/patroni: patroni.")
    # Patroni omits pending_restart and pause when false; a value of the wrong type is unknown.
    pending = fields.flag("pending_restart") if "pending_restart" in body else False
    pause = fields.flag("pause") if "pause" in body else False
    return OwnView(
        role=fields.text("role"),
        state=fields.text("state"),
        timeline=fields.whole("timeline", minimum=1),
        pending_restart=pending,
        pending_restart_reason=as_dict(body.get("pending_restart_reason")),
        pause=pause,
        dcs_last_seen=fields.whole("dcs_last_seen", minimum=0),
        version=_version(about),
        failsafe_active=fields.flag("failsafe_mode_is_active"),
        scope=as_str(meta.get("scope")),
        name=as_str(meta.get("name")),
        malformed=(*fields.notes, *about.notes)[:MAX_NOTES],
    )


@dataclass(frozen=True)
class HistoryRead:
    """The newest rows of one /history answer, and how many rows it had."""

    rows: tuple[HistoryEntry, ...]
    total: int


def read_history(data: Any) -> HistoryRead:
    """The newest MAX_HISTORY rows of a decoded /history answer, the rest counted."""
    rows = parse_history(data)
    return HistoryRead(rows, max(len(rows), len(data)))


def parse_history(data: Any) -> tuple[HistoryEntry, ...]:
    """Timeline switches from a decoded /history answer, the newest MAX_HISTORY; ParseError if not a list."""
    if not isinstance(data, list):
        raise ParseError("patroni /history: expected a list of [timeline, lsn, reason, ...] rows")
    rows: list[HistoryEntry] = []
    # Only the newest rows become models: a long (or hostile) history costs no more than they do.
    for raw in data[-MAX_HISTORY:]:
        if not isinstance(raw, list) or not raw:
            continue
        timeline = as_int(raw[0])
        if timeline is None:
            continue
        cells = [*raw[1:], None, None, None, None][:4]
        rows.append(
            HistoryEntry(
                timeline=timeline,
                lsn=as_int(cells[0]),
                reason=as_str(cells[1]),
                timestamp=as_str(cells[2]),
                new_leader=as_str(cells[3]),
            )
        )
    return tuple(rows)


def patroni_bool(value: Any) -> bool | None:
    """A setting as Patroni's parse_bool reads it: on/true/yes/1, off/false/no/0; anything else unset."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return {1: True, 0: False}.get(value)
    if isinstance(value, str):
        return {"on": True, "true": True, "yes": True, "1": True,
                "off": False, "false": False, "no": False, "0": False}.get(value.strip().lower())  # fmt: skip
    return False if value is None else None


def _synchronous_mode(value: Any) -> str:
    """synchronous_mode as Patroni's global config reads it: "quorum", "on" or "off"."""
    if isinstance(value, str) and value.strip().lower() == "quorum":
        return "quorum"
    return "on" if patroni_bool(value) else "off"


def parse_config(data: Any) -> PatroniConfig:
    """The dynamic configuration's relevant keys from a decoded /config; ParseError if not one."""
    body = as_dict(data)
    if body is None:
        raise ParseError("patroni /config: expected an object")
    slots_raw = as_dict(body.get("slots")) or {}
    slots: dict[str, dict[str, Any]] = {}
    for name, spec in slots_raw.items():
        # A slot given as null or a bare name still counts as permanent (Patroni defaults it).
        slots[name] = as_dict(spec) or {}
    pg = as_dict(body.get("postgresql")) or {}
    params = as_dict(pg.get("parameters")) or {}
    # Values are untrusted: scalars only, shown as text, bounded in number and length.
    parameters = {
        clean(k)[:64]: clean(str(v).lower() if isinstance(v, bool) else str(v))[:256]
        for k, v in list(params.items())[:MAX_PARAMETERS]
        if isinstance(v, (str, int, float, bool))
    }
    return PatroniConfig(
        parameters=parameters,
        ttl=as_int(body.get("ttl")),
        loop_wait=as_int(body.get("loop_wait")),
        retry_timeout=as_int(body.get("retry_timeout")),
        maximum_lag_on_failover=as_int(body.get("maximum_lag_on_failover")),
        synchronous_mode=_synchronous_mode(body.get("synchronous_mode")),
        synchronous_mode_strict=patroni_bool(body.get("synchronous_mode_strict")),
        synchronous_node_count=as_int(body.get("synchronous_node_count")),
        check_timeline=patroni_bool(body.get("check_timeline")),
        pause=as_bool(body.get("pause")),
        permanent_slots=slots,
    )


def describe_http_error(exc: Exception, url: str) -> str:
    """One line saying what went wrong asking ``url``."""
    if isinstance(exc, httpx.TimeoutException):
        return f"{url}: no answer (timeout)"
    if isinstance(exc, httpx.ConnectError):
        return f"{url}: cannot connect ({exc or 'refused'}); is Patroni running there?"
    if isinstance(exc, httpx.HTTPStatusError):
        return f"{url}: HTTP {exc.response.status_code}"
    if isinstance(exc, ParseError | RefusedAnswer):
        return f"{url}: {exc}"
    return f"{url}: {exc.__class__.__name__}: {exc}"


class PatroniClient:
    """Fetches and parses Patroni endpoints through a GET-only client."""

    def __init__(self, http: GetOnlyClient, timeout: float, max_members: int | None = None) -> None:
        self._http = http
        self._timeout = timeout
        self._max_members = max_members
        self.requests = 0
        # Per URL, the last answer's body and what it parsed to (bodies up to REMEMBERED_BODY_BYTES).
        self._last: dict[str, tuple[bytes, object]] = {}
        self._cert: dict[str, datetime | None] = {}  # per URL, its peer certificate's end (https)

    async def _body(self, url: str, *, any_status: bool = False) -> bytes:
        self.requests += 1
        response = await self._http.get(url, limit_s=self._timeout)
        if "tls_not_after" in response.extensions:
            if len(self._cert) >= REMEMBERED_URLS:
                self._cert.clear()
            self._cert[url] = response.extensions["tls_not_after"]
        # /patroni answers 503 with a full JSON body when PostgreSQL is down: still data.
        is_json = response.content.startswith(b"{")
        if response.status_code >= 400 and not (any_status and is_json):
            response.raise_for_status()
        return response.content

    async def _json(self, url: str, what: str, *, any_status: bool = False) -> Any:
        return decode_json(await self._body(url, any_status=any_status), what)

    async def _parsed(self, url: str, what: str, parse: Callable[[Any], T], *, any_status: bool = False) -> T:
        # On a calm cluster /cluster and /patroni answer the same bytes second after second:
        # the same bytes parse to the same (frozen) view, so the last one is handed back
        # without decoding the JSON and building the models again.
        body = await self._body(url, any_status=any_status)
        last = self._last.get(url)
        if last is not None and last[0] == body:
            return cast(T, last[1])
        value = parse(decode_json(body, what))
        if len(self._last) >= REMEMBERED_URLS:
            self._last.clear()  # members come and go over days: keep the dictionary small
        if len(body) <= REMEMBERED_BODY_BYTES:
            self._last[url] = (body, value)
        else:
            self._last.pop(url, None)
        return value

    async def cluster(self, root: str) -> ClusterView:
        """GET <root>/cluster."""
        limit = self._max_members
        return await self._parsed(f"{root}/cluster", "patroni /cluster", lambda d: parse_cluster(d, limit))

    async def own(self, api_url: str) -> OwnView:
        """GET a member's api_url (its /patroni)."""
        url = api_url if api_url.rstrip("/").endswith("/patroni") else f"{api_url}/patroni"
        view = await self._parsed(url, "patroni /patroni", parse_patroni, any_status=True)
        cert = self._cert.get(url)
        if view.cert_not_after != cert:
            # Kept beside the body, so a calm member still hands back the very same view.
            view = dataclasses.replace(view, cert_not_after=cert)
            last = self._last.get(url)
            if last is not None:
                self._last[url] = (last[0], view)
        return view

    async def history(self, root: str) -> HistoryRead:
        """GET <root>/history: its newest rows, the rest counted."""
        return read_history(await self._json(f"{root}/history", "patroni /history"))

    async def config(self, root: str) -> PatroniConfig:
        """GET <root>/config."""
        return parse_config(await self._json(f"{root}/config", "patroni /config"))
