"""The poller: one long-lived loop; each cycle asks every node and source at once.

Every source runs in its own task under its own time limit. A cycle waits for them only up to
its budget: a frozen node stays "no answer for N s" while the others report fresh data, and its
poll keeps running in the background until its own limit ends it (then it reconnects with
backoff). Failures become data: ``error`` and ``last_ok_at`` on the member or node.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import httpx

from pgtop_ha.clock import Clock, system_clock
from pgtop_ha.collect import haproxy
from pgtop_ha.collect.errors import ParseError
from pgtop_ha.collect.http import GetOnlyClient, verify_context
from pgtop_ha.collect.patroni import (
    ClusterView,
    OwnView,
    PatroniClient,
    base_url,
    describe_http_error,
)
from pgtop_ha.collect.postgres import NodeReader, Target
from pgtop_ha.collect.source import Reading, Source
from pgtop_ha.models.snapshot import (
    ClusterInfo,
    ClusterSnapshot,
    HAProxyServer,
    HAProxyState,
    HistoryEntry,
    Member,
    NodeSnapshot,
    PatroniConfig,
)
from pgtop_ha.settings import Settings

HEDGE_S = 0.25  # ask the other members for /cluster when the preferred one is this slow
REFRESH_EVERY = 10  # cycles between /history and /config fetches (sooner on a leader change)
FORGET_AFTER_S = 600.0  # a member gone from /cluster is still shown this long
BUDGET_SHARE = 0.9  # share of the interval a run() cycle waits for slow sources


@dataclass
class Discovered:
    """What the /cluster task learned: the view, and /history + /config when they were due."""

    view: ClusterView
    root: str
    history: tuple[HistoryEntry, ...] | None = None
    config: PatroniConfig | None = None
    errors: tuple[str, ...] = ()


@dataclass
class MemberSlot:
    """One member: Patroni's /cluster entry, its own /patroni source and its PostgreSQL reader."""

    name: str
    api_url: str | None
    node: NodeReader | None
    own: Source[OwnView] | None
    cluster_entry: Member | None = None
    static: bool = False
    gone_since: float | None = None
    tasks: list[asyncio.Task[None]] = field(default_factory=list)

    def start(self) -> set[asyncio.Task[None]]:
        """Start (or rejoin) this member's polls."""
        out: set[asyncio.Task[None]] = set()
        if self.own is not None:
            out.add(self.own.start())
        if self.node is not None:
            out.add(self.node.start())
        return out

    async def aclose(self) -> None:
        """Stop this member's polls and close its connection."""
        if self.own is not None:
            await self.own.aclose()
        if self.node is not None:
            await self.node.aclose()


def _describe_haproxy(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return "haproxy stats: no answer (timeout)"
    if isinstance(exc, ParseError):
        return str(exc)
    if isinstance(exc, httpx.HTTPError):
        return "haproxy stats: " + describe_http_error(exc, "stats page")
    if isinstance(exc, OSError):
        return f"haproxy stats socket: {exc.strerror or exc}"
    return f"haproxy stats: {exc.__class__.__name__}: {exc}"


def _http_describer(what: str) -> Callable[[BaseException], str]:
    def describe(exc: BaseException) -> str:
        if isinstance(exc, TimeoutError):
            return f"{what}: no answer (timeout)"
        if isinstance(exc, Exception):
            return describe_http_error(exc, what)
        return f"{what}: {exc.__class__.__name__}"

    return describe


def _own_url(api_url: str) -> str:
    url = api_url.rstrip("/")
    return url if url.endswith("/patroni") else f"{url}/patroni"


class Poller:
    """Polls every member's Patroni and PostgreSQL and HAProxy into ClusterSnapshots."""

    def __init__(
        self,
        settings: Settings,
        clock: Clock,
        patroni_http: GetOnlyClient,
        haproxy_http: GetOnlyClient | None,
        *,
        proc: Path = Path("/proc"),
    ) -> None:
        self._settings = settings
        self._clock = clock
        self._proc = proc
        self._patroni_http = patroni_http
        self._haproxy_http = haproxy_http
        self.patroni = PatroniClient(patroni_http, settings.patroni.timeout)
        self._members: dict[str, MemberSlot] = {}
        self._roots: list[str] = list(settings.patroni.urls)
        self._preferred: str | None = None
        self._history: tuple[HistoryEntry, ...] = ()
        self._config: PatroniConfig | None = None
        self._refresh_key: tuple[str | None, int | None] | None = None
        self._since_refresh = REFRESH_EVERY
        self._scope: str | None = settings.cluster_name
        self._cluster_applied: object | None = None
        self.cycles = 0
        self.haproxy_requests = 0
        self._closing: set[asyncio.Task[None]] = set()
        self._memory_enabled = True
        for node in settings.nodes:
            api = _own_url(node.patroni_url) if node.patroni_url else None
            if node.patroni_url and base_url(node.patroni_url) not in self._roots:
                self._roots.append(base_url(node.patroni_url))
            self._members[node.name] = self._slot(
                node.name, api, node.host, node.port, node.dbname, static=True
            )
        self._cluster: Source[Discovered] | None = None
        if self._roots:
            limit = settings.patroni.timeout * 2 + 0.5
            describe = _http_describer("patroni /cluster")
            self._cluster = Source("patroni /cluster", self._discover, limit, clock, describe)
        self._haproxy: Source[tuple[HAProxyServer, ...]] | None = None
        if settings.haproxy.url or settings.haproxy.socket:
            self._haproxy = Source(
                "haproxy stats",
                self._fetch_haproxy,
                settings.haproxy.timeout + 0.5,
                clock,
                _describe_haproxy,
            )

    @classmethod
    def from_settings(cls, settings: Settings, clock: Clock = system_clock) -> Poller:
        """A poller with GET-only HTTP clients (TLS verified, CA from patroni.ca_file)."""
        verify = verify_context(settings.patroni.verify, settings.patroni.ca_file)
        patroni_http = GetOnlyClient(timeout=settings.patroni.timeout, verify=verify)
        haproxy_http = None
        if settings.haproxy.url:
            haproxy_http = GetOnlyClient(timeout=settings.haproxy.timeout)
        return cls(settings, clock, patroni_http, haproxy_http)

    # -- members ---------------------------------------------------------------------------------

    def _slot(
        self,
        name: str,
        api_url: str | None,
        host: str | None,
        port: int | None,
        dbname: str | None,
        *,
        static: bool = False,
    ) -> MemberSlot:
        node = None
        if host:
            target = Target(
                name=name,
                host=host,
                port=port or 5432,
                dbname=dbname or self._settings.postgres.dbname,
            )
            node = NodeReader(target, self._settings.postgres, self._clock, proc=self._proc)
            node.memory_enabled = self._memory_enabled
        own = None
        if api_url:
            url = _own_url(api_url)

            async def fetch(url: str = url) -> OwnView:
                return await self.patroni.own(url)

            own = Source(
                f"patroni {url}",
                fetch,
                self._settings.patroni.timeout + 0.5,
                self._clock,
                _http_describer(url),
            )
        return MemberSlot(name=name, api_url=api_url, node=node, own=own, static=static)

    def _apply_cluster(self, view: ClusterView) -> list[MemberSlot]:
        """Follow /cluster's membership; returns slots to close (replaced or forgotten)."""
        loop_now = asyncio.get_running_loop().time()
        listed = {m.name for m in view.members}
        retired: list[MemberSlot] = []
        for entry in view.members:
            slot = self._members.get(entry.name)
            if slot is not None and slot.static:
                slot.cluster_entry = entry
                continue
            if self._settings.nodes:
                continue  # nodes given explicitly: /cluster only adds roles, never members
            target_changed = slot is None or (
                slot.api_url != entry.api_url
                or (slot.node is None) != (entry.host is None)
                or (
                    slot.node is not None
                    and (slot.node.target.host, slot.node.target.port) != (entry.host, entry.port or 5432)
                )
            )
            if slot is not None and target_changed:
                retired.append(slot)
            if slot is None or target_changed:
                slot = self._slot(entry.name, entry.api_url, entry.host, entry.port, None)
                self._members[entry.name] = slot
                if entry.api_url:
                    root = base_url(entry.api_url)
                    if root not in self._roots:
                        self._roots.append(root)
            slot.cluster_entry = entry
            slot.gone_since = None
        for name, slot in list(self._members.items()):
            if name in listed or slot.static:
                continue
            slot.cluster_entry = None
            if slot.gone_since is None:
                slot.gone_since = loop_now
            elif loop_now - slot.gone_since > FORGET_AFTER_S:
                retired.append(self._members.pop(name))
        return retired

    # -- sources --------------------------------------------------------------------------------

    def _candidate_roots(self) -> list[str]:
        roots = [self._preferred] if self._preferred else []
        roots += [r for r in self._roots if r not in roots]
        return roots

    async def _discover(self) -> Discovered:
        roots = self._candidate_roots()
        view, root = await self._first_cluster(roots)
        self._preferred = root
        due = self._since_refresh >= REFRESH_EVERY
        leader = view.info.leader
        timeline = max((m.timeline for m in view.members if m.timeline is not None), default=None)
        key = (leader, timeline)
        if key != self._refresh_key or self._config is None:
            due = True
        found = Discovered(view=view, root=root)
        if not due:
            return found
        history, config = await asyncio.gather(
            self.patroni.history(root), self.patroni.config(root), return_exceptions=True
        )
        errors: list[str] = []
        if isinstance(history, BaseException):
            errors.append(_http_describer("patroni /history")(history))
        else:
            found.history = history
        if isinstance(config, BaseException):
            errors.append(_http_describer("patroni /config")(config))
        else:
            found.config = config
        if not errors:
            self._refresh_key = key
        found.errors = tuple(errors)
        return found

    async def _first_cluster(self, roots: list[str]) -> tuple[ClusterView, str]:
        """The first good /cluster: the preferred root, then (after HEDGE_S) all others too."""
        if not roots:
            raise ParseError("patroni: no REST URL known; give --patroni URL")
        tasks: dict[asyncio.Task[ClusterView], str] = {}
        errors: list[str] = []
        try:
            first = asyncio.create_task(self.patroni.cluster(roots[0]))
            tasks[first] = roots[0]
            done, _ = await asyncio.wait({first}, timeout=HEDGE_S)
            if first in done and first.exception() is None:
                return first.result(), roots[0]
            for root in roots[1:]:
                tasks[asyncio.create_task(self.patroni.cluster(root))] = root
            pending: set[asyncio.Task[ClusterView]] = set(tasks)
            while pending:
                done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    exc = task.exception()
                    if exc is None:
                        return task.result(), tasks[task]
                    where = f"{tasks[task]}/cluster"
                    errors.append(_http_describer(where)(exc) if exc else where)
        finally:
            for task in tasks:
                if not task.done():
                    task.cancel()
            for task in tasks:
                with contextlib.suppress(BaseException):
                    await task
        raise ParseError("; ".join(errors) or "patroni /cluster: no answer")

    async def _fetch_haproxy(self) -> tuple[HAProxyServer, ...]:
        s = self._settings.haproxy
        errors: list[str] = []
        if s.socket is not None:
            try:
                self.haproxy_requests += 1
                return haproxy.parse_stat_csv(await haproxy.fetch_socket(s.socket))
            except ParseError:
                raise
            except OSError as exc:
                if not s.url:
                    raise
                errors.append(f"socket {s.socket}: {exc.strerror or exc}")
        if s.url and self._haproxy_http is not None:
            self.haproxy_requests += 1
            text = await haproxy.fetch_http(self._haproxy_http, s.url, s.timeout)
            return haproxy.parse_stat_csv(text)
        raise ParseError("haproxy stats: " + ("; ".join(errors) or "not configured"))

    # -- the cycle ------------------------------------------------------------------------------

    async def cycle(self, budget: float | None = None) -> ClusterSnapshot:
        """One concurrent poll of everything; waits at most ``budget`` seconds when given."""
        loop = asyncio.get_running_loop()
        deadline = None if budget is None else loop.time() + budget
        self.cycles += 1
        self._since_refresh += 1
        pending: set[asyncio.Task[None]] = set()
        retired: list[MemberSlot] = []
        cluster_task = None
        if self._cluster is not None:
            # /cluster may have answered after the previous cycle ended: use it first.
            retired += self._take_cluster(self._cluster.reading())
            cluster_task = self._cluster.start()
            pending.add(cluster_task)
        if self._haproxy is not None:
            pending.add(self._haproxy.start())
        started: set[str] = set()
        for name, slot in self._members.items():
            pending |= slot.start()
            started.add(name)
        while pending:
            remaining = None if deadline is None else max(0.0, deadline - loop.time())
            done, pending = await asyncio.wait(
                pending, timeout=remaining, return_when=asyncio.FIRST_COMPLETED
            )
            if not done:
                break
            if cluster_task is not None and cluster_task in done and self._cluster is not None:
                retired += self._take_cluster(self._cluster.reading())
                for name, slot in self._members.items():
                    if name not in started:
                        pending |= slot.start()
                        started.add(name)
        for slot in retired:
            # Closing a retired member never holds up the cycle; keep a reference until done.
            closing = asyncio.get_running_loop().create_task(slot.aclose())
            self._closing.add(closing)
            closing.add_done_callback(self._closing.discard)
        return self._assemble()

    def _take_cluster(self, reading: Reading[Discovered]) -> list[MemberSlot]:
        found = reading.value
        if found is None or found is self._cluster_applied:
            return []
        self._cluster_applied = found
        if found.history is not None:
            self._history = found.history
        if found.config is not None:
            self._config = found.config
        if found.history is not None or found.config is not None:
            self._since_refresh = 0
        return self._apply_cluster(found.view)

    def _assemble(self) -> ClusterSnapshot:
        now = self._clock()
        errors: list[str] = []
        cluster_reading: Reading[Discovered] | None = None
        live = False
        if self._cluster is not None:
            cluster_reading = self._cluster.reading()
            if cluster_reading.error:
                errors.append(cluster_reading.error)
            elif cluster_reading.value is not None:
                errors.extend(cluster_reading.value.errors)
                live = True
        elif not self._settings.nodes:
            errors.append("nothing to poll: give --patroni URL or [[nodes]] in the config")
        members: list[Member] = []
        nodes: list[NodeSnapshot] = []
        for slot in self._members.values():
            members.append(self._member(slot, live))
            if slot.node is not None:
                nodes.append(slot.node.view())
            else:
                nodes.append(NodeSnapshot(name=slot.name, error="no PostgreSQL host/port known for it"))
        info = ClusterInfo()
        if live and cluster_reading is not None and cluster_reading.value is not None:
            info = cluster_reading.value.view.info
        scope = self._scope or info.name or next((v.scope for v in self._own_values() if v.scope), None)
        info = info.model_copy(update={"name": scope})
        return ClusterSnapshot(
            taken_at=now,
            cluster=info,
            members=tuple(members),
            nodes=tuple(nodes),
            haproxy=self._haproxy_state(),
            history=self._history,
            patroni_config=self._config,
            errors=tuple(errors),
        )

    def _own_values(self) -> Iterable[OwnView]:
        for slot in self._members.values():
            if slot.own is not None:
                value = slot.own.reading().value
                if value is not None:
                    yield value

    def _member(self, slot: MemberSlot, live: bool) -> Member:
        entry = slot.cluster_entry if live else None
        base = entry or Member(name=slot.name)
        host = base.host
        port = base.port
        if slot.node is not None:
            host, port = slot.node.target.host, slot.node.target.port
        update: dict[str, object] = {
            "host": host,
            "port": port,
            "api_url": base.api_url or slot.api_url,
        }
        if not live and slot.cluster_entry is not None:
            update["tags"] = slot.cluster_entry.tags
        reading: Reading[OwnView] = Reading(None, "no Patroni REST URL known", None)
        if slot.own is not None:
            reading = slot.own.reading()
        own = reading.value
        error = reading.error
        if live and entry is None and slot.gone_since is not None:
            error = "not listed by Patroni's /cluster any more" + (f"; {error}" if error else "")
        update.update(
            reachable=own is not None,
            error=error,
            last_ok_at=reading.last_ok_at,
        )
        if own is not None:
            update.update(
                own_role=own.role,
                own_state=own.state,
                own_timeline=own.timeline,
                dcs_last_seen=own.dcs_last_seen,
                patroni_version=own.version,
                pause=own.pause,
                pending_restart=own.pending_restart or bool(base.pending_restart),
                pending_restart_reason=own.pending_restart_reason,
            )
        return base.model_copy(update=update)

    def _haproxy_state(self) -> HAProxyState:
        if self._haproxy is None:
            return HAProxyState(error="not configured; give --haproxy URL|SOCKET")
        reading = self._haproxy.reading()
        return HAProxyState(servers=reading.value or (), error=reading.error, last_ok_at=reading.last_ok_at)

    # -- the loop -------------------------------------------------------------------------------

    async def run(
        self,
        on_snapshot: Callable[[ClusterSnapshot], object],
        interval: Callable[[], float],
    ) -> None:
        """Poll forever: one cycle per interval, each handed to ``on_snapshot`` (may be async)."""
        loop = asyncio.get_running_loop()
        while True:
            started = loop.time()
            period = max(0.05, float(interval()))
            try:
                snapshot = await self.cycle(budget=period * BUDGET_SHARE)
            except Exception as exc:  # a bug here must not end the console's data
                snapshot = ClusterSnapshot(
                    taken_at=self._clock(),
                    errors=(f"poller: {exc.__class__.__name__}: {exc}",),
                )
            result = on_snapshot(snapshot)
            if inspect.isawaitable(result):
                await result
            # Pacing, not synchronisation: the next cycle starts one interval after this one.
            await asyncio.sleep(max(0.0, started + period - loop.time()))

    def set_memory(self, enabled: bool) -> None:
        """Read process memory (every few seconds) or not at all, e.g. while its pane is hidden."""
        self._memory_enabled = enabled
        for slot in self._members.values():
            if slot.node is not None:
                slot.node.memory_enabled = enabled

    def round_trips(self) -> dict[str, int]:
        """PostgreSQL round trips so far, per node (for the benchmark)."""
        return {name: slot.node.round_trips for name, slot in self._members.items() if slot.node is not None}

    def last_ok(self) -> dict[str, datetime | None]:
        """When each node's PostgreSQL last answered."""
        return {name: slot.node.last_ok_at for name, slot in self._members.items() if slot.node is not None}

    async def aclose(self) -> None:
        """Stop every poll, close every connection and HTTP client."""
        closers = [slot.aclose() for slot in self._members.values()]
        if self._cluster is not None:
            closers.append(self._cluster.aclose())
        if self._haproxy is not None:
            closers.append(self._haproxy.aclose())
        await asyncio.gather(*closers, *self._closing, return_exceptions=True)
        await self._patroni_http.aclose()
        if self._haproxy_http is not None:
            await self._haproxy_http.aclose()
