"""The poller: one long-lived loop; each cycle asks its sources at once and assembles a snapshot.

Each source runs in its own task under its own time limit, and a cycle waits only up to its
budget: a frozen node reads "no answer for N s" while the others stay fresh. Failures are data
(``error``, ``last_ok_at``). Patroni and the probes are asked every cycle only while restless.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from pgtop_ha.clock import Clock, system_clock
from pgtop_ha.collect import haproxy
from pgtop_ha.collect.coerce import MAX_NOTES
from pgtop_ha.collect.errors import ParseError
from pgtop_ha.collect.http import GetOnlyClient, Login
from pgtop_ha.collect.membership import Discovered, Membership, MemberSources, refusal
from pgtop_ha.collect.patroni import (
    HistoryRead,
    OwnView,
    PatroniClient,
    describe_http_error,
)
from pgtop_ha.collect.pgbackrest import PgBackRestSource, source_for
from pgtop_ha.collect.poolers import PoolerReader, bouncer_reader, bouncer_state, pgpool_reader, pgpool_state
from pgtop_ha.collect.probe import ProbeRunner, read_runner
from pgtop_ha.collect.source import Reading, Source
from pgtop_ha.collect.tls import context_maker
from pgtop_ha.models.haproxy import Routing, routing
from pgtop_ha.models.needs import Needs
from pgtop_ha.models.servers import joined
from pgtop_ha.models.snapshot import (
    ClusterInfo,
    ClusterSnapshot,
    HAProxyServer,
    HAProxyState,
    Member,
    NodeSnapshot,
)
from pgtop_ha.models.sources import UNSETTLED_S
from pgtop_ha.models.trust import HostPolicy
from pgtop_ha.models.urls import host_of, redact
from pgtop_ha.settings import Settings

BUDGET_SHARE = 0.9  # share of the interval a run() cycle waits for slow sources
# A node's kept connection closing under us (a crash, a demotion) starts the next cycle at once,
# but never sooner than this after the last began: a flapping server cannot spin the poller.
WAKE_GAP_S = 0.2


# A stats page this large is read in a thread: below it the thread's hand-over costs more than the read.
THREAD_STATS_BYTES = 256 * 1024


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
    if isinstance(exc, httpx.HTTPStatusError) and exc.response.status_code == 401:
        # HAProxy's `stats auth`: say what to set, or that what was set is refused. A user and
        # password written in the URL are never sent (collect/http.py strips them).
        fix = (
            "login refused; check"
            if "authorization" in exc.request.headers
            else "the page asks for a login; set"
        )
        return f"haproxy stats {where}: HTTP 401, {fix} [haproxy] user and password_file"
    if isinstance(exc, httpx.HTTPError):
        return "haproxy stats: " + describe_http_error(exc, where)
    if isinstance(exc, OSError):
        return f"haproxy stats socket: {exc.strerror or exc}"
    return f"haproxy stats: {exc.__class__.__name__}: {exc}"


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
        self._pools = settings.haproxy.pools()
        self._clock = clock
        self._proc = proc
        self._patroni_http = patroni_http
        self._haproxy_http = haproxy_http
        patroni = PatroniClient(patroni_http, settings.patroni.timeout, max_members=settings.max_members)
        # Who the members are and how each is reached (collect/membership.py).
        self.membership = Membership(settings, clock, patroni, proc=proc, on_lost=self.wake)
        self._history_given: HistoryRead | None = None
        self.patroni = patroni
        self._pg_hosts = HostPolicy.of(settings.postgres.allowed_hosts)
        self._scope: str | None = settings.cluster_name
        self.cycles = 0
        self._shown_leader: str | None = None  # the leader /cluster named in the last cycle
        self._leader_seen = False
        self.haproxy_requests = 0
        self._closing: set[asyncio.Task[None]] = set()
        self._hurried = asyncio.Event()  # hurry(): look at interval() again before the pause ends
        self._woken = False  # wake(): end the pause now
        self._primed: asyncio.Task[ClusterSnapshot] | None = None  # prime(): the first cycle, begun early
        self._began = False  # a first cycle was primed or run() started: prime() does nothing more
        # HAProxy's routing as last read (judge.haproxy.routing) and until when a change keeps
        # the probes running every cycle (_note_routing, at each stats read).
        self._routing: Routing | None = None
        self._routing_until: datetime | None = None
        self._haproxy: Source[haproxy.StatsPage] | None = None
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
            for endpoint in settings.probe_endpoints():
                why = refusal(self._pg_hosts, endpoint.host, "postgres")
                calm = settings.probes.calm_interval
                runner = read_runner(
                    endpoint, settings.postgres, settings.probes.timeout, clock, why, calm_interval=calm
                )
                self.add_probe(runner)
        # Poolers' own views (collect/poolers.py): pgBouncer's admin console, pgpool-II's SHOW.
        self._bouncers = [
            bouncer_reader(b, settings.postgres, clock, refusal(self._pg_hosts, b.host, "postgres"))
            for b in settings.pgbouncer
        ]
        self._pgpools = [
            pgpool_reader(p, settings.postgres, clock, refusal(self._pg_hosts, p.host, "postgres"))
            for p in settings.pgpool
        ]

    @classmethod
    def from_settings(cls, settings: Settings, clock: Clock = system_clock) -> Poller:
        """A poller with GET-only HTTP clients, TLS from the patroni/haproxy sections (collect/tls.py)."""
        patroni_tls = context_maker("patroni", settings.patroni)
        patroni_http = GetOnlyClient(timeout=settings.patroni.timeout, verify=patroni_tls)
        haproxy_http = None
        if settings.haproxy.url:
            haproxy_tls = context_maker("haproxy", settings.haproxy)
            login = settings.haproxy_login()
            stats_login = None if login is None else Login(settings.haproxy.url, *login)
            haproxy_http = GetOnlyClient(
                timeout=settings.haproxy.timeout, verify=haproxy_tls, login=stats_login
            )
        return cls(settings, clock, patroni_http, haproxy_http)

    def add_probe(self, runner: ProbeRunner) -> None:
        """Run ``runner`` every cycle beside the others (the operator's write probe comes this way)."""
        runner.locate = self.membership.locate
        runner.restless = self.restless
        self._probes.append(runner)

    def restless(self) -> bool:
        """/cluster and probes each cycle: membership restless, HAProxy's routing moved, a view failing."""
        return self.membership.restless() or self._routing_moved() or self._front_failing()

    def _routing_moved(self) -> bool:
        return self._routing_until is not None and self._clock() < self._routing_until

    def _note_routing(self, servers: tuple[HAProxyServer, ...]) -> tuple[HAProxyServer, ...]:
        # A server of a pool going DOWN or UP (a check failing, a failover, a drain) is where an
        # application's next connection may fail: the probes confirm it at once, then every
        # cycle for UNSETTLED_S (as after their own error), not at their next calm probe.
        now = routing(servers)
        if self._routing is not None and now != self._routing:
            self._routing_until = self._clock() + timedelta(seconds=UNSETTLED_S)
        self._routing = now
        return servers

    def _front_failing(self) -> bool:
        # HAProxy or a pooler that stops answering while Patroni is calm is what the probes are
        # there to confirm from the application's side: at once, not at the next calm probe.
        # A refused pooler is never polled (its reading stays "not polled yet"): not unrest.
        if self._haproxy is not None and self._haproxy.reading().error is not None:
            return True
        readers = self._pooler_readers()
        return any(r.refused is None and r.source.reading().error is not None for r in readers)

    # -- sources --------------------------------------------------------------------------------

    def _pooled(self, proxy: str) -> bool:
        return self._pools.kind(proxy) is not None

    async def _read_stats(self, text: str) -> haproxy.StatsPage:
        if len(text) < THREAD_STATS_BYTES:
            page = haproxy.read_stats(text, self._pooled)
        else:
            # A shared HAProxy's page of tens of thousands of rows must not hold up keys.
            page = await asyncio.to_thread(haproxy.read_stats, text, self._pooled)
        self._note_routing(page.servers)
        return page

    async def _fetch_haproxy(self) -> haproxy.StatsPage:
        s = self._settings.haproxy
        errors: list[str] = []
        if s.socket is not None:
            try:
                self.haproxy_requests += 1
                return await self._read_stats(await haproxy.fetch_socket(s.socket))
            except ParseError:
                raise
            except OSError as exc:
                if not s.url:
                    raise
                errors.append(f"socket {s.socket}: {exc.strerror or exc}")
        if s.url and self._haproxy_http is not None:
            self.haproxy_requests += 1
            text = await haproxy.fetch_http(self._haproxy_http, s.url, s.timeout)
            return await self._read_stats(text)
        raise ParseError("haproxy stats: " + ("; ".join(errors) or "not configured"))

    # -- the cycle ------------------------------------------------------------------------------

    async def cycle(self, budget: float | None = None) -> ClusterSnapshot:
        """One concurrent poll of everything; waits at most ``budget`` seconds when given."""
        loop = asyncio.get_running_loop()
        deadline = None if budget is None else loop.time() + budget
        self.cycles += 1
        self.membership.next_cycle()
        pending: set[asyncio.Task[None]] = set()
        retired: list[MemberSources] = []
        cluster_task = None
        if self.membership.cluster is not None:
            # /cluster may have answered after the previous cycle ended: use it first.
            retired += self.membership.take_cluster(self.membership.cluster.reading())
            # Every cycle while anything is unsettled, every patroni.calm_interval while calm:
            # a calm /cluster answers the same each second, and a new TCP connection a second
            # (Patroni's HTTP/1.0 server closes each) was the poller's dearest read.
            cluster_task = self.membership.start_cluster(restless=self.restless())
            if cluster_task is not None:
                pending.add(cluster_task)
        if self._haproxy is not None:
            pending.add(self._haproxy.start())
        if self._pgbackrest is not None and (first := self._pgbackrest.start()) is not None:
            pending.add(first)  # only the first `pgbackrest info` is waited for; later ones run behind
        for runner in self._probes:
            task = runner.start()
            if task is not None:
                pending.add(task)
        for reader in self._pooler_readers():
            if (read := reader.start()) is not None:
                pending.add(read)
        started: set[str] = set()
        restless = self.membership.restless()
        probing = restless or self._front_failing()
        for name, slot in self.membership.members.items():
            pending |= slot.start(own=self.membership.own_due(slot, restless))
            started.add(name)
        while pending:
            remaining = None if deadline is None else max(0.0, deadline - loop.time())
            done, pending = await asyncio.wait(
                pending, timeout=remaining, return_when=asyncio.FIRST_COMPLETED
            )
            if not done:
                break
            self.membership.note_views()
            if cluster_task is None and self.restless():
                # A member's own read just showed something (a role, a timeline, a failure):
                # ask Patroni in this cycle, not at its next calm read.
                cluster_task = self.membership.start_cluster(restless=True)
                if cluster_task is not None:
                    pending.add(cluster_task)
            if not probing and self._probes and self.restless():
                # Something just went wrong (a node, HAProxy or a pooler stopped answering): probe
                # now, in this cycle, not next cycle. A primary Patroni restarts in place is down
                # for a second or two.
                probing = True
                restless = self.membership.restless()  # /patroni cadence: the members' own unrest only
                pending |= {t for r in self._probes if (t := r.start()) is not None and not t.done()}
            if cluster_task is not None and cluster_task in done and self.membership.cluster is not None:
                reading = self.membership.cluster.reading()
                retired += self.membership.take_cluster(reading)
                for name, slot in self.membership.members.items():
                    if name not in started:
                        pending |= slot.start(own=self.membership.own_due(slot, restless))
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

    def _assemble(self) -> ClusterSnapshot:
        now = self._clock()
        errors: list[str] = list(self.membership.refused)
        cluster_reading: Reading[Discovered] | None = None
        live = False
        if self.membership.cluster is not None:
            cluster_reading = self.membership.cluster.reading()
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
        elif not self._settings.nodes and not self.membership.refused:
            if self._haproxy is not None:
                errors.append("Patroni: not configured (give --patroni URL to see members)")
            else:
                errors.append("nothing to poll: give --patroni URL, [[nodes]] in the config or --haproxy")
        members: list[Member] = []
        nodes: list[NodeSnapshot] = []
        for slot in self.membership.members.values():
            if slot.configured and self.membership.unsure(slot):
                continue
            members.append(self._member(slot, live))
            if slot.configured or not self._settings.postgres.enabled:
                continue  # where its PostgreSQL listens is /cluster's to say, or not to be read
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
        reachable = live or self.membership.cluster is None
        info = info.model_copy(update={"name": scope, "reachable": reachable, "slow_s": slow})
        return ClusterSnapshot(
            taken_at=now,
            postgres_read=self._settings.postgres.enabled,
            cluster=info,
            members=tuple(members),
            nodes=tuple(nodes),
            haproxy=self._haproxy_state(members),
            **self._history_news(),
            patroni_config=self.membership.config,
            errors=tuple(errors),
            probes=tuple(runner.probe() for runner in self._probes),
            pgbackrest=self._pgbackrest.state() if self._pgbackrest is not None else None,
            pgbouncer=tuple(bouncer_state(r, self.membership.locate) for r in self._bouncers),
            pgpool=tuple(pgpool_state(r, self.membership.locate) for r in self._pgpools),
        )

    def _history_news(self) -> dict[str, Any]:
        """/history for this snapshot: given when it differs from the last one given, else nothing."""
        read = self.membership.history
        if read is None or read == self._history_given:
            return {}
        self._history_given = read
        return {"history": read.rows, "history_total": read.total}

    def _pooler_readers(self) -> list[PoolerReader[Any]]:
        return [*self._bouncers, *self._pgpools]

    def _own_values(self) -> Iterable[OwnView]:
        for slot in self.membership.members.values():
            if slot.own is not None:
                value = slot.own.reading().value
                if value is not None:
                    yield value

    def _member(self, slot: MemberSources, live: bool) -> Member:
        entry = slot.cluster_entry if live else None
        base = entry or Member(name=self.membership.said(slot) or slot.name)
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
        unlisted = live and entry is None and (slot.gone_since is not None or slot.configured)
        if unlisted:
            why = "configured in [patroni] urls, not listed" if slot.configured else "not listed any more"
            error = f"{why} by Patroni's /cluster" + (f"; {error}" if error else "")
        update.update(
            unlisted=unlisted,
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
                failsafe_active=own.failsafe_active,
                rest_cert_not_after=own.cert_not_after,
                pause=own.pause,
                pending_restart=own.pending_restart or bool(base.pending_restart),
                pending_restart_reason=own.pending_restart_reason,
                malformed=(*base.malformed, *own.malformed)[:MAX_NOTES],
            )
        return base.model_copy(update=update)

    def _haproxy_state(self, members: Iterable[Member]) -> HAProxyState:
        if self._haproxy is None:
            return HAProxyState(error="not configured; give --haproxy URL|SOCKET")
        reading = self._haproxy.reading()
        names = {m.name for m in members}
        page = reading.value or haproxy.StatsPage(())
        servers = joined(page.servers, names, self._settings.haproxy.members, self.membership.locate)
        return HAProxyState(
            servers=servers,
            not_shown=page.not_shown or None,
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
        primed, self._primed = self._primed, None
        self._began = True
        while True:
            started = loop.time()
            period = max(0.05, float(interval()))
            try:
                if primed is not None:
                    first, primed = primed, None
                    snapshot = await first
                else:
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
            # or sooner when a faster cadence is asked meanwhile (hurry(): something went wrong).
            # One timer per pause, not a look every 0.1 s.
            while True:
                left = started + min(period, max(0.05, float(interval()))) - loop.time()
                if self._woken:
                    left = min(left, started + WAKE_GAP_S - loop.time())
                if left <= 0:
                    self._woken = False
                    break
                self._hurried.clear()
                try:
                    async with asyncio.timeout(left):
                        await self._hurried.wait()
                except TimeoutError:
                    pass

    def prime(self) -> None:
        """Begin the first cycle now; the next ``run()`` hands its snapshot over first."""
        # The console calls this before Textual builds the screen: the servers' first answers
        # (a new connection per node, /cluster) then arrive while the screen is being built,
        # instead of after it.
        if not self._began:
            self._began = True
            budget = self._settings.interval * BUDGET_SHARE
            self._primed = asyncio.get_running_loop().create_task(self.cycle(budget=budget))

    def wake(self) -> None:
        """Poll now (at most one cycle per WAKE_GAP_S): a node's connection just closed under us."""
        self._woken = True
        self._hurried.set()

    def hurry(self) -> None:
        """The cadence may have become faster: end the current pause if ``interval()`` says so."""
        self._hurried.set()

    def set_needs(self, needs: Needs) -> None:
        """Do these optional reads (models/needs.py) from now on, e.g. memory only while shown."""
        self.membership.set_needs(needs)
        if self._pgbackrest is not None:
            self._pgbackrest.watched = "pgbackrest" in needs

    def round_trips(self) -> dict[str, int]:
        """PostgreSQL round trips so far, per node (for the benchmark)."""
        return {
            name: slot.node.round_trips
            for name, slot in self.membership.members.items()
            if slot.node is not None
        }

    def last_ok(self) -> dict[str, datetime | None]:
        """When each node's PostgreSQL last answered."""
        return {
            name: slot.node.last_ok_at
            for name, slot in self.membership.members.items()
            if slot.node is not None
        }

    async def aclose(self) -> None:
        """Stop every poll, close every connection and HTTP client."""
        primed, self._primed = self._primed, None
        if primed is not None:  # primed, but the console ended before run() took it
            primed.cancel()
            await asyncio.gather(primed, return_exceptions=True)
        closers = [slot.aclose() for slot in self.membership.members.values()]
        if self.membership.cluster is not None:
            closers.append(self.membership.cluster.aclose())
        if self._haproxy is not None:
            closers.append(self._haproxy.aclose())
        closers.extend(runner.aclose() for runner in self._probes)
        closers.extend(reader.aclose() for reader in self._pooler_readers())
        if self._pgbackrest is not None:
            closers.append(self._pgbackrest.aclose())
        await asyncio.gather(*closers, *self._closing, return_exceptions=True)
        await self._patroni_http.aclose()
        if self._haproxy_http is not None:
            await self._haproxy_http.aclose()
