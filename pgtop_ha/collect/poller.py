"""The poller: one long-lived loop; each cycle asks every node and source at once.

Every source runs in its own task under its own time limit. A cycle waits for them only up to
its budget: a frozen node stays "no answer for N s" while the others report fresh data, and its
poll keeps running in the background until its own limit ends it (then it reconnects with
backoff). Failures become data: ``error`` and ``last_ok_at`` on the member or node.

Everything a server's answer can make the poller do is bounded and checked: at most
``max_members`` members are polled, discovery roots are the configured ones plus those of the
members currently listed, every host is checked against the allowed-hosts policy (never
link-local or metadata addresses) and every discovered api_url must be scheme://host:port/patroni.
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
from pgtop_ha.collect.http import GetOnlyClient
from pgtop_ha.collect.patroni import (
    ClusterView,
    OwnView,
    PatroniClient,
    describe_http_error,
)
from pgtop_ha.collect.pgbackrest import PgBackRestSource, source_for
from pgtop_ha.collect.postgres import NodeReader, Target
from pgtop_ha.collect.probe import ProbeRunner, read_runner
from pgtop_ha.collect.source import Reading, Source
from pgtop_ha.collect.tls import context_for
from pgtop_ha.models.needs import Needs
from pgtop_ha.models.probe import member_at
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
from pgtop_ha.models.trust import HostPolicy, never_contacted
from pgtop_ha.models.urls import host_of, member_api_url, redact, root_of
from pgtop_ha.settings import Settings

HEDGE_S = 0.25  # ask the other members for /cluster when the preferred one is this slow
REFRESH_EVERY = 10  # cycles between /history and /config fetches (sooner on a leader change)
FORGET_AFTER_S = 600.0  # a member gone from /cluster is still shown this long
BUDGET_SHARE = 0.9  # share of the interval a run() cycle waits for slow sources
PACE_STEP_S = 0.1  # run() looks this often whether a faster cadence was asked


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
    """One member: Patroni's /cluster entry, its own /patroni source and its PostgreSQL reader.

    ``api_url`` is what is shown (without credentials); ``own_url`` is what is polled. A member
    whose REST or PostgreSQL host is refused keeps the reason and has no source for it.
    """

    name: str
    api_url: str | None
    node: NodeReader | None
    own: Source[OwnView] | None
    cluster_entry: Member | None = None
    static: bool = False
    gone_since: float | None = None
    own_url: str | None = None
    api_refusal: str | None = None
    pg_refusal: str | None = None
    pg_host: str | None = None
    pg_port: int | None = None
    # What /cluster said about where it is: a change makes a new slot (and drops the old root).
    key: tuple[str | None, str | None, int | None] = (None, None, None)
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


def _haproxy_describer(url: str | None) -> Callable[[BaseException], str]:
    """Lines naming HAProxy and its stats URL (redacted), never Patroni."""
    where = redact(url) if url else "stats page"

    def describe(exc: BaseException) -> str:
        return redact(_haproxy_problem(exc, where))

    return describe


def _haproxy_problem(exc: BaseException, where: str) -> str:
    if isinstance(exc, TimeoutError):
        return f"haproxy stats {where}: no answer (timeout)"
    if isinstance(exc, ParseError):
        return str(exc)
    if isinstance(exc, httpx.ConnectError):
        return f"haproxy stats {where}: cannot connect ({exc or 'refused'}); is HAProxy running there?"
    if isinstance(exc, httpx.HTTPError):
        return "haproxy stats: " + describe_http_error(exc, where)
    if isinstance(exc, OSError):
        return f"haproxy stats socket: {exc.strerror or exc}"
    return f"haproxy stats: {exc.__class__.__name__}: {exc}"


def _http_describer(what: str) -> Callable[[BaseException], str]:
    # URLs may carry user:password (a configured root): every line is redacted.
    shown = redact(what)

    def describe(exc: BaseException) -> str:
        if isinstance(exc, TimeoutError):
            return f"{shown}: no answer (timeout)"
        if isinstance(exc, Exception):
            return redact(describe_http_error(exc, shown))
        return f"{shown}: {exc.__class__.__name__}"

    return describe


def refusal(policy: HostPolicy, host: str | None, section: str) -> str | None:
    """Why ``host`` is not contacted under ``policy`` (naming ``section``.allowed_hosts), or None."""
    reason = policy.refusal(host)
    if reason is None or not host:
        return reason
    if never_contacted(host) is None:
        return f"{host} is not in {section}.allowed_hosts; not contacted"
    return reason


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
        self._max_members = settings.max_members
        self.patroni = PatroniClient(patroni_http, settings.patroni.timeout, max_members=self._max_members)
        self._rest_hosts = HostPolicy.of(settings.patroni.allowed_hosts)
        self._pg_hosts = HostPolicy.of(settings.postgres.allowed_hosts)
        self._members: dict[str, MemberSlot] = {}
        # Configured REST roots (those the policy allows); refused ones are shown every cycle.
        self._roots: list[str] = []
        self._refused: list[str] = []
        for url in settings.patroni.urls:
            self._add_root(url)
        self._preferred: str | None = None
        self._history: tuple[HistoryEntry, ...] = ()
        self._config: PatroniConfig | None = None
        self._refresh_key: tuple[str | None, int | None] | None = None
        self._since_refresh = REFRESH_EVERY
        self._scope: str | None = settings.cluster_name
        self._cluster_applied: object | None = None
        self.cycles = 0
        self._shown_leader: str | None = None  # the leader /cluster named in the last cycle
        self._leader_seen = False
        self.haproxy_requests = 0
        self._closing: set[asyncio.Task[None]] = set()
        self._needs: Needs = frozenset({"memory"})  # until the screen says what it shows
        for node in settings.nodes:
            api = api_refusal = None
            if node.patroni_url:
                # Settings made it scheme://host:port (credentials, if any, are stripped on GET).
                api_refusal = refusal(self._rest_hosts, host_of(node.patroni_url), "patroni")
                self._add_root(node.patroni_url)
                api = f"{node.patroni_url}/patroni"
            self._members[node.name] = self._slot(
                node.name, api, api_refusal, node.host, node.port, node.dbname, static=True
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
                _haproxy_describer(settings.haproxy.url),
            )
        # pgBackRest (collect/pgbackrest.py): off unless enabled, or unset and everything is local.
        hosts = [n.host for n in settings.nodes] + [host_of(u) for u in settings.patroni.urls]
        self._pgbackrest: PgBackRestSource | None = source_for(settings.pgbackrest, hosts, clock)
        # Client probes: a new connection per cycle through each endpoint (collect/probe.py).
        self._probes: list[ProbeRunner] = []
        if settings.probes.enabled:
            for endpoint in settings.probes.endpoints:
                why = refusal(self._pg_hosts, endpoint.host, "postgres")
                calm = settings.probes.calm_interval
                runner = read_runner(
                    endpoint, settings.postgres, settings.probes.timeout, clock, why, calm_interval=calm
                )
                self.add_probe(runner)

    @classmethod
    def from_settings(cls, settings: Settings, clock: Clock = system_clock) -> Poller:
        """A poller with GET-only HTTP clients, TLS from the patroni/haproxy sections (collect/tls.py)."""
        patroni_tls = context_for("patroni", settings.patroni)
        patroni_http = GetOnlyClient(timeout=settings.patroni.timeout, verify=patroni_tls)
        haproxy_http = None
        if settings.haproxy.url:
            haproxy_tls = context_for("haproxy", settings.haproxy)
            haproxy_http = GetOnlyClient(timeout=settings.haproxy.timeout, verify=haproxy_tls)
        return cls(settings, clock, patroni_http, haproxy_http)

    def add_probe(self, runner: ProbeRunner) -> None:
        """Run ``runner`` every cycle beside the others (the operator's write probe comes this way)."""
        runner.locate = self._locate
        runner.restless = self._restless
        self._probes.append(runner)

    def _restless(self) -> bool:
        """True while a node's PostgreSQL is not answering: read probes then run every cycle."""
        # A killed primary that Patroni restarts in place is down for a few seconds only: a
        # probe every calm_interval would miss the outage the probes exist to show.
        nodes = [slot.node for slot in self._members.values() if slot.node is not None]
        return any(not node.view().reachable for node in nodes)

    def _locate(self, addr: str | None, port: int | None) -> str | None:
        """The member whose PostgreSQL listens at ``addr``:``port`` (a probe's answering server)."""
        known = tuple((slot.name, slot.pg_host, slot.pg_port) for slot in self._members.values())
        return member_at(known, addr, port)

    # -- members ---------------------------------------------------------------------------------

    def _add_root(self, url: str) -> None:
        reason = refusal(self._rest_hosts, host_of(url), "patroni")
        if reason is not None:
            line = f"patroni {redact(url)}: {reason}"
            if line not in self._refused:
                self._refused.append(line)
        elif url not in self._roots:
            self._roots.append(url)

    def _member_api(self, api_url: str | None) -> tuple[str | None, str | None]:
        """A listed member's URL to poll, or why it is not polled (a bad shape, a refused host)."""
        if api_url is None:
            return None, None
        try:
            url = member_api_url(api_url)
        except ValueError as exc:
            return None, f"{exc}; not polled"
        reason = refusal(self._rest_hosts, host_of(url), "patroni")
        return (None, reason) if reason is not None else (url, None)

    def _slot(
        self,
        name: str,
        api_url: str | None,
        api_refusal: str | None,
        host: str | None,
        port: int | None,
        dbname: str | None,
        *,
        static: bool = False,
        shown_api_url: str | None = None,
    ) -> MemberSlot:
        node = None
        pg_refusal = refusal(self._pg_hosts, host, "postgres") if host else None
        if host and pg_refusal is None:
            target = Target(
                name=name,
                host=host,
                port=port or 5432,
                dbname=dbname or self._settings.postgres.dbname,
            )
            node = NodeReader(target, self._settings.postgres, self._clock, proc=self._proc)
            node.needs = self._needs
        own = None
        if api_url and api_refusal is None:

            async def fetch(url: str = api_url) -> OwnView:
                return await self.patroni.own(url)

            own = Source(
                f"patroni {redact(api_url)}",
                fetch,
                self._settings.patroni.timeout + 0.5,
                self._clock,
                _http_describer(api_url),
            )
        shown = shown_api_url if shown_api_url is not None else api_url
        return MemberSlot(
            name=name,
            api_url=redact(shown) if shown else None,
            node=node,
            own=own,
            static=static,
            own_url=api_url if own is not None else None,
            api_refusal=api_refusal,
            pg_refusal=pg_refusal,
            pg_host=host,
            pg_port=(port or 5432) if host else None,
        )

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
            key = (entry.api_url, entry.host, (entry.port or 5432) if entry.host else None)
            if slot is not None and slot.key != key:
                retired.append(slot)
                slot = None
            if slot is None:
                api_url, api_refusal = self._member_api(entry.api_url)
                slot = self._slot(
                    entry.name,
                    api_url,
                    api_refusal,
                    entry.host,
                    entry.port,
                    None,
                    shown_api_url=entry.api_url,
                )
                slot.key = key
                self._members[entry.name] = slot
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
        # Members no longer listed are still polled a while, but never beyond max_members in
        # all: the longest gone are forgotten first.
        discovered = [s for s in self._members.values() if not s.static]
        excess = len(discovered) - self._max_members
        if excess > 0:
            gone = sorted(
                (s for s in discovered if s.gone_since is not None), key=lambda s: s.gone_since or 0.0
            )
            for slot in gone[:excess]:
                retired.append(self._members.pop(slot.name))
        return retired

    # -- sources --------------------------------------------------------------------------------

    def _candidate_roots(self) -> list[str]:
        """Configured roots, then those of members listed now (so at most max_members more)."""
        roots = list(self._roots)
        for slot in self._members.values():
            if slot.static or slot.cluster_entry is None or slot.own_url is None:
                continue
            root = root_of(slot.own_url)
            if root not in roots:
                roots.append(root)
        if self._preferred in roots:
            roots.remove(self._preferred)
            roots.insert(0, self._preferred)
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
            raise ParseError("patroni: no REST URL left to ask; give --patroni URL")
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
        if self._pgbackrest is not None and (first := self._pgbackrest.start()) is not None:
            pending.add(first)  # only the first `pgbackrest info` is waited for; later ones run behind
        for runner in self._probes:
            task = runner.start()
            if task is not None:
                pending.add(task)
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
                reading = self._cluster.reading()
                retired += self._take_cluster(reading)
                for name, slot in self._members.items():
                    if name not in started:
                        pending |= slot.start()
                        started.add(name)
                if reading.value is not None:
                    leader = reading.value.view.info.leader
                    changed = self._leader_seen and leader != self._shown_leader
                    self._shown_leader, self._leader_seen = leader, True
                    if changed:
                        # A leader change is the news of the minute: hand it over now; the other
                        # sources keep polling and join the next snapshot (their last values stay).
                        break
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
        errors: list[str] = list(self._refused)
        cluster_reading: Reading[Discovered] | None = None
        live = False
        if self._cluster is not None:
            cluster_reading = self._cluster.reading()
            if cluster_reading.error:
                errors.append(cluster_reading.error)
            elif cluster_reading.value is not None:
                errors.extend(cluster_reading.value.errors)
                live = True
                view = cluster_reading.value.view
                if view.listed > len(view.members):
                    errors.append(
                        f"patroni /cluster lists {view.listed} members; polling {len(view.members)} "
                        "(max_members), the others are not shown"
                    )
        elif not self._settings.nodes and not self._refused:
            if self._haproxy is not None:
                errors.append("Patroni: not configured (give --patroni URL to see members)")
            else:
                errors.append("nothing to poll: give --patroni URL, [[nodes]] in the config or --haproxy")
        members: list[Member] = []
        nodes: list[NodeSnapshot] = []
        for slot in self._members.values():
            members.append(self._member(slot, live))
            if slot.node is not None:
                nodes.append(slot.node.view())
            elif slot.pg_refusal is not None:
                nodes.append(
                    NodeSnapshot(name=slot.name, host=slot.pg_host, port=slot.pg_port, error=slot.pg_refusal)
                )
            else:
                nodes.append(NodeSnapshot(name=slot.name, error="no PostgreSQL host/port known for it"))
        info = ClusterInfo()
        if live and cluster_reading is not None and cluster_reading.value is not None:
            info = cluster_reading.value.view.info
        scope = self._scope or info.name or next((v.scope for v in self._own_values() if v.scope), None)
        # No root answered /cluster: leader and roles are unknown this cycle, not "no leader".
        slow = cluster_reading.slow_s if live and cluster_reading is not None else None
        reachable = live or self._cluster is None
        info = info.model_copy(update={"name": scope, "reachable": reachable, "slow_s": slow})
        return ClusterSnapshot(
            taken_at=now,
            cluster=info,
            members=tuple(members),
            nodes=tuple(nodes),
            haproxy=self._haproxy_state(),
            history=self._history,
            patroni_config=self._config,
            errors=tuple(errors),
            probes=tuple(runner.probe() for runner in self._probes),
            pgbackrest=self._pgbackrest.state() if self._pgbackrest is not None else None,
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
        reading: Reading[OwnView] = Reading(None, slot.api_refusal or "no Patroni REST URL known", None)
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
            slow_s=reading.slow_s,  # a slow answer keeps the last one: reachable, not down
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
        return HAProxyState(
            servers=reading.value or (),
            error=reading.error,
            last_ok_at=reading.last_ok_at,
            slow_s=reading.slow_s,
        )

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
                    errors=(redact(f"poller: {exc.__class__.__name__}: {exc}"),),
                )
            result = on_snapshot(snapshot)
            if inspect.isawaitable(result):
                await result
            # Pacing, not synchronisation: the next cycle starts one interval after this one,
            # or sooner when a faster cadence is asked meanwhile (something just went wrong).
            while True:
                left = started + min(period, max(0.05, float(interval()))) - loop.time()
                if left <= 0:
                    break
                await asyncio.sleep(min(left, PACE_STEP_S))

    def set_needs(self, needs: Needs) -> None:
        """Do these optional reads (models/needs.py) from now on, e.g. memory only while shown."""
        self._needs = needs
        for slot in self._members.values():
            if slot.node is not None:
                slot.node.needs = needs

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
        closers.extend(runner.aclose() for runner in self._probes)
        if self._pgbackrest is not None:
            closers.append(self._pgbackrest.aclose())
        await asyncio.gather(*closers, *self._closing, return_exceptions=True)
        await self._patroni_http.aclose()
        if self._haproxy_http is not None:
            await self._haproxy_http.aclose()
